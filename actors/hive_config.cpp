#include "actors/hive_config.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "base/error.hpp"

namespace hive {

namespace {

// One value's text (a YAML node, or a flag's value as a scalar node),
// checked and converted; errors start with where it came from.
struct Reader {
  std::string source;  // "test.yaml", or "flag --port"
  bool flag = false;

  std::string at(const YAML::Node& node) const {
    const YAML::Mark mark = node.Mark();
    return mark.line >= 0 ? str_cat(source, ":", mark.line + 1, ": ") : str_cat(source, ": ");
  }
  std::string scalar(const YAML::Node& node, const std::string& key, const char* expected) const {
    check(node.IsScalar(), at(node), key, ": expected ", expected, " (got a ",
          node.IsMap()        ? "mapping"
          : node.IsSequence() ? "list"
                              : "null",
          ")");
    return node.Scalar();
  }
  // A number or a boolean must be written plainly: a quoted "80" is a string.
  std::string plain(const YAML::Node& node, const std::string& key, const char* expected) const {
    std::string text = scalar(node, key, expected);
    check(node.Tag() != "!", at(node), key, ": expected ", expected, " (got the quoted string '",
          text, "')");
    return text;
  }
  int64_t integer(const YAML::Node& node, const std::string& key, int64_t min, int64_t max) const {
    const std::string text = plain(node, key, "an integer");
    int64_t value = 0;
    std::istringstream in(text);
    check(static_cast<bool>(in >> value) && in.eof(), at(node), key, ": expected an integer (got '",
          text, "')");
    check(value >= min && value <= max, at(node), key, ": must be in [", min, ", ", max, "] (got ",
          value, ")");
    return value;
  }
  double number(const YAML::Node& node, const std::string& key, double min, double max) const {
    const std::string text = plain(node, key, "a number");
    double value = 0;
    std::istringstream in(text);
    check(static_cast<bool>(in >> value) && in.eof() && std::isfinite(value), at(node), key,
          ": expected a number (got '", text, "')");
    check(value >= min && value <= max, at(node), key, ": must be in [", min, ", ", max, "] (got ",
          value, ")");
    return value;
  }
  bool boolean(const YAML::Node& node, const std::string& key) const {
    const std::string text = plain(node, key, "true or false");
    if (text == "true") return true;
    if (text == "false") return false;
    fail(at(node), key, ": expected true or false (got '", text, "')");
  }
  template <class E>
  E choice(const YAML::Node& node, const std::string& key,
           const std::vector<std::pair<const char*, E>>& options) const {
    const std::string text = scalar(node, key, "a string");
    std::string listed;
    for (const auto& [name, value] : options) {
      if (text == name) return value;
      listed += str_cat(listed.empty() ? "" : ", ", name);
    }
    fail(at(node), key, ": expected one of ", listed, " (got '", text, "')");
  }
  int64_t duration_ms(const YAML::Node& node, const std::string& key) const {
    const std::string text = scalar(node, key, "a duration");
    const auto value = parse_duration_ms(text);
    check(value.has_value() && *value > 0, at(node), key,
          ": expected a positive duration such as 500ms, 60s or 10min (got '", text, "')");
    return *value;
  }
  int64_t bytes(const YAML::Node& node, const std::string& key) const {
    const std::string text = scalar(node, key, "a size");
    const auto value = parse_byte_size(text);
    check(value.has_value() && *value > 0, at(node), key,
          ": expected a positive size such as 512MiB or 2GiB (got '", text, "')");
    return *value;
  }
  std::filesystem::path path(const YAML::Node& node, const std::string& key,
                             const std::filesystem::path& base_dir) const {
    const std::filesystem::path p = scalar(node, key, "a path");
    check(!p.empty(), at(node), key, ": expected a path (got an empty string)");
    return p.is_absolute() ? p : (base_dir / p).lexically_normal();
  }
};

// The names of the enumerated values, for reading and for printing.
template <class E>
using Names = std::vector<std::pair<const char*, E>>;
const Names<DeviceChoice> kDevices = {
    {"auto", DeviceChoice::automatic}, {"cpu", DeviceChoice::cpu}, {"cuda", DeviceChoice::cuda}};
const Names<cpu::MatmulPrecision> kPrecisions = {{"f32", cpu::MatmulPrecision::f32},
                                                 {"bf16", cpu::MatmulPrecision::bf16}};
const Names<RankTransport> kTransports = {{"in_process", RankTransport::in_process},
                                          {"mpi", RankTransport::mpi},
                                          {"nccl", RankTransport::nccl}};
const Names<PlacementKind> kPlacements = {{"contiguous", PlacementKind::contiguous},
                                          {"round_robin", PlacementKind::round_robin}};
const Names<DType> kCacheDTypes = {
    {"f32", DType::f32}, {"bf16", DType::bf16}, {"int8", DType::i8}, {"fp8", DType::f8_e4m3}};
const Names<SchedulingPolicy> kPolicies = {{"fcfs", SchedulingPolicy::fcfs},
                                           {"priority", SchedulingPolicy::priority}};
const Names<PreemptionMode> kPreemptionModes = {{"by_cost", PreemptionMode::by_cost},
                                                {"recompute", PreemptionMode::recompute},
                                                {"swap", PreemptionMode::swap}};
const Names<SpeculativeMethod> kMethods = {{"ngram", SpeculativeMethod::ngram},
                                           {"draft_model", SpeculativeMethod::draft_model}};

template <class E>
std::string name_of(const Names<E>& names, E value) {
  for (const auto& [name, v] : names)
    if (v == value) return name;
  return "?";
}

// A value as a launch file writes it.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (static_cast<unsigned char>(c) < 0x20) {
      static const char* kHex = "0123456789ABCDEF";
      out += str_cat("\\x", kHex[c >> 4], kHex[c & 15]);
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}
// Absolute, so that the printed file means the same wherever it is saved.
std::string printed_path(const std::filesystem::path& path) {
  return std::filesystem::absolute(path).lexically_normal().string();
}
std::string boolean_text(bool value) {
  return value ? "true" : "false";
}
std::string number_text(double value) {
  char buffer[32];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, end);
}
std::string bytes_text(int64_t bytes) {
  for (const auto& [unit, size] :
       {std::pair{"GiB", int64_t{1} << 30}, std::pair{"MiB", int64_t{1} << 20},
        std::pair{"KiB", int64_t{1} << 10}})
    if (bytes % size == 0) return str_cat(bytes / size, unit);
  return std::to_string(bytes);
}
std::string duration_text(int64_t ms) {
  for (const auto& [unit, size] : {std::pair{"h", int64_t{3600000}},
                                   std::pair{"min", int64_t{60000}}, std::pair{"s", int64_t{1000}}})
    if (ms % size == 0) return str_cat(ms / size, unit);
  return str_cat(ms, "ms");
}

struct Value {
  const YAML::Node& node;
  const std::string& key;
  const Reader& r;
  const std::filesystem::path& base_dir;
};

// One key of the tree: how to read its text into the tree, and how to print
// it back (nullopt: not printed, e.g. an unset optional).
struct KeySpec {
  const char* name;
  std::function<void(HiveConfig&, const Value&)> read;
  std::function<std::optional<std::string>(const HiveConfig&)> print;
};

int to_int(int64_t value) {
  return static_cast<int>(value);
}

// Every key, in the order print_config writes them.
const std::vector<KeySpec>& keys() {
  using C = HiveConfig;
  using V = Value;
  static const std::vector<KeySpec> table = {
      {"model", [](C& c, const V& v) { c.model = v.r.path(v.node, v.key, v.base_dir); },
       [](const C& c) { return quoted(printed_path(c.model)); }},
      {"device", [](C& c, const V& v) { c.device = v.r.choice(v.node, v.key, kDevices); },
       [](const C& c) { return name_of(kDevices, c.device); }},
      {"dequantize", [](C& c, const V& v) { c.dequantize = v.r.boolean(v.node, v.key); },
       [](const C& c) { return boolean_text(c.dequantize); }},
      {"matmul_precision",
       [](C& c, const V& v) { c.matmul_precision = v.r.choice(v.node, v.key, kPrecisions); },
       [](const C& c) -> std::optional<std::string> {
         if (!c.matmul_precision) return std::nullopt;
         return name_of(kPrecisions, *c.matmul_precision);
       }},
      {"parallel.world_size",
       [](C& c, const V& v) {
         c.parallel.world_size = to_int(v.r.integer(v.node, v.key, 1, 1024));
       },
       [](const C& c) { return std::to_string(c.parallel.world_size); }},
      {"parallel.transport",
       [](C& c, const V& v) {
         const RankTransport t = v.r.choice(v.node, v.key, kTransports);
#ifndef HIVE_HAVE_MPI
         // NCCL's processes need MPI too: it hands them rank 0's unique id.
         check(t == RankTransport::in_process, v.r.at(v.node), v.key, ": ", name_of(kTransports, t),
               ": this Hive was built without MPI (-DHIVE_MPI=OFF)");
#endif
#ifndef HIVE_HAVE_CUDA
         check(t != RankTransport::nccl, v.r.at(v.node), v.key,
               ": nccl: this Hive was built without CUDA (it needs nvcc, cuBLAS and NCCL at "
               "build time)");
#endif
         c.parallel.transport = t;
       },
       [](const C& c) { return name_of(kTransports, c.parallel.transport); }},
      {"parallel.expert_parallel_size",
       [](C& c, const V& v) {
         c.parallel.expert_parallel_size = to_int(v.r.integer(v.node, v.key, 1, 1024));
       },
       [](const C& c) -> std::optional<std::string> {
         if (c.parallel.expert_parallel_size == 0) return std::nullopt;  // not yet resolved
         return std::to_string(c.parallel.expert_parallel_size);
       }},
      {"parallel.tensor_parallel_size",
       [](C& c, const V& v) {
         c.parallel.tensor_parallel_size = to_int(v.r.integer(v.node, v.key, 1, 1024));
       },
       [](const C& c) { return std::to_string(c.parallel.tensor_parallel_size); }},
      {"parallel.expert_placement",
       [](C& c, const V& v) {
         c.parallel.expert_placement = v.r.choice(v.node, v.key, kPlacements);
       },
       [](const C& c) { return name_of(kPlacements, c.parallel.expert_placement); }},
      {"parallel.replicate_hot_experts",
       [](C& c, const V& v) {
         c.parallel.replicate_hot_experts = to_int(v.r.integer(v.node, v.key, 0, 1024));
       },
       [](const C& c) { return std::to_string(c.parallel.replicate_hot_experts); }},
      {"parallel.rebalance_period_steps",
       [](C& c, const V& v) {
         c.parallel.rebalance_experts.period_steps = to_int(v.r.integer(v.node, v.key, 0, 1 << 20));
       },
       [](const C& c) { return std::to_string(c.parallel.rebalance_experts.period_steps); }},
      {"parallel.rebalance_window_steps",
       [](C& c, const V& v) {
         c.parallel.rebalance_experts.window_steps = to_int(v.r.integer(v.node, v.key, 1, 1 << 20));
       },
       [](const C& c) { return std::to_string(c.parallel.rebalance_experts.window_steps); }},
      {"parallel.replica_slots_per_rank",
       [](C& c, const V& v) {
         c.parallel.rebalance_experts.slots_per_rank = to_int(v.r.integer(v.node, v.key, 0, 1024));
       },
       [](const C& c) { return std::to_string(c.parallel.rebalance_experts.slots_per_rank); }},
      {"parallel.rebalance_threshold",
       [](C& c, const V& v) {
         c.parallel.rebalance_experts.threshold = v.r.number(v.node, v.key, 1.0, 100.0);
       },
       [](const C& c) { return number_text(c.parallel.rebalance_experts.threshold); }},
      {"kv_cache.block_size",
       [](C& c, const V& v) { c.engine.block_size = to_int(v.r.integer(v.node, v.key, 1, 1024)); },
       [](const C& c) { return std::to_string(c.engine.block_size); }},
      {"kv_cache.memory_budget",
       [](C& c, const V& v) { c.engine.kv_budget.bytes = v.r.bytes(v.node, v.key); },
       [](const C& c) -> std::optional<std::string> {
         if (c.engine.kv_budget.bytes == 0) return std::nullopt;  // memory_fraction instead
         return bytes_text(c.engine.kv_budget.bytes);
       }},
      {"kv_cache.memory_fraction",
       [](C& c, const V& v) {
         c.engine.kv_budget.memory_fraction = v.r.number(v.node, v.key, 0.01, 1.0);
       },
       [](const C& c) -> std::optional<std::string> {
         if (c.engine.kv_budget.bytes > 0) return std::nullopt;  // a budget in bytes wins
         return number_text(c.engine.kv_budget.memory_fraction);
       }},
      {"kv_cache.dtype",
       [](C& c, const V& v) { c.engine.kv_cache_dtype = v.r.choice(v.node, v.key, kCacheDTypes); },
       [](const C& c) { return name_of(kCacheDTypes, c.engine.kv_cache_dtype); }},
      {"kv_cache.enable_prefix_caching",
       [](C& c, const V& v) { c.engine.enable_prefix_caching = v.r.boolean(v.node, v.key); },
       [](const C& c) { return boolean_text(c.engine.enable_prefix_caching); }},
      {"kv_cache.swap_space",
       [](C& c, const V& v) { c.engine.swap_space_bytes = v.r.bytes(v.node, v.key); },
       [](const C& c) -> std::optional<std::string> {
         if (c.engine.swap_space_bytes == 0) return std::nullopt;  // a size must be positive
         return bytes_text(c.engine.swap_space_bytes);
       }},
      {"scheduler.max_num_seqs",
       [](C& c, const V& v) {
         c.engine.scheduler.max_num_seqs = v.r.integer(v.node, v.key, 1, 1 << 20);
       },
       [](const C& c) { return std::to_string(c.engine.scheduler.max_num_seqs); }},
      {"scheduler.max_num_batched_tokens",
       [](C& c, const V& v) {
         c.engine.scheduler.max_num_batched_tokens = v.r.integer(v.node, v.key, 1, 1 << 24);
       },
       [](const C& c) { return std::to_string(c.engine.scheduler.max_num_batched_tokens); }},
      {"scheduler.max_model_len",
       [](C& c, const V& v) {
         c.engine.scheduler.max_model_len = v.r.integer(v.node, v.key, 1, int64_t{1} << 40);
       },
       [](const C& c) -> std::optional<std::string> {
         if (c.engine.scheduler.max_model_len == 0) return std::nullopt;  // not yet resolved
         return std::to_string(c.engine.scheduler.max_model_len);
       }},
      {"scheduler.enable_chunked_prefill",
       [](C& c, const V& v) {
         c.engine.scheduler.enable_chunked_prefill = v.r.boolean(v.node, v.key);
       },
       [](const C& c) { return boolean_text(c.engine.scheduler.enable_chunked_prefill); }},
      {"scheduler.async_scheduling",
       [](C& c, const V& v) { c.engine.scheduler.async_scheduling = v.r.boolean(v.node, v.key); },
       [](const C& c) { return boolean_text(c.engine.scheduler.async_scheduling); }},
      {"scheduler.policy",
       [](C& c, const V& v) { c.engine.scheduler.policy = v.r.choice(v.node, v.key, kPolicies); },
       [](const C& c) { return name_of(kPolicies, c.engine.scheduler.policy); }},
      {"scheduler.preemption_mode",
       [](C& c, const V& v) {
         c.engine.scheduler.preemption_mode = v.r.choice(v.node, v.key, kPreemptionModes);
       },
       [](const C& c) { return name_of(kPreemptionModes, c.engine.scheduler.preemption_mode); }},
      {"scheduler.worker_timeout",
       [](C& c, const V& v) {
         c.engine.scheduler.worker_timeout =
             std::chrono::milliseconds(v.r.duration_ms(v.node, v.key));
       },
       [](const C& c) { return duration_text(c.engine.scheduler.worker_timeout.count()); }},
      {"scheduler.worker_start_timeout",
       [](C& c, const V& v) {
         c.engine.scheduler.worker_start_timeout =
             std::chrono::milliseconds(v.r.duration_ms(v.node, v.key));
       },
       [](const C& c) { return duration_text(c.engine.scheduler.worker_start_timeout.count()); }},
      {"server.host",
       [](C& c, const V& v) {
         c.server.host = v.r.scalar(v.node, v.key, "a host name or address");
       },
       [](const C& c) { return quoted(c.server.host); }},
      {"server.port",
       // A flag may ask for port 0, any free port (tests, scripts); a file
       // names the port clients are told.
       [](C& c, const V& v) {
         c.server.port = to_int(v.r.integer(v.node, v.key, v.r.flag ? 0 : 1, 65535));
       },
       [](const C& c) { return std::to_string(c.server.port); }},
      {"server.api_key",
       [](C& c, const V& v) { c.server.api_key = v.r.scalar(v.node, v.key, "a string"); },
       [](const C& c) -> std::optional<std::string> {
         if (!c.server.api_key.empty()) return std::nullopt;  // a secret is not printed
         return quoted("");
       }},
      {"server.max_queued_requests",
       [](C& c, const V& v) {
         c.server.max_queued_requests = v.r.integer(v.node, v.key, 1, int64_t{1} << 20);
       },
       [](const C& c) { return std::to_string(c.server.max_queued_requests); }},
      {"server.max_connections",
       [](C& c, const V& v) {
         c.server.max_connections = v.r.integer(v.node, v.key, 1, int64_t{1} << 20);
       },
       [](const C& c) { return std::to_string(c.server.max_connections); }},
      {"server.served_model_name",
       [](C& c, const V& v) {
         c.server.served_model_name = v.r.scalar(v.node, v.key, "a model name");
       },
       [](const C& c) { return quoted(c.server.served_model_name); }},
      // The speculative section is printed only when a method is on.
      {"speculative.method",
       [](C& c, const V& v) { c.engine.speculative.method = v.r.choice(v.node, v.key, kMethods); },
       [](const C& c) -> std::optional<std::string> {
         if (!c.engine.speculative.enabled()) return std::nullopt;
         return name_of(kMethods, c.engine.speculative.method);
       }},
      {"speculative.draft_model",
       [](C& c, const V& v) {
         c.engine.speculative.draft_model = v.r.path(v.node, v.key, v.base_dir);
       },
       [](const C& c) -> std::optional<std::string> {
         if (c.engine.speculative.method != SpeculativeMethod::draft_model) return std::nullopt;
         return quoted(printed_path(c.engine.speculative.draft_model));
       }},
      {"speculative.num_speculative_tokens",
       [](C& c, const V& v) {
         c.engine.speculative.num_speculative_tokens =
             to_int(v.r.integer(v.node, v.key, 1, kMaxSpeculativeTokens));
       },
       [](const C& c) -> std::optional<std::string> {
         if (!c.engine.speculative.enabled()) return std::nullopt;
         return std::to_string(c.engine.speculative.num_speculative_tokens);
       }},
      {"speculative.adaptive",
       [](C& c, const V& v) { c.engine.speculative.adaptive = v.r.boolean(v.node, v.key); },
       [](const C& c) -> std::optional<std::string> {
         if (!c.engine.speculative.enabled()) return std::nullopt;
         return boolean_text(c.engine.speculative.adaptive);
       }},
      {"speculative.ngram.min_n",
       [](C& c, const V& v) {
         c.engine.speculative.ngram.min_n = to_int(v.r.integer(v.node, v.key, 1, 16));
       },
       [](const C& c) -> std::optional<std::string> {
         if (c.engine.speculative.method != SpeculativeMethod::ngram) return std::nullopt;
         return std::to_string(c.engine.speculative.ngram.min_n);
       }},
      {"speculative.ngram.max_n",
       [](C& c, const V& v) {
         c.engine.speculative.ngram.max_n = to_int(v.r.integer(v.node, v.key, 1, 16));
       },
       [](const C& c) -> std::optional<std::string> {
         if (c.engine.speculative.method != SpeculativeMethod::ngram) return std::nullopt;
         return std::to_string(c.engine.speculative.ngram.max_n);
       }},
  };
  return table;
}

const KeySpec* find_key(const std::string& name) {
  for (const KeySpec& spec : keys())
    if (name == spec.name) return &spec;
  return nullptr;
}

// The section a key is in ("" for the top level).
std::string section_of(const std::string& key) {
  const size_t dot = key.rfind('.');
  return dot == std::string::npos ? "" : key.substr(0, dot);
}

bool is_section(const std::string& name) {
  for (const KeySpec& spec : keys())
    if (std::string(spec.name).rfind(name + ".", 0) == 0) return true;
  return false;
}

// The names a section accepts, keys and sections, for an unknown key's error.
std::string names_in(const std::string& section) {
  std::set<std::string> names;
  for (const KeySpec& spec : keys()) {
    const std::string name = spec.name;
    if (section.empty() ? true : name.rfind(section + ".", 0) == 0) {
      const std::string rest = section.empty() ? name : name.substr(section.size() + 1);
      names.insert(rest.substr(0, rest.find('.')));
    }
  }
  std::string listed;
  for (const std::string& name : names) listed += (listed.empty() ? "" : ", ") + name;
  return listed;
}

}  // namespace

std::optional<int64_t> parse_duration_ms(const std::string& text) {
  static const std::map<std::string, int64_t> units = {
      {"ms", 1}, {"s", 1000}, {"min", 60000}, {"h", 3600000}};
  const size_t digits = text.find_first_not_of("0123456789");
  if (digits == 0 || digits == std::string::npos) return std::nullopt;  // a unit is required
  const auto unit = units.find(text.substr(digits));
  int64_t count = 0, ms = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + digits, count);
  if (unit == units.end() || error != std::errc() ||
      __builtin_mul_overflow(count, unit->second, &ms))
    return std::nullopt;
  return ms;
}

std::optional<int64_t> parse_byte_size(const std::string& text) {
  static const std::map<std::string, double> units = {
      {"", 1},     {"B", 1},        {"KB", 1e3},        {"MB", 1e6},
      {"GB", 1e9}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}};
  // Decimal digits with an optional fraction, then the unit: no sign, space,
  // exponent or hexadecimal, which std::stod would also take.
  const std::string number = text.substr(0, text.find_first_not_of("0123456789."));
  if (number.find_first_of("0123456789") == std::string::npos ||
      number.find('.') != number.rfind('.'))
    return std::nullopt;
  const auto unit = units.find(text.substr(number.size()));
  if (unit == units.end()) return std::nullopt;
  if (number.find('.') == std::string::npos) {
    // A whole number is exact, up to int64_t's last value.
    int64_t whole = 0, product = 0;
    const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), whole);
    if (error != std::errc() ||
        __builtin_mul_overflow(whole, static_cast<int64_t>(unit->second), &product))
      return std::nullopt;
    return product;
  }
  double bytes = 0;
  try {
    bytes = std::stod(number) * unit->second;
  } catch (const std::out_of_range&) {
    return std::nullopt;
  }
  // 2^63 is the first double past int64_t's range.
  if (!(bytes < 9223372036854775808.0)) return std::nullopt;
  return static_cast<int64_t>(bytes);
}

namespace {

// Reads one mapping of the launch file into the tree: each key through its
// KeySpec, each subsection recursively, recording every value's line. Keys
// must be plain names, each given once: yaml-cpp keeps both entries of a
// repeated key and looks up the first, so the second would be silently
// ignored.
void read_section(HiveConfig& config, const YAML::Node& node, const std::string& path,
                  const Reader& r, const std::filesystem::path& base_dir) {
  const auto qualified = [&](const std::string& key) {
    return path.empty() ? key : path + "." + key;
  };
  check(node.IsMap(), r.at(node), path.empty() ? "the file" : path,
        " must be a mapping of keys to values");
  std::map<std::string, int> lines;
  for (const auto& entry : node) {
    check(entry.first.IsScalar(), r.at(entry.first), "keys must be plain names (got a ",
          entry.first.IsMap()        ? "mapping"
          : entry.first.IsSequence() ? "list"
                                     : "null",
          ")");
    const std::string& key = entry.first.Scalar();
    const auto [first, fresh] = lines.emplace(key, entry.first.Mark().line + 1);
    check(fresh, r.at(entry.first), "key '", qualified(key), "' given twice (first on line ",
          first->second, ")");
  }
  for (const auto& entry : node) {
    const std::string name = qualified(entry.first.Scalar());
    const KeySpec* spec = find_key(name);
    check(spec || is_section(name), r.at(entry.first), "unknown key '", name,
          "' (expected one of: ", names_in(path), ")");
    // An empty value's own position is wherever the next token starts.
    check(!entry.second.IsNull(), r.at(entry.first), name, ": expected a value (got nothing)");
    config.sources[name] = str_cat(r.source, ":", entry.second.Mark().line + 1);
    if (spec) {
      config.sources[name] = str_cat(r.source, ":", entry.first.Mark().line + 1);
      spec->read(config, Value{entry.second, name, r, base_dir});
    } else {
      read_section(config, entry.second, name, r, base_dir);
    }
  }
  if (path == "kv_cache")
    check(!(node["memory_budget"] && node["memory_fraction"]), r.at(node), path,
          ": give memory_budget or memory_fraction, not both");
  if (path == "speculative") {
    // A draft model alone says which method it is.
    SpeculativeConfig& spec = config.engine.speculative;
    if (!node["method"] && !spec.draft_model.empty()) {
      spec.method = SpeculativeMethod::draft_model;
      config.sources["speculative.method"] = config.sources["speculative.draft_model"];
    }
    check(spec.enabled(), r.at(node), path, ": give method: ngram, or a draft_model");
  }
}

// yaml-cpp 0.7 (Debian 12's) loops forever in LoadAll, allocating, on a
// stray ',' outside a flow collection (",a: b"): the parser does not consume
// the token and reports an empty document again and again (yaml-cpp issue
// 1040, fixed upstream in 0.8.x). Found by fuzz_launch_config. Before
// LoadAll, the documents are walked with events only: each one that holds
// something consumes at least one byte, so more documents than bytes means
// no progress.
class DocumentCounter : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override { last_ = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
  YAML::Mark last_;
};

void check_parser_progress(const std::string& yaml_text, const std::string& source) {
  std::istringstream in(yaml_text);
  YAML::Parser parser(in);
  DocumentCounter counter;
  for (size_t documents = 0; parser.HandleNextDocument(counter); ++documents)
    check(documents <= yaml_text.size(), source, ":", counter.last_.line + 1,
          ": not valid YAML: the parser makes no progress here (a stray ','?)");
}

}  // namespace

std::string HiveConfig::source_of(const std::string& key) const {
  const auto it = sources.find(key);
  return it == sources.end() ? "default" : it->second;
}

HiveConfig parse_hive_config(const std::string& yaml_text, const std::string& source,
                             const std::filesystem::path& base_dir) {
  YAML::Node root;
  try {
    check_parser_progress(yaml_text, source);
    // Empty documents (a trailing "---") are nothing; a second real one is
    // a mistake.
    std::vector<YAML::Node> documents;
    for (const YAML::Node& document : YAML::LoadAll(yaml_text))
      if (!document.IsNull()) documents.push_back(document);
    check(documents.size() <= 1, source, ":",
          documents.size() > 1 ? documents[1].Mark().line + 1 : 0,
          ": a second YAML document; the file describes one runtime");
    if (!documents.empty()) root = documents[0];
  } catch (const YAML::Exception& e) {
    fail(source, ":", e.mark.line + 1, ": not valid YAML: ", e.msg);
  }
  HiveConfig config;
  const Reader r{source};
  check(root.IsMap(), r.at(root), "the file must be a mapping of keys to values");
  check(root["model"].IsDefined(), r.at(root), "missing required key 'model'");
  read_section(config, root, "", r, base_dir);
  validate(config);
  return config;
}

HiveConfig load_hive_config(const std::filesystem::path& path) {
  std::ifstream in(path);
  check(in.good(), path.string(), ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_hive_config(text.str(), path.string(), path.parent_path());
}

void set_config_value(HiveConfig& config, const std::string& key, const std::string& value,
                      const std::string& source) {
  const KeySpec* spec = find_key(key);
  check(spec != nullptr, source, ": unknown key '", key, "'");
  const Reader r{source, /*flag=*/true};
  spec->read(config, Value{YAML::Node(value), key, r, std::filesystem::current_path()});
  config.sources[key] = source;
}

std::string print_config(const HiveConfig& config) {
  std::ostringstream out;
  std::string open;  // the sections open, "speculative.ngram"
  for (const KeySpec& spec : keys()) {
    const std::optional<std::string> value = spec.print(config);
    const std::string name = spec.name, section = section_of(name);
    if (!value) {
      if (name == "server.api_key")
        out << "  # api_key: set, not printed  # " << config.source_of(name) << "\n";
      continue;
    }
    // Open the sections between the common prefix and this key's section.
    if (section != open) {
      std::string common = open;
      while (!common.empty() && section.rfind(common + ".", 0) != 0 && section != common)
        common = section_of(common);
      size_t start = common.empty() ? 0 : common.size() + 1;
      while (start < section.size() + 1 && !section.empty()) {
        const size_t end = std::min(section.find('.', start), section.size());
        const size_t depth = static_cast<size_t>(
            std::count(section.begin(), section.begin() + static_cast<std::ptrdiff_t>(end), '.'));
        out << std::string(2 * depth, ' ') << section.substr(start, end - start) << ":\n";
        start = end + 1;
      }
      open = section;
    }
    const size_t depth = section.empty() ? 0 : std::count(name.begin(), name.end(), '.');
    out << std::string(2 * depth, ' ') << name.substr(section.empty() ? 0 : section.size() + 1)
        << ": " << *value << "  # " << config.source_of(name) << "\n";
  }
  return out.str();
}

}  // namespace hive
