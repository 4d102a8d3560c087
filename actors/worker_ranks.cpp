#include "actors/worker_ranks.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>

#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>

#include "actors/error_text.hpp"
#include "actors/type_ids.hpp"
#include "base/error.hpp"
#include "kernels/backend_select.hpp"
#include "parallel/mpi_communicator.hpp"
#ifdef HIVE_HAVE_CUDA
#include "parallel/nccl_rank_group.hpp"
#endif

namespace hive {

namespace {

// What this process's rank holds for the worker rank 0 starts in it. CAF
// 0.17's actor factories (remote_spawn's names) are functions of the
// message's arguments alone, so the model and group reach the factory here;
// one rank per process, so one of these.
struct RankContext {
  std::unique_ptr<Backend> backend;
  std::shared_ptr<Model> model;
  std::shared_ptr<RankGroup> group;
  std::mutex mutex;
  std::condition_variable started;
  bool worker_started = false;
};

RankContext& rank_context() {
  static RankContext context;
  return context;
}

worker_actor::behavior_type remote_worker(worker_actor::stateful_pointer<WorkerState> self,
                                          RemoteWorkerArgs args) {
  RankContext& context = rank_context();
  WorkerSpec spec;
  spec.model = context.model;
  spec.num_blocks = args.num_blocks;
  spec.block_size = args.block_size;
  spec.num_host_blocks = args.num_host_blocks;
  spec.rank = args.rank;
  spec.group = args.collectives ? context.group : nullptr;
  spec.placement = static_cast<PlacementKind>(args.placement);
  spec.tensor_parallel_size = args.tensor_parallel_size;
  spec.scheduler = args.scheduler;
  spec.kv_cache_dtype = static_cast<DType>(args.kv_cache_dtype);
  {
    const std::lock_guard lock(context.mutex);
    context.worker_started = true;
  }
  context.started.notify_all();
  return worker(self, std::move(spec));
}

// Where rank 0 reaches this rank's middleman: HIVE_RANK_ADDRESS (a ranks'
// network address, for jobs across hosts), else the loopback (one host).
std::string rank_address() {
  const char* address = std::getenv("HIVE_RANK_ADDRESS");
  return address != nullptr && *address != '\0' ? address : "127.0.0.1";
}

// The actor system of one process of the job: the middleman for the actors
// of the other processes, the message types, one scheduler thread.
void configure(caf::actor_system_config& config) {
  config.set("scheduler.policy", caf::atom("sharing"));
  config.set("scheduler.max-threads", size_t{1});
  register_message_types(config);
  config.load<caf::io::middleman>();
}

}  // namespace

std::shared_ptr<RankGroup> make_process_rank_group(const HiveConfig& config) {
  if (config.parallel.transport == RankTransport::nccl) {
#ifdef HIVE_HAVE_CUDA
    // A collective that outlasts a whole step's deadline will not finish.
    return make_nccl_rank_group(config.engine.scheduler.worker_timeout);
#else
    fail("parallel.transport nccl: this Hive was built without CUDA");
#endif
  }
  return make_mpi_rank_group();
}

void run_worker_rank(const HiveConfig& config) {
  RankContext& context = rank_context();
  // The group first: a rank without its device says so before loading.
  context.group = make_process_rank_group(config);
  context.backend = select_backend(config.device, Model::required_ops()).backend;
  context.model =
      std::make_shared<Model>(config.model, *context.backend, LoadOptions{config.dequantize});
  {
    caf::actor_system_config system_config;
    configure(system_config);
    system_config.add_actor_type("hive.worker", remote_worker);
    caf::actor_system system(system_config);
    const std::string address = rank_address();
    const caf::expected<uint16_t> port = system.middleman().open(0, address.c_str());
    if (!port)
      fail("cannot listen on ", address, ": ", system.render(port.error()));
    mpi_gather_strings(str_cat(address, ":", *port));
    std::unique_lock lock(context.mutex);
    const bool started = context.started.wait_for(
        lock, config.engine.scheduler.worker_start_timeout, [&] { return context.worker_started; });
    lock.unlock();
    check(started, "rank 0 did not start this rank's worker within ",
          config.engine.scheduler.worker_start_timeout.count(), " ms");
    // Until the scheduler stops the worker (or its process goes away).
    system.await_all_actors_done();
  }
  context.group.reset();
  context.model.reset();
  context.backend.reset();
}

std::function<worker_actor(const WorkerSpec&)> connect_worker_ranks(caf::actor_system& system,
                                                                    int world_size) {
  const std::vector<std::string> endpoints = mpi_gather_strings("");
  check(static_cast<int>(endpoints.size()) == world_size, "parallel.world_size is ", world_size,
        " but the MPI job has ", endpoints.size(), " processes: start it with mpirun -np ",
        world_size, " (or srun -n ", world_size, ")");
  std::vector<caf::node_id> nodes(endpoints.size());
  for (size_t r = 1; r < endpoints.size(); ++r) {
    const std::string& endpoint = endpoints[r];
    const size_t colon = endpoint.rfind(':');
    check(colon != std::string::npos, "rank ", r, " sent no address (got '", endpoint, "')");
    const auto port = static_cast<uint16_t>(std::stoi(endpoint.substr(colon + 1)));
    caf::expected<caf::node_id> node = system.middleman().connect(endpoint.substr(0, colon), port);
    if (!node)
      fail("rank ", r, " at ", endpoint, ": cannot connect: ", system.render(node.error()));
    nodes[r] = *node;
  }
  return [&system, nodes](const WorkerSpec& spec) -> worker_actor {
    if (spec.rank == 0) return system.spawn<caf::detached>(worker, spec);
    RemoteWorkerArgs args;
    args.rank = spec.rank;
    args.num_blocks = spec.num_blocks;
    args.block_size = spec.block_size;
    args.num_host_blocks = spec.num_host_blocks;
    args.placement = static_cast<int32_t>(spec.placement);
    args.tensor_parallel_size = spec.tensor_parallel_size;
    args.kv_cache_dtype = static_cast<int32_t>(spec.kv_cache_dtype);
    args.collectives = spec.group != nullptr;
    args.scheduler = spec.scheduler;
    caf::expected<worker_actor> remote = system.middleman().remote_spawn<worker_actor>(
        nodes[static_cast<size_t>(spec.rank)], "hive.worker", caf::make_message(args),
        std::chrono::minutes(10));
    if (!remote)
      fail("rank ", spec.rank, ": its process could not start its worker: ",
           system.render(remote.error()));
    return *remote;
  };
}

}  // namespace hive
