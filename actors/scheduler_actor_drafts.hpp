#pragma once
// The scheduler actor's side of the draft actor (draft_actor.hpp): it asks
// for a window's drafts ahead as each verifying step goes out, and before a
// step is planned for those the proposals it holds do not cover.
#include "actors/scheduler_actor.hpp"

namespace hive::scheduler_detail {

using Self = scheduler_actor::stateful_pointer<SchedulerState>;

// scheduler_actor.cpp: plans and sends steps while it may.
void maybe_step(Self self);

// Spawns the draft actor when the setup has a draft model's drafters, and
// makes each rank's ProposalBook its drafter.
void start_drafts(Self self);
// Whether the next step may be planned: no draft work is awaited and every
// sequence that is to speculate has a proposal. Asks for those missing (the
// answer calls maybe_step again).
bool drafts_ready(Self self);
// The step just sent verifies drafts: asks for the window after each,
// assuming the target accepts them all.
void propose_ahead(Self self, const CoreStep& step);

}  // namespace hive::scheduler_detail
