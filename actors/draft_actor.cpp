#include "actors/draft_actor.hpp"

#include "base/error.hpp"

namespace hive {

namespace {

DraftAnswer propose(DraftState& st, DraftWork& work) {
  check(work.rank >= 0 && static_cast<size_t>(work.rank) < st.setup.drafters.size(),
        "draft actor: no rank ", work.rank);
  DraftModelDrafter& drafter = *st.setup.drafters[static_cast<size_t>(work.rank)];
  auto& sequences = st.sequences[static_cast<size_t>(work.rank)];
  for (const int64_t id : work.released) {
    drafter.release(id);
    sequences.erase(id);
  }
  std::vector<DraftQuery> queries;
  for (DraftJob& job : work.jobs) {
    auto it = sequences.find(job.seq_id);
    if (it == sequences.end()) {
      auto request = std::make_shared<Request>();
      request->sampling = job.sampling;
      it = sequences.try_emplace(job.seq_id, job.seq_id, std::move(request), 0).first;
      it->second.sample_index = job.sample_index;
    }
    Sequence& seq = it->second;
    seq.token_ids = std::move(job.token_ids);  // all known to the drafter
    seq.num_prompt_tokens = seq.num_tokens();
    queries.push_back({&seq, job.max_tokens});
  }
  DraftAnswer answer;
  for (Draft& d : drafter.propose(queries)) {
    answer.token_ids.push_back(std::move(d.token_ids));
    answer.probs.push_back(std::move(d.probs));
  }
  return answer;
}

}  // namespace

draft_actor::behavior_type draft(draft_actor::stateful_pointer<DraftState> self, DraftSetup setup) {
  self->state.sequences.resize(setup.drafters.size());
  self->state.setup = std::move(setup);
  return {
      [self](propose_atom, DraftWork& work) -> caf::result<DraftAnswer> {
        try {
          return propose(self->state, work);
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::runtime_error, e.what());
        }
      },
  };
}

}  // namespace hive
