#include "actors/launch_config.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "base/error.hpp"

namespace hive {

namespace {

// Reads one YAML mapping, remembering which keys were used, so that unknown
// keys can be reported with their line. Keys must be plain names, each given
// once: yaml-cpp keeps both entries of a repeated key and looks up the first,
// so the second would be silently ignored.
class Section {
 public:
  Section(const YAML::Node& node, std::string path, const std::string& source)
      : node_(node), path_(std::move(path)), source_(source) {
    check(node.IsMap(), where(node), path_.empty() ? "the file" : path_,
          " must be a mapping of keys to values");
    std::map<std::string, int> lines;
    for (const auto& entry : node_) {
      check(entry.first.IsScalar(), where(entry.first), "keys must be plain names (got a ",
            entry.first.IsMap()        ? "mapping"
            : entry.first.IsSequence() ? "list"
                                       : "null",
            ")");
      const std::string& key = entry.first.Scalar();
      const auto [first, fresh] = lines.emplace(key, entry.first.Mark().line + 1);
      check(fresh, where(entry.first), "key '", qualified(key), "' given twice (first on line ",
            first->second, ")");
    }
  }

  // Calls read(node, key path) for the key when present.
  void optional(const std::string& key,
                const std::function<void(const YAML::Node&, const std::string&)>& read) {
    used_.insert({key, true});
    for (const auto& entry : node_) {
      if (entry.first.Scalar() != key) continue;
      // An empty value's own position is wherever the next token starts.
      check(!entry.second.IsNull(), where(entry.first), qualified(key),
            ": expected a value (got nothing)");
      return read(entry.second, qualified(key));
    }
  }
  void required(const std::string& key,
                const std::function<void(const YAML::Node&, const std::string&)>& read) {
    check(node_[key].IsDefined(), where(node_), "missing required key '", qualified(key), "'");
    optional(key, read);
  }
  void reject_unknown_keys() const {
    for (const auto& entry : node_) {
      const std::string& key = entry.first.Scalar();
      if (!used_.count(key)) {
        std::string known;
        for (const auto& [name, unused] : used_) known += (known.empty() ? "" : ", ") + name;
        fail(where(entry.first), "unknown key '", qualified(key), "' (expected one of: ", known,
             ")");
      }
    }
  }
  std::string where(const YAML::Node& node) const {
    const YAML::Mark mark = node.Mark();
    return mark.line >= 0 ? str_cat(source_, ":", mark.line + 1, ": ") : str_cat(source_, ": ");
  }

 private:
  std::string qualified(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
  }

  YAML::Node node_;
  std::string path_;
  const std::string& source_;
  std::map<std::string, bool> used_;
};

struct Reader {
  const std::string& source;

  std::string at(const YAML::Node& node) const {
    const YAML::Mark mark = node.Mark();
    return str_cat(source, ":", mark.line + 1, ": ");
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
  // The value named by the node's text, one of `options`.
  template <class E>
  E choice(const YAML::Node& node, const std::string& key,
           std::initializer_list<std::pair<const char*, E>> options) const {
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
};

}  // namespace

int check_parallel_layout(const ParallelConfig& parallel, const std::string& where) {
  const int world = parallel.world_size, tp = parallel.tensor_parallel_size;
  const int ep = parallel.expert_parallel_size != 0 ? parallel.expert_parallel_size
                 : tp == 1                          ? world
                                                    : 1;
  check((tp == 1 && ep == world) || (tp == world && ep == 1), where, "world_size ", world,
        " with expert_parallel_size ", ep, " and tensor_parallel_size ", tp,
        ": the ranks are either data parallel with the experts spread over all of them "
        "(expert_parallel_size = world_size, tensor_parallel_size 1) or one tensor-parallel "
        "model (tensor_parallel_size = world_size, expert_parallel_size 1)");
  return ep;
}

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

LaunchConfig parse_launch_config(const std::string& yaml_text, const std::string& source,
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
  LaunchConfig config;
  const Reader r{source};
  Section top(root, "", source);
  const auto path = [&](const YAML::Node& n, const std::string& key) {
    const std::filesystem::path p = r.scalar(n, key, "a path");
    check(!p.empty(), r.at(n), key, ": expected a path (got an empty string)");
    return p.is_absolute() ? p : (base_dir / p).lexically_normal();
  };
  top.required("model", [&](auto& n, auto& k) { config.model = path(n, k); });
  top.optional("device", [&](auto& n, auto& k) {
    config.device = r.choice<DeviceChoice>(n, k,
                                           {{"auto", DeviceChoice::automatic},
                                            {"cpu", DeviceChoice::cpu},
                                            {"cuda", DeviceChoice::cuda}});
  });
  top.optional("dequantize", [&](auto& n, auto& k) { config.dequantize = r.boolean(n, k); });
  top.optional("matmul_precision", [&](auto& n, auto& k) {
    config.matmul_precision = r.choice<cpu::MatmulPrecision>(
        n, k, {{"f32", cpu::MatmulPrecision::f32}, {"bf16", cpu::MatmulPrecision::bf16}});
  });
  top.optional("parallel", [&](auto& node, auto& name) {
    Section s(node, name, source);
    ParallelConfig& p = config.parallel;
    s.optional("world_size", [&](auto& n, auto& k) {
      p.world_size = static_cast<int>(r.integer(n, k, 1, 1024));
    });
    s.optional("transport", [&](auto& n, auto& k) {
      p.transport = r.choice<RankTransport>(n, k,
                                            {{"in_process", RankTransport::in_process},
                                             {"mpi", RankTransport::mpi},
                                             {"nccl", RankTransport::nccl}});
#ifndef HIVE_HAVE_MPI
      // NCCL's processes need MPI too: it hands them rank 0's unique id.
      check(p.transport == RankTransport::in_process, s.where(n), k, ": ",
            p.transport == RankTransport::mpi ? "mpi" : "nccl",
            ": this Hive was built without MPI (-DHIVE_MPI=OFF)");
#endif
#ifndef HIVE_HAVE_CUDA
      check(p.transport != RankTransport::nccl, s.where(n), k,
            ": nccl: this Hive was built without CUDA (it needs nvcc, cuBLAS and NCCL at build "
            "time)");
#endif
    });
    s.optional("expert_parallel_size", [&](auto& n, auto& k) {
      p.expert_parallel_size = static_cast<int>(r.integer(n, k, 1, 1024));
    });
    s.optional("tensor_parallel_size", [&](auto& n, auto& k) {
      p.tensor_parallel_size = static_cast<int>(r.integer(n, k, 1, 1024));
    });
    s.optional("expert_placement", [&](auto& n, auto& k) {
      p.expert_placement = r.choice<PlacementKind>(
          n, k, {{"contiguous", PlacementKind::contiguous},
                 {"round_robin", PlacementKind::round_robin}});
    });
    s.optional("replicate_hot_experts", [&](auto& n, auto& k) {
      p.replicate_hot_experts = static_cast<int>(r.integer(n, k, 0, 1024));
    });
    BalancerConfig& b = p.rebalance_experts;
    s.optional("rebalance_period_steps", [&](auto& n, auto& k) {
      b.period_steps = static_cast<int>(r.integer(n, k, 0, 1 << 20));
    });
    s.optional("rebalance_window_steps", [&](auto& n, auto& k) {
      b.window_steps = static_cast<int>(r.integer(n, k, 1, 1 << 20));
    });
    s.optional("replica_slots_per_rank", [&](auto& n, auto& k) {
      b.slots_per_rank = static_cast<int>(r.integer(n, k, 0, 1024));
    });
    s.optional("rebalance_threshold",
               [&](auto& n, auto& k) { b.threshold = r.number(n, k, 1.0, 100.0); });
    s.reject_unknown_keys();
    check_parallel_layout(p, str_cat(s.where(node), name, ": "));
  });
  top.optional("kv_cache", [&](auto& node, auto& name) {
    Section s(node, name, source);
    KVCacheSettings& kv = config.kv_cache;
    s.optional("block_size", [&](auto& n, auto& k) {
      kv.block_size = static_cast<int>(r.integer(n, k, 1, 1024));
    });
    s.optional("memory_budget", [&](auto& n, auto& k) { kv.memory_budget_bytes = r.bytes(n, k); });
    s.optional("memory_fraction",
               [&](auto& n, auto& k) { kv.memory_fraction = r.number(n, k, 0.01, 1.0); });
    s.optional("dtype", [&](auto& n, auto& k) {
      kv.dtype = r.choice<DType>(n, k,
                                 {{"f32", DType::f32},
                                  {"bf16", DType::bf16},
                                  {"int8", DType::i8},
                                  {"fp8", DType::f8_e4m3}});
    });
    s.optional("enable_prefix_caching",
               [&](auto& n, auto& k) { kv.enable_prefix_caching = r.boolean(n, k); });
    s.optional("swap_space", [&](auto& n, auto& k) { kv.swap_space_bytes = r.bytes(n, k); });
    s.reject_unknown_keys();
    check(!(node["memory_budget"] && node["memory_fraction"]), s.where(node), name,
          ": give memory_budget or memory_fraction, not both");
  });
  std::string preemption_mode_at = source + ": ";
  top.optional("scheduler", [&](auto& node, auto& name) {
    Section s(node, name, source);
    SchedulerLimits& sc = config.scheduler;
    s.optional("max_num_seqs", [&](auto& n, auto& k) {
      sc.max_num_seqs = static_cast<int>(r.integer(n, k, 1, 1 << 20));
    });
    s.optional("max_num_batched_tokens", [&](auto& n, auto& k) {
      sc.max_num_batched_tokens = static_cast<int>(r.integer(n, k, 1, 1 << 24));
    });
    s.optional("enable_chunked_prefill",
               [&](auto& n, auto& k) { sc.enable_chunked_prefill = r.boolean(n, k); });
    s.optional("async_scheduling",
               [&](auto& n, auto& k) { sc.async_scheduling = r.boolean(n, k); });
    s.optional("policy", [&](auto& n, auto& k) {
      sc.policy = r.choice<SchedulingPolicy>(
          n, k, {{"fcfs", SchedulingPolicy::fcfs}, {"priority", SchedulingPolicy::priority}});
    });
    s.optional("preemption_mode", [&](auto& n, auto& k) {
      sc.preemption_mode = r.choice<PreemptionMode>(n, k,
                                                   {{"by_cost", PreemptionMode::by_cost},
                                                    {"recompute", PreemptionMode::recompute},
                                                    {"swap", PreemptionMode::swap}});
      preemption_mode_at = r.at(n);
    });
    s.optional("worker_timeout",
               [&](auto& n, auto& k) { sc.worker_timeout_ms = r.duration_ms(n, k); });
    s.optional("worker_start_timeout",
               [&](auto& n, auto& k) { sc.worker_start_timeout_ms = r.duration_ms(n, k); });
    s.reject_unknown_keys();
  });
  top.optional("server", [&](auto& node, auto& name) {
    Section s(node, name, source);
    s.optional("host", [&](auto& n, auto& k) {
      config.server.host = r.scalar(n, k, "a host name or address");
    });
    s.optional("port", [&](auto& n, auto& k) {
      config.server.port = static_cast<int>(r.integer(n, k, 1, 65535));
    });
    s.optional("api_key",
               [&](auto& n, auto& k) { config.server.api_key = r.scalar(n, k, "a string"); });
    s.optional("max_queued_requests", [&](auto& n, auto& k) {
      config.server.max_queued_requests = r.integer(n, k, 1, int64_t{1} << 20);
    });
    s.optional("max_connections", [&](auto& n, auto& k) {
      config.server.max_connections = r.integer(n, k, 1, int64_t{1} << 20);
    });
    s.optional("served_model_name", [&](auto& n, auto& k) {
      config.server.served_model_name = r.scalar(n, k, "a model name");
    });
    s.reject_unknown_keys();
  });
  top.optional("speculative", [&](auto& node, auto& name) {
    Section s(node, name, source);
    SpeculativeConfig& spec = config.speculative;
    std::optional<SpeculativeMethod> method;
    s.optional("method", [&](auto& n, auto& k) {
      method = r.choice<SpeculativeMethod>(n, k,
                                          {{"ngram", SpeculativeMethod::ngram},
                                           {"draft_model", SpeculativeMethod::draft_model}});
    });
    s.optional("draft_model", [&](auto& n, auto& k) { spec.draft_model = path(n, k); });
    spec.num_speculative_tokens = 4;
    s.optional("num_speculative_tokens", [&](auto& n, auto& k) {
      spec.num_speculative_tokens = static_cast<int>(r.integer(n, k, 1, kMaxSpeculativeTokens));
    });
    s.optional("adaptive", [&](auto& n, auto& k) { spec.adaptive = r.boolean(n, k); });
    s.optional("ngram", [&](auto& ngram_node, auto& ngram_name) {
      Section g(ngram_node, ngram_name, source);
      g.optional("min_n", [&](auto& n, auto& k) {
        spec.ngram.min_n = static_cast<int>(r.integer(n, k, 1, 16));
      });
      g.optional("max_n", [&](auto& n, auto& k) {
        spec.ngram.max_n = static_cast<int>(r.integer(n, k, 1, 16));
      });
      g.reject_unknown_keys();
    });
    s.reject_unknown_keys();
    // A draft model alone says which method it is.
    spec.method = method.value_or(spec.draft_model.empty() ? SpeculativeMethod::none
                                                           : SpeculativeMethod::draft_model);
    check(spec.method != SpeculativeMethod::none, r.at(node), name,
          ": give method: ngram, or a draft_model");
    check(spec.method != SpeculativeMethod::draft_model || !spec.draft_model.empty(), r.at(node),
          name, ": method draft_model needs draft_model: DIR");
    check(spec.method != SpeculativeMethod::ngram || spec.draft_model.empty(), r.at(node), name,
          ": method ngram takes no draft_model");
    check(spec.ngram.min_n <= spec.ngram.max_n, r.at(node), name, ".ngram: min_n (",
          spec.ngram.min_n, ") must not exceed max_n (", spec.ngram.max_n, ")");
  });
  top.reject_unknown_keys();
  check(config.scheduler.preemption_mode != PreemptionMode::swap || config.kv_cache.swap_space_bytes > 0,
        preemption_mode_at,
        "scheduler.preemption_mode: swap needs kv_cache.swap_space (a host pool to swap to)");
  return config;
}

LaunchConfig load_launch_config(const std::filesystem::path& path) {
  std::ifstream in(path);
  check(in.good(), path.string(), ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_launch_config(text.str(), path.string(), path.parent_path());
}

}  // namespace hive
