#pragma once
// The draft actor: owns the draft model and, per planning rank, its
// DraftModelDrafter (a KV pool of its own), and runs them on a thread of its
// own (spawned detached), beside the target's workers.
//
// The scheduler actor asks it for drafts twice over:
// - a window ahead: as soon as a step that verifies drafts is sent, for the
//   tokens that step would leave if the target accepted every draft; the
//   draft proposes the target's next token too, then the next window. While
//   the target verifies window t, the draft already proposes window t+1.
// - on a miss: when the target rejected a draft (or sampled another token
//   than the guessed one), or a sequence is to speculate for the first
//   time, the guess is thrown away and the step waits for a fresh proposal.
// The scheduler keeps the answers in a ProposalBook (runtime/core), which
// serves only proposals that follow the tokens a sequence really has.
//
// Its state per sequence is only the draft's KV, which catches up from the
// prefix it shares with each job's tokens; released sequences drop it. A
// failing draft model answers with an error: the engine then decodes
// without drafts, and no request fails for it.
#include <memory>
#include <unordered_map>
#include <vector>

#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/type_ids.hpp"
#include "runtime/engine/draft_model_drafter.hpp"

namespace hive {

using draft_actor = caf::typed_actor<caf::replies_to<propose_atom, DraftWork>::with<DraftAnswer>>;

struct DraftSetup {
  std::shared_ptr<Model> model;
  std::vector<std::shared_ptr<DraftModelDrafter>> drafters;  // per planning rank
};

struct DraftState {
  DraftSetup setup;
  // Per rank, per sequence: what a job said of it, as the drafter reads it.
  std::vector<std::unordered_map<SequenceId, Sequence>> sequences;
  static inline const char* name = "hive.draft";
};

draft_actor::behavior_type draft(draft_actor::stateful_pointer<DraftState> self, DraftSetup setup);

}  // namespace hive
