// KV-cache memory: paged blocks against contiguous max-length allocation.
//
//   bench_kv_memory [--model DIR] [--budget-gb G] [--max-model-len L]
//                   [--block-size B] [--kv-bytes 2|4] [--json FILE]
//
// (a) How many sequences of a realistic length mix fit in one KV budget, and
//     how many slots each wastes: contiguous allocation reserves max_model_len
//     slots per sequence, paged allocation rounds up to whole blocks. The
//     paged side runs the real KVCacheManager until it refuses.
// (b) 50 requests sharing a 4,000-token system prompt: blocks in use with
//     prefix caching (the prompt's blocks are shared) and without.
// (c) The KV cache dtypes (--kv-cache-dtype): blocks and tokens the budget
//     buys at each, as the engine sizes its pool (kv_bytes_per_block: int8
//     and fp8 rows carry their f32 scale), against bf16.
//
// Pure bookkeeping (no model runs), so the numbers are exact and repeatable;
// the byte figures use the model's KV bytes per token at --kv-bytes.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "runtime/core/kv_cache_manager.hpp"
#include "runtime/loader/model_config.hpp"
#include "runtime/model/kv_budget.hpp"

namespace {

std::string flag(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == name) return argv[i + 1];
  return fallback;
}

// Llama-3-8B's attention shape when no --model is given.
hive::ModelConfig default_config() {
  hive::ModelConfig c;
  c.num_layers = 32;
  c.num_kv_heads = 8;
  c.head_dim = 128;
  return c;
}

// A ShareGPT-like mix: log-normal prompt and output lengths (medians 200 and
// 250 tokens), fixed seed, each total clipped to max_model_len.
std::vector<int64_t> length_mix(size_t count, int64_t max_model_len) {
  std::mt19937_64 rng(2024);
  std::lognormal_distribution<double> prompt(std::log(200.0), 0.9), output(std::log(250.0), 0.8);
  std::vector<int64_t> lengths(count);
  for (int64_t& len : lengths) {
    const auto total = static_cast<int64_t>(prompt(rng) + output(rng));
    len = std::clamp<int64_t>(total, 1, max_model_len);
  }
  return lengths;
}

std::shared_ptr<hive::Request> request_of(std::vector<int32_t> tokens) {
  auto r = std::make_shared<hive::Request>();
  r->id = "r";
  r->prompt_token_ids = std::move(tokens);
  return r;
}

struct Fit {
  int64_t sequences = 0;
  double waste_tokens = 0;  // mean per sequence
  double waste_fraction = 0;
};

Fit fit_paged(const std::vector<int64_t>& lengths, int32_t num_blocks, int32_t block_size) {
  hive::KVCacheConfig config;
  config.block_size = block_size;
  config.num_device_blocks = num_blocks + 1;  // + the null block
  hive::KVCacheManager kv(config);
  Fit fit;
  int64_t used_tokens = 0;
  for (const int64_t len : lengths) {
    hive::Sequence seq(fit.sequences, request_of(std::vector<int32_t>(static_cast<size_t>(len), 1)),
                       fit.sequences);
    if (!kv.can_allocate(seq, len)) break;
    kv.allocate(seq, len);
    used_tokens += len;
    ++fit.sequences;
  }
  const int64_t held =
      kv.device_pool().num_allocatable_blocks() - kv.device_pool().num_free_blocks();
  const int64_t reserved = held * block_size;
  fit.waste_tokens =
      static_cast<double>(reserved - used_tokens) / static_cast<double>(fit.sequences);
  fit.waste_fraction = static_cast<double>(reserved - used_tokens) / static_cast<double>(reserved);
  return fit;
}

Fit fit_contiguous(const std::vector<int64_t>& lengths, int64_t budget_tokens,
                   int64_t max_model_len) {
  Fit fit;
  fit.sequences =
      std::min<int64_t>(budget_tokens / max_model_len, static_cast<int64_t>(lengths.size()));
  int64_t used = 0;
  for (int64_t i = 0; i < fit.sequences; ++i) used += lengths[static_cast<size_t>(i)];
  const int64_t reserved = fit.sequences * max_model_len;
  fit.waste_tokens = static_cast<double>(reserved - used) / static_cast<double>(fit.sequences);
  fit.waste_fraction = static_cast<double>(reserved - used) / static_cast<double>(reserved);
  return fit;
}

struct Sharing {
  int64_t blocks_shared = 0, blocks_unshared = 0;
};

// 50 requests: the same system prompt, then each its own user turn.
Sharing share_system_prompt(int64_t system_len, int64_t user_len, int requests,
                            int32_t block_size) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> token(3, 30000);
  std::vector<int32_t> system(static_cast<size_t>(system_len));
  for (int32_t& t : system) t = token(rng);
  hive::KVCacheConfig config;
  config.block_size = block_size;
  config.num_device_blocks = 1 << 20;
  config.enable_prefix_caching = true;
  hive::KVCacheManager kv(config);
  std::vector<std::unique_ptr<hive::Sequence>> sequences;
  for (int i = 0; i < requests; ++i) {
    std::vector<int32_t> prompt = system;
    for (int64_t k = 0; k < user_len; ++k) prompt.push_back(token(rng));
    sequences.push_back(std::make_unique<hive::Sequence>(i, request_of(prompt), i));
    hive::Sequence& seq = *sequences.back();
    const hive::PrefixHit hit = kv.find_cached_prefix(seq);
    kv.allocate(seq, seq.num_tokens() - hit.num_tokens, hit);
  }
  Sharing s;
  s.blocks_shared = kv.device_pool().num_allocatable_blocks() - kv.device_pool().num_free_blocks();
  const int64_t per_request = (system_len + user_len + block_size - 1) / block_size;
  s.blocks_unshared = per_request * requests;
  return s;
}

// (a): prints the table and returns its JSON.
nlohmann::json report_fit(const hive::ModelConfig& config, int64_t kv_bytes, double budget_gb,
                          int64_t max_model_len, int32_t block_size) {
  const int64_t bytes_per_token = config.kv_bytes_per_token(kv_bytes);
  const auto budget_bytes = static_cast<int64_t>(budget_gb * (1LL << 30));
  const int64_t budget_tokens = budget_bytes / bytes_per_token;
  const std::vector<int64_t> lengths = length_mix(200000, max_model_len);
  const Fit contiguous = fit_contiguous(lengths, budget_tokens, max_model_len);
  const Fit paged =
      fit_paged(lengths, static_cast<int32_t>(budget_tokens / block_size), block_size);
  double mean_len = 0;
  for (int64_t i = 0; i < paged.sequences; ++i)
    mean_len += static_cast<double>(lengths[static_cast<size_t>(i)]);
  mean_len /= static_cast<double>(paged.sequences);

  std::printf(
      "(a) KV budget %.1f GiB, %lld bytes/token (%lld layers x %lld kv heads x %lld dims x "
      "%lld B x 2), max_model_len %lld, block_size %d, mean sequence %.0f tokens\n\n",
      budget_gb, static_cast<long long>(bytes_per_token), static_cast<long long>(config.num_layers),
      static_cast<long long>(config.num_kv_heads), static_cast<long long>(config.head_dim),
      static_cast<long long>(kv_bytes), static_cast<long long>(max_model_len), block_size,
      mean_len);
  std::printf(
      "| allocation | sequences that fit | waste per sequence (tokens) | waste of reserved KV |\n");
  std::printf("|---|---|---|---|\n");
  std::printf("| contiguous, max_model_len each | %lld | %.0f | %.1f %% |\n",
              static_cast<long long>(contiguous.sequences), contiguous.waste_tokens,
              100 * contiguous.waste_fraction);
  std::printf("| paged, %d-token blocks | %lld | %.1f | %.2f %% |\n", block_size,
              static_cast<long long>(paged.sequences), paged.waste_tokens,
              100 * paged.waste_fraction);
  std::printf("\npaged fits %.1fx as many sequences\n\n",
              static_cast<double>(paged.sequences) / static_cast<double>(contiguous.sequences));
  const auto fit_json = [](const Fit& f) {
    return nlohmann::json{{"sequences", f.sequences},
                          {"waste_tokens_per_sequence", f.waste_tokens},
                          {"waste_fraction", f.waste_fraction}};
  };
  return {{"kv_bytes_per_token", bytes_per_token},
          {"budget_bytes", budget_bytes},
          {"max_model_len", max_model_len},
          {"block_size", block_size},
          {"mean_sequence_tokens", mean_len},
          {"contiguous", fit_json(contiguous)},
          {"paged", fit_json(paged)}};
}

// (b): prints the table and returns its JSON.
nlohmann::json report_sharing(int64_t bytes_per_token, int32_t block_size) {
  const int64_t system_len = 4000;
  const int requests = 50;
  std::printf("(b) %d requests sharing a %lld-token system prompt, block_size %d\n\n", requests,
              static_cast<long long>(system_len), block_size);
  std::printf(
      "| user turn per request | blocks without sharing | blocks with prefix caching | "
      "KV bytes without | KV bytes with | saved |\n");
  std::printf("|---|---|---|---|---|---|\n");
  nlohmann::json out = {{"requests", requests}, {"system_tokens", system_len}, {"cases", {}}};
  for (const int64_t user_len : {0, 100}) {
    const Sharing s = share_system_prompt(system_len, user_len, requests, block_size);
    const double saved =
        1.0 - static_cast<double>(s.blocks_shared) / static_cast<double>(s.blocks_unshared);
    const auto gib = [&](int64_t blocks) {
      return static_cast<double>(blocks * block_size * bytes_per_token) / (1 << 30);
    };
    std::printf("| %lld tokens | %lld | %lld | %.2f GiB | %.2f GiB | %.1f %% |\n",
                static_cast<long long>(user_len), static_cast<long long>(s.blocks_unshared),
                static_cast<long long>(s.blocks_shared), gib(s.blocks_unshared),
                gib(s.blocks_shared), 100 * saved);
    out["cases"].push_back({{"user_tokens", user_len},
                            {"blocks_unshared", s.blocks_unshared},
                            {"blocks_shared", s.blocks_shared},
                            {"saved_fraction", saved}});
  }
  return out;
}

// (c): prints the table and returns its JSON.
nlohmann::json report_dtypes(const hive::ModelConfig& config, double budget_gb,
                             int32_t block_size) {
  const auto budget_bytes = static_cast<int64_t>(budget_gb * (1 << 30));
  std::printf("(c) KV cache dtypes, KV budget %.1f GiB, block_size %d\n\n", budget_gb, block_size);
  std::printf("| --kv-cache-dtype | bytes per block | blocks | tokens | tokens vs bf16 |\n");
  std::printf("|---|---|---|---|---|\n");
  const int64_t bf16_blocks = hive::num_kv_blocks(
      budget_bytes, hive::kv_bytes_per_block(config, block_size, hive::DType::bf16));
  nlohmann::json out = nlohmann::json::array();
  for (const char* name : {"f32", "bf16", "int8", "fp8"}) {
    const hive::DType dtype = hive::parse_kv_cache_dtype(name, "dtype");
    const int64_t block_bytes = hive::kv_bytes_per_block(config, block_size, dtype);
    const int64_t blocks = hive::num_kv_blocks(budget_bytes, block_bytes);
    const double ratio = static_cast<double>(blocks) / static_cast<double>(bf16_blocks);
    std::printf("| %s | %lld | %lld | %lld | %.2fx |\n", name, static_cast<long long>(block_bytes),
                static_cast<long long>(blocks), static_cast<long long>(blocks * block_size), ratio);
    out.push_back({{"dtype", name},
                   {"bytes_per_block", block_bytes},
                   {"blocks", blocks},
                   {"tokens", blocks * block_size},
                   {"tokens_vs_bf16", ratio}});
  }
  std::printf("\n");
  return out;
}

}  // namespace

int main(int argc, char** argv) try {
  const std::string model_dir = flag(argc, argv, "--model", "");
  const hive::ModelConfig config =
      model_dir.empty() ? default_config() : hive::load_model_config(model_dir);
  const double budget_gb = std::stod(flag(argc, argv, "--budget-gb", "16"));
  const int64_t max_model_len = std::stoll(flag(argc, argv, "--max-model-len", "4096"));
  const auto block_size = static_cast<int32_t>(std::stoi(flag(argc, argv, "--block-size", "16")));
  const int64_t kv_bytes = std::stoll(flag(argc, argv, "--kv-bytes", "2"));
  const std::string json_path = flag(argc, argv, "--json", "");
  nlohmann::json out = report_fit(config, kv_bytes, budget_gb, max_model_len, block_size);
  out["shared_system_prompt"] = report_sharing(config.kv_bytes_per_token(kv_bytes), block_size);
  out["kv_cache_dtypes"] = report_dtypes(config, budget_gb, block_size);
  if (!json_path.empty()) std::ofstream(json_path) << out.dump(2) << "\n";
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_kv_memory: error: %s\n", e.what());
  return 1;
}
