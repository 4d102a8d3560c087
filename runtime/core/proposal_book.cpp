#include "runtime/core/proposal_book.hpp"

#include <algorithm>

namespace hive {

void ProposalBook::add(Proposal proposal) {
  const SequenceId seq = proposal.seq;
  proposals_.insert_or_assign(seq, std::move(proposal));
}

int64_t ProposalBook::skipped(const Proposal& p, const Sequence& seq) {
  const int64_t known = seq.num_known_tokens();
  const auto proposed = static_cast<int64_t>(p.draft.token_ids.size());
  if (known < p.context_len || known > p.context_len + proposed) return -1;
  if (static_cast<int64_t>(p.assumed.size()) != p.context_len - p.checked_from) return -1;
  // Tokens before checked_from were known when the proposal was asked for,
  // and a known token never changes.
  const auto tokens = seq.token_ids.begin();
  if (!std::equal(p.assumed.begin(), p.assumed.end(), tokens + p.checked_from)) return -1;
  const int64_t skip = known - p.context_len;
  if (!std::equal(tokens + p.context_len, tokens + known, p.draft.token_ids.begin())) return -1;
  return skip;
}

std::vector<DraftQuery> ProposalBook::missing(std::span<const DraftQuery> queries) const {
  std::vector<DraftQuery> out;
  for (const DraftQuery& q : queries) {
    const auto it = proposals_.find(q.seq->id);
    const int64_t skip = it == proposals_.end() ? -1 : skipped(it->second, *q.seq);
    // A proposal made ahead whose tokens the target all took has no more.
    const bool spent = skip > 0 && skip == static_cast<int64_t>(it->second.draft.token_ids.size());
    if (skip < 0 || spent) out.push_back(q);
  }
  return out;
}

std::vector<Draft> ProposalBook::propose(std::span<const DraftQuery> queries) {
  std::vector<Draft> drafts(queries.size());
  for (size_t i = 0; i < queries.size(); ++i) {
    const auto it = proposals_.find(queries[i].seq->id);
    if (it == proposals_.end()) continue;
    const Draft& proposed = it->second.draft;
    const int64_t skip = skipped(it->second, *queries[i].seq);
    if (skip < 0) continue;
    const auto begin = static_cast<size_t>(skip);
    const size_t end =
        std::min(proposed.token_ids.size(), begin + static_cast<size_t>(queries[i].max_tokens));
    if (begin >= end) continue;
    drafts[i].token_ids.assign(proposed.token_ids.begin() + begin,
                               proposed.token_ids.begin() + end);
    if (!proposed.probs.empty())
      drafts[i].probs.assign(proposed.probs.begin() + begin, proposed.probs.begin() + end);
    if (skip > 0) ++num_served_ahead_;
  }
  return drafts;
}

void ProposalBook::release(SequenceId seq) {
  proposals_.erase(seq);
  released_.push_back(seq);
}

}  // namespace hive
