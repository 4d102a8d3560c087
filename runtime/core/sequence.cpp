#include "runtime/core/sequence.hpp"

#include <tuple>
#include <utility>

namespace hive {

Sequence::Sequence(SequenceId id_, std::shared_ptr<const Request> request_, int64_t arrival_)
    : id(id_),
      request(std::move(request_)),
      arrival(arrival_),
      token_ids(request->prompt_token_ids),
      num_prompt_tokens(static_cast<int64_t>(request->prompt_token_ids.size())) {}

bool Sequence::runs_before(const Sequence& other, bool by_priority) const {
  const int mine = by_priority ? request->priority : 0;
  const int theirs = by_priority ? other.request->priority : 0;
  return std::tie(mine, arrival, sample_index, id) <
         std::tie(theirs, other.arrival, other.sample_index, other.id);
}

}  // namespace hive
