#pragma once
// The YAML file that describes a whole Hive runtime (`hive run/serve
// --config FILE`): model, ranks and parallelism, KV budget, scheduler limits,
// server settings and speculative decoding. Every key is checked: unknown
// keys, wrong types and out-of-range values fail with file:line, the key,
// what was expected and what was given.
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
//               worker_timeout: 60s, worker_start_timeout: 10min}
//   server: {host: 127.0.0.1, port: 8000, api_key: KEY, max_queued_requests: 256,
//            served_model_name: NAME}
//   speculative: {method: draft_model, draft_model: ../models/hive-draft,
//                 num_speculative_tokens: 4}      # or method: ngram, ngram: {min_n, max_n}
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "kernels/backend_select.hpp"
#include "kernels/cpu/cpu_features.hpp"
#include "kernels/dtype.hpp"
#include "moe/expert_placement.hpp"
#include "moe/replica_balancer.hpp"
#include "parallel/rank_group.hpp"
#include "runtime/core/scheduler.hpp"
#include "runtime/core/speculative_config.hpp"

namespace hive {

struct ParallelConfig {
  int world_size = 1;                           // ranks (devices, or CPU ranks in one process)
  // in_process: the ranks are threads of this process; mpi: each rank is a
  // process of an mpirun (or srun) job of world_size processes; nccl: as mpi,
  // one GPU per process, the collectives over NCCL (MPI starts it).
  RankTransport transport = RankTransport::in_process;
  int expert_parallel_size = 0;                 // ranks the experts are spread over; 0: default
  int tensor_parallel_size = 1;                 // ranks attention and dense layers are split over
  PlacementKind expert_placement = PlacementKind::contiguous;
  int replicate_hot_experts = 0;  // copies of the most-loaded experts kept on every rank
  // Live replica balancing: rebalance_period_steps > 0 turns it on.
  BalancerConfig rebalance_experts;
};

struct KVCacheSettings {  // not runtime/core/kv_cache_manager.hpp's KVCacheConfig
  int block_size = 16;
  std::optional<int64_t> memory_budget_bytes;  // else memory_fraction of the free memory
  // vLLM's gpu_memory_utilization, of the device's memory free once the
  // weights are loaded, capped at what max_num_seqs x max_model_len can use;
  // CPU ranks share host memory.
  double memory_fraction = 0.9;  // = kDefaultKVMemoryFraction (runtime/model/kv_budget.hpp)
  DType dtype = DType::bf16;     // f32 | bf16: what the cache stores
  bool enable_prefix_caching = true;
  int64_t swap_space_bytes = 0;  // host pool for swapped-out blocks
};

struct SchedulerLimits {
  int max_num_seqs = 64;
  int max_num_batched_tokens = 512;
  bool enable_chunked_prefill = true;
  bool async_scheduling = true;              // plan step t+1 while step t runs
  SchedulingPolicy policy = SchedulingPolicy::fcfs;
  PreemptionMode preemption_mode = PreemptionMode::by_cost;
  int64_t worker_timeout_ms = 60000;         // a step not answered by then is a fault
  int64_t worker_start_timeout_ms = 600000;  // so are workers not started by then
};

struct ServerConfig {
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string api_key;  // empty: no key required
  // Requests in flight beyond this are answered 429 (retry later).
  int64_t max_queued_requests = 256;
  // Connections open at once (HTTP and WebSocket); one more is answered 503.
  int64_t max_connections = 1024;
  std::string served_model_name;  // empty: the model directory's name
};

struct LaunchConfig {
  std::filesystem::path model;
  DeviceChoice device = DeviceChoice::automatic;
  ParallelConfig parallel;
  KVCacheSettings kv_cache;
  SchedulerLimits scheduler;
  ServerConfig server;
  SpeculativeConfig speculative;  // method none: off
  // The CPU kernels' matmul precision (kernels/cpu/cpu_features.hpp), set
  // for the whole process by the command that starts from this file; unset
  // leaves HIVE_MATMUL_PRECISION's (f32 by default).
  std::optional<cpu::MatmulPrecision> matmul_precision;
  // A GGUF model's quantized tensors dequantized to bf16 at load instead of
  // multiplied as stored (LoadOptions::dequantize); no effect on other models.
  bool dequantize = false;
};

// `source` names the text in errors; relative paths resolve against base_dir.
LaunchConfig parse_launch_config(const std::string& yaml_text, const std::string& source,
                                 const std::filesystem::path& base_dir);
LaunchConfig load_launch_config(const std::filesystem::path& path);

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
