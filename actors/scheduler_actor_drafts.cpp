#include "actors/scheduler_actor_drafts.hpp"

#include <memory>

#include <caf/event_based_actor.hpp>

#include "actors/error_text.hpp"

namespace hive::scheduler_detail {

namespace {

// Sends the jobs of `proposals` (their seq, context and length set, the
// draft to come) to the draft actor; the answer fills in the drafts.
void ask(Self self, int rank, std::vector<Proposal> proposals, std::vector<DraftJob> jobs,
         bool ahead) {
  DraftWork work;
  work.rank = rank;
  work.jobs = std::move(jobs);
  for (const SequenceId id : self->state.proposals[static_cast<size_t>(rank)]->take_released())
    work.released.push_back(id);
  ++self->state.draft_work_pending;
  auto asked = std::make_shared<std::vector<Proposal>>(std::move(proposals));
  self->request(self->state.draft, caf::infinite, propose_atom_v, std::move(work))
      .then(
          [self, rank, asked, ahead](DraftAnswer& answer) {
            SchedulerState& st = self->state;
            --st.draft_work_pending;
            ProposalBook& book = *st.proposals[static_cast<size_t>(rank)];
            const Scheduler& scheduler = st.core->scheduler(rank);
            const size_t n = std::min(asked->size(), answer.token_ids.size());
            for (size_t i = 0; i < n; ++i) {
              Proposal& p = (*asked)[i];
              if (!scheduler.has_sequence(p.seq)) continue;  // ended meanwhile
              p.draft.token_ids = std::move(answer.token_ids[i]);
              if (i < answer.probs.size()) p.draft.probs = std::move(answer.probs[i]);
              book.add(std::move(p));
            }
            if (ahead) st.metrics.spec_proposed_ahead += static_cast<int64_t>(n);
            maybe_step(self);
          },
          [self](caf::error& err) {
            // The draft model failed: decode on without drafts.
            SchedulerState& st = self->state;
            --st.draft_work_pending;
            if (st.draft) {
              self->send_exit(st.draft, caf::exit_reason::user_shutdown);
              st.draft = nullptr;
              st.metrics.spec_draft_error = error_text(err);
            }
            maybe_step(self);
          });
}

}  // namespace

void start_drafts(Self self) {
  SchedulerState& st = self->state;
  if (st.setup.drafters.empty()) return;
  st.draft = self->spawn<caf::detached>(draft, DraftSetup{st.setup.draft_model, st.setup.drafters});
  // Whatever ends this actor ends the draft actor too: its thread would
  // otherwise keep the actor system alive.
  self->attach_functor([d = st.draft](const caf::error&) {
    caf::anon_send_exit(d, caf::exit_reason::user_shutdown);
  });
  for (int rank = 0; rank < st.core->num_ranks(); ++rank) {
    st.proposals.push_back(std::make_unique<ProposalBook>());
    st.core->set_drafter(rank, st.proposals.back().get());
  }
}

bool drafts_ready(Self self) {
  SchedulerState& st = self->state;
  if (st.proposals.empty()) return true;
  if (st.draft_work_pending > 0) return false;
  if (!st.draft || st.core->num_in_flight() > 0) return true;
  bool asked = false;
  for (int rank = 0; rank < st.core->num_ranks(); ++rank) {
    const ProposalBook& book = *st.proposals[static_cast<size_t>(rank)];
    const std::vector<DraftQuery> missing = book.missing(st.core->draft_queries(rank));
    if (missing.empty()) continue;
    std::vector<Proposal> proposals;
    std::vector<DraftJob> jobs;
    for (const DraftQuery& q : missing) {
      const Sequence& seq = *q.seq;
      proposals.push_back({seq.id, seq.num_known_tokens(), seq.num_known_tokens(), {}, {}});
      jobs.push_back({seq.id,
                      seq.sample_index,
                      seq.request->sampling,
                      {seq.token_ids.begin(), seq.token_ids.begin() + seq.num_known_tokens()},
                      q.max_tokens});
    }
    ask(self, rank, std::move(proposals), std::move(jobs), /*ahead=*/false);
    asked = true;
  }
  return !asked;
}

void propose_ahead(Self self, const CoreStep& step) {
  SchedulerState& st = self->state;
  if (!st.draft) return;
  for (size_t rank = 0; rank < step.plans.size(); ++rank) {
    const Scheduler& scheduler = st.core->scheduler(static_cast<int>(rank));
    std::vector<Proposal> proposals;
    std::vector<DraftJob> jobs;
    for (const ScheduledSequence& s : step.plans[rank].sequences) {
      if (s.num_draft_tokens == 0) continue;
      const Sequence& seq = scheduler.sequence(s.seq_id);
      const int64_t known = seq.num_known_tokens();
      const int64_t context = known + seq.num_draft_tokens;
      const auto tokens = seq.token_ids.begin();
      proposals.push_back({seq.id, context, known, {tokens + known, tokens + context}, {}});
      // The target's next token (guessed) and then a window like this one.
      jobs.push_back({seq.id,
                      seq.sample_index,
                      seq.request->sampling,
                      {tokens, tokens + context},
                      s.num_draft_tokens + 1});
    }
    if (!jobs.empty())
      ask(self, static_cast<int>(rank), std::move(proposals), std::move(jobs), /*ahead=*/true);
  }
}

}  // namespace hive::scheduler_detail
