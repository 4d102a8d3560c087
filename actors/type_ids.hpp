#pragma once
// Every message type and atom of the actor runtime, in one type-id block.
// CAF 0.17.6 understands this 0.18-style block (the ids are assigned but not
// yet used for dispatch), so an upgrade to 0.18 is mechanical; under 0.17 the
// types are also announced to the actor system by register_message_types().
#include <caf/actor_system_config.hpp>
#include <caf/type_id.hpp>

#include "actors/messages.hpp"

CAF_BEGIN_TYPE_ID_BLOCK(hive, caf::first_custom_type_id)

CAF_ADD_TYPE_ID(hive, (hive::StepPlan))
CAF_ADD_TYPE_ID(hive, (hive::WorkerStep))
CAF_ADD_TYPE_ID(hive, (hive::WorkerResult))
CAF_ADD_TYPE_ID(hive, (hive::TokenEvent))
CAF_ADD_TYPE_ID(hive, (hive::OutputBatch))
CAF_ADD_TYPE_ID(hive, (hive::Submission))
CAF_ADD_TYPE_ID(hive, (hive::EngineMetrics))
CAF_ADD_TYPE_ID(hive, (hive::ExpertStats))
CAF_ADD_TYPE_ID(hive, (hive::DraftJob))
CAF_ADD_TYPE_ID(hive, (hive::DraftWork))
CAF_ADD_TYPE_ID(hive, (hive::DraftAnswer))
CAF_ADD_TYPE_ID(hive, (hive::RemoteWorkerArgs))

CAF_ADD_ATOM(hive, hive, step_atom, "step")
CAF_ADD_ATOM(hive, hive, submit_atom, "submit")
CAF_ADD_ATOM(hive, hive, cancel_atom, "cancel")
CAF_ADD_ATOM(hive, hive, metrics_atom, "metrics")
CAF_ADD_ATOM(hive, hive, shutdown_atom, "shutdown")
CAF_ADD_ATOM(hive, hive, fault_atom, "fault")
CAF_ADD_ATOM(hive, hive, load_atom, "load")
CAF_ADD_ATOM(hive, hive, replicas_atom, "replicas")
CAF_ADD_ATOM(hive, hive, watchdog_atom, "watchdog")
CAF_ADD_ATOM(hive, hive, ready_atom, "ready")
CAF_ADD_ATOM(hive, hive, start_due_atom, "startdue")
CAF_ADD_ATOM(hive, hive, propose_atom, "propose")
CAF_ADD_ATOM(hive, hive, end_job_atom, "endjob")

CAF_END_TYPE_ID_BLOCK(hive)

namespace hive {

// Announces the message types to a 0.17 actor system configuration.
inline void register_message_types(caf::actor_system_config& config) {
  config.add_message_type<StepPlan>("hive::StepPlan");
  config.add_message_type<WorkerStep>("hive::WorkerStep");
  config.add_message_type<WorkerResult>("hive::WorkerResult");
  config.add_message_type<TokenEvent>("hive::TokenEvent");
  config.add_message_type<OutputBatch>("hive::OutputBatch");
  config.add_message_type<Submission>("hive::Submission");
  config.add_message_type<EngineMetrics>("hive::EngineMetrics");
  config.add_message_type<ExpertStats>("hive::ExpertStats");
  config.add_message_type<DraftJob>("hive::DraftJob");
  config.add_message_type<DraftWork>("hive::DraftWork");
  config.add_message_type<DraftAnswer>("hive::DraftAnswer");
  config.add_message_type<RemoteWorkerArgs>("hive::RemoteWorkerArgs");
}

}  // namespace hive
