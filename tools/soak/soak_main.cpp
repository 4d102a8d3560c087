// hive_soak: the soak run (soak.hpp) as a program. Prints a table, writes
// JSON, and exits 1 when a promise broke: a protocol violation, a KV block
// still in use, or resident memory after the run more than 5 % above what
// it was after the first `--checkpoint` requests.
//
//   hive_soak [--model DIR] [--requests N] [--seed S] [--fault-every N]
//             [--kv-budget BYTES] [--json FILE]
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "tools/soak/soak.hpp"

int main(int argc, char** argv) {
  std::string model = std::string(HIVE_SOURCE_DIR) + "/models/hive-draft";
  std::string json_path = "soak.json";
  hive::soak::Options options;
  int64_t kv_budget = int64_t{128} << 10;  // small enough to preempt
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--model") model = value;
    else if (flag == "--requests") options.num_requests = std::stoi(value);
    else if (flag == "--seed") options.seed = std::stoull(value);
    else if (flag == "--fault-every") options.fault_every = std::stoi(value);
    else if (flag == "--kv-budget") kv_budget = std::stoll(value);
    else if (flag == "--checkpoint") options.checkpoint = std::stoi(value);
    else if (flag == "--json") json_path = value;
    else {
      std::cerr << "hive_soak: unknown flag " << flag << "\n";
      return 2;
    }
  }
  try {
    hive::Engine engine(hive::soak::engine_options(model, kv_budget));
    const hive::soak::Report r = hive::soak::run(engine, options);
    engine.shutdown();
    const double growth = r.rss_checkpoint_kib > 0
                              ? static_cast<double>(r.rss_end_kib) / r.rss_checkpoint_kib - 1.0
                              : 0.0;
    std::printf("| requests | finished | failed | cancelled | dropped | faults | preemptions |"
                " violations | blocks in use | RSS @%d (KiB) | RSS end (KiB) | growth | s |\n",
                options.checkpoint);
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    std::printf("| %lld | %lld | %lld | %lld | %lld | %lld | %lld | %lld | %lld | %lld | %lld |"
                " %+.2f %% | %.1f |\n",
                static_cast<long long>(r.requests), static_cast<long long>(r.finished),
                static_cast<long long>(r.failed), static_cast<long long>(r.cancelled),
                static_cast<long long>(r.dropped), static_cast<long long>(r.faults),
                static_cast<long long>(r.preemptions), static_cast<long long>(r.violations),
                static_cast<long long>(r.blocks_in_use), static_cast<long long>(r.rss_checkpoint_kib),
                static_cast<long long>(r.rss_end_kib), growth * 100.0, r.seconds);
    if (!r.first_violation.empty()) std::printf("first violation: %s\n", r.first_violation.c_str());
    std::ofstream(json_path) << nlohmann::json{
        {"requests", r.requests},       {"finished", r.finished},
        {"failed", r.failed},           {"cancelled", r.cancelled},
        {"dropped", r.dropped},         {"faults", r.faults},
        {"preemptions", r.preemptions}, {"violations", r.violations},
        {"blocks_in_use", r.blocks_in_use}, {"rss_checkpoint_kib", r.rss_checkpoint_kib},
        {"rss_end_kib", r.rss_end_kib}, {"rss_growth", growth},
        {"generated_tokens", r.generated_tokens}, {"seconds", r.seconds}}
                                   .dump(2)
                              << "\n";
    const bool ok = r.violations == 0 && r.blocks_in_use == 0 && growth <= 0.05;
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "hive_soak: error: " << e.what() << "\n";
    return 1;
  }
}
