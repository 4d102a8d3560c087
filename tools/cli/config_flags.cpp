#include "tools/cli/config_flags.hpp"

#include <cstdio>
#include <string_view>
#include <vector>

#include "base/error.hpp"
#include "runtime/loader/model_config.hpp"

namespace hive::cli {

namespace {

struct ConfigFlag {
  const char* flag;
  const char* key;
  const char* unit = "";  // appended to the value: --kv-budget-mb 256 is 256MiB
};

const std::vector<ConfigFlag> kValueFlags = {
    {"--model", "model"},
    {"--device", "device"},
    {"--matmul-precision", "matmul_precision"},
    {"--kv-budget-mb", "kv_cache.memory_budget", "MiB"},
    {"--kv-cache-dtype", "kv_cache.dtype"},
    {"--max-num-seqs", "scheduler.max_num_seqs"},
    {"--max-num-batched-tokens", "scheduler.max_num_batched_tokens"},
    {"--host", "server.host"},
    {"--port", "server.port"},
    {"--api-key", "server.api_key"},
    {"--max-queued-requests", "server.max_queued_requests"},
    {"--max-connections", "server.max_connections"},
    {"--served-model-name", "server.served_model_name"},
};
const std::vector<ConfigFlag> kSwitches = {{"--dequantize", "dequantize"}};

}  // namespace

std::set<std::string> config_value_flags(bool with_server) {
  std::set<std::string> flags;
  for (const ConfigFlag& f : kValueFlags)
    if (with_server || std::string_view(f.key).substr(0, 7) != "server.") flags.insert(f.flag);
  return flags;
}

std::set<std::string> config_switches() {
  std::set<std::string> flags;
  for (const ConfigFlag& f : kSwitches) flags.insert(f.flag);
  return flags;
}

HiveConfig config_from_args(const Args& args, const HiveConfig& fallback) {
  HiveConfig config = args.has("--config") ? load_hive_config(args.get("--config", "")) : fallback;
  for (const ConfigFlag& f : kValueFlags) {
    if (!args.has(f.flag)) continue;
    const std::string source = str_cat("flag ", f.flag);
    if (std::string(f.key) == "kv_cache.memory_budget") {
      // A budget in bytes replaces the file's memory_fraction.
      config.sources.erase("kv_cache.memory_fraction");
    }
    set_config_value(config, f.key, args.get(f.flag, "") + f.unit, source);
  }
  for (const ConfigFlag& f : kSwitches)
    if (args.has(f.flag)) set_config_value(config, f.key, "true", str_cat("flag ", f.flag));
  return config;
}

void print_resolved_config(HiveConfig config) {
  resolve(config, load_model_config(config.model));
  std::fputs(print_config(config).c_str(), stdout);
}

}  // namespace hive::cli
