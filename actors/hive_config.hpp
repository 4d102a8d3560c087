#pragma once
// HiveConfig: the one config tree of a Hive runtime. The launch file
// (`hive run/serve --config FILE`) and the command-line flags both parse into
// it, flags last; each layer takes its part by const& (the engines
// `engine`, the gateway `server`, the rank setup `parallel`). Every key has
// one default, the member initializer of its struct, and every value
// remembers where it came from (HiveConfig::sources). resolve() derives what
// follows from the model and validates the whole tree; print_config() writes
// it back as a launch file, each value with its source.
//
//   model: ../models/hive-moe-target      # relative to this file
//   dequantize: false                     # a GGUF's quantized tensors widened to bf16
//   device: cpu                           # auto | cpu | cuda
//   parallel: {world_size: 2, expert_parallel_size: 2, tensor_parallel_size: 1,
//              expert_placement: round_robin, replicate_hot_experts: 1}
//   (or live balancing: rebalance_period_steps: 8, rebalance_window_steps: 32,
//    replica_slots_per_rank: 2, rebalance_threshold: 1.1)
//   kv_cache: {block_size: 16, memory_budget: 256MiB, enable_prefix_caching: true}
//   scheduler: {max_num_seqs: 64, max_num_batched_tokens: 512, policy: fcfs,
//               max_model_len: 4096, worker_timeout: 60s, worker_start_timeout: 10min}
//   server: {host: 127.0.0.1, port: 8000, api_key: KEY, max_queued_requests: 256,
//            served_model_name: NAME}
//   speculative: {method: draft_model, draft_model: ../models/hive-draft,
//                 num_speculative_tokens: 4}      # or method: ngram, ngram: {min_n, max_n}
//
// Every key is checked: unknown keys, wrong types and out-of-range values
// fail with where the value came from (file:line, or the flag), the key,
// what was expected and what was given.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kernels/backend_select.hpp"
#include "kernels/cpu/cpu_features.hpp"
#include "moe/expert_placement.hpp"
#include "moe/replica_balancer.hpp"
#include "parallel/rank_group.hpp"
#include "runtime/engine/engine_config.hpp"
#include "runtime/loader/model_config.hpp"

namespace hive {

struct ParallelConfig {
  int world_size = 1;  // ranks (devices, or CPU ranks in one process)
  // in_process: the ranks are threads of this process; mpi: each rank is a
  // process of an mpirun (or srun) job of world_size processes; nccl: as mpi,
  // one GPU per process, the collectives over NCCL (MPI starts it).
  RankTransport transport = RankTransport::in_process;
  // Ranks the experts are spread over; 0 until resolve() derives it from the
  // layout (world_size when tensor_parallel_size is 1, else 1).
  int expert_parallel_size = 0;
  int tensor_parallel_size = 1;  // ranks attention and dense layers are split over
  PlacementKind expert_placement = PlacementKind::contiguous;
  int replicate_hot_experts = 0;  // copies of the most-loaded experts kept on every rank
  // Live replica balancing: rebalance_period_steps > 0 turns it on.
  BalancerConfig rebalance_experts;
};

struct ServerConfig {
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string api_key;  // empty: no key required
  // Requests in flight beyond this are answered 429 (retry later).
  int64_t max_queued_requests = 256;
  // Connections open at once (HTTP and WebSocket); one more is answered 503.
  int64_t max_connections = 1024;
  std::string served_model_name;  // empty: resolve() takes the model directory's name
};

struct HiveConfig {
  std::filesystem::path model;
  DeviceChoice device = DeviceChoice::automatic;  // resolved by select_backend
  // A GGUF model's quantized tensors dequantized to bf16 at load instead of
  // multiplied as stored (LoadOptions::dequantize); no effect on other models.
  bool dequantize = false;
  // The CPU kernels' matmul precision (kernels/cpu/cpu_features.hpp), set
  // for the whole process by the command that starts from this tree; unset
  // leaves HIVE_MATMUL_PRECISION's (bf16 where the CPU has it).
  std::optional<cpu::MatmulPrecision> matmul_precision;
  ParallelConfig parallel;
  EngineConfig engine;  // the kv_cache:, scheduler: and speculative: sections
  ServerConfig server;
  // Where each key's value came from, by dotted key ("scheduler.max_num_seqs"):
  // "<file>:<line>", "flag --name" or "derived: ..."; a key not here has its
  // default. A section's entry is where the section starts.
  std::map<std::string, std::string> sources;

  std::string source_of(const std::string& key) const;
};

// The launch file's text onto the defaults; `source` names the text in
// errors and sources, relative paths resolve against base_dir. Runs validate().
HiveConfig parse_hive_config(const std::string& yaml_text, const std::string& source,
                             const std::filesystem::path& base_dir);
HiveConfig load_hive_config(const std::filesystem::path& path);

// Sets one key ("server.port") from text as a launch file would write it,
// recording `source` ("flag --port"); errors name the source and the key.
// Paths resolve against the working directory.
void set_config_value(HiveConfig& config, const std::string& key, const std::string& value,
                      const std::string& source);

// The checks that involve more than one key (the parallel layout, swap
// preemption and its swap space, the speculative method and its settings);
// errors start with the source of the key they name.
void validate(const HiveConfig& config);

// Validates, then derives what follows from the model's config.json (not its
// weights): parallel.expert_parallel_size, scheduler.max_model_len (the
// context length; a larger one is an error) and server.served_model_name.
// The KV pool's size is the one derived value not here: it is a share of the
// memory left once the weights are loaded (engine_core_config). Idempotent.
void resolve(HiveConfig& config, const ModelConfig& model);

// The tree as a launch file, one `key: value  # source` per line; parsed
// again it gives the same values. A set api_key is not printed (a comment
// says it is set).
std::string print_config(const HiveConfig& config);

// The two layouts Hive runs (docs/design/parallel.md): data-parallel ranks with
// the experts spread over all of them (tensor_parallel_size 1,
// expert_parallel_size world_size), or one tensor-parallel model
// (tensor_parallel_size world_size, expert_parallel_size 1). Returns the
// expert_parallel_size, its default (0) resolved; any other layout throws
// hive::Error, its message prefixed with `where`.
int check_parallel_layout(const ParallelConfig& parallel, const std::string& where);

// "512MiB", "2GiB", "1.5GB", "4096" -> bytes; nullopt when malformed.
std::optional<int64_t> parse_byte_size(const std::string& text);
// "500ms", "60s", "10min", "1h" -> milliseconds; nullopt when malformed.
std::optional<int64_t> parse_duration_ms(const std::string& text);

}  // namespace hive
