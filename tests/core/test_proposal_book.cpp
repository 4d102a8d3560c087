// The ProposalBook serves a draft only while the sequence's known tokens
// follow the proposal: exactly its context, or its context and the first
// of its own tokens (a proposal made a window ahead whose drafts and guessed
// next token the target all took). Anything else is a miss.
#include <gtest/gtest.h>

#include <memory>

#include "runtime/core/proposal_book.hpp"

namespace hive {
namespace {

Sequence make_sequence(SequenceId id, std::vector<int32_t> tokens) {
  auto request = std::make_shared<Request>();
  request->id = "r";
  Sequence seq(id, std::move(request), 0);
  seq.token_ids = std::move(tokens);
  seq.num_prompt_tokens = 2;
  return seq;
}

Proposal proposal(SequenceId id, int64_t context_len, int64_t checked_from,
                  std::vector<int32_t> assumed, std::vector<int32_t> draft) {
  Proposal p{id, context_len, checked_from, std::move(assumed), {}};
  p.draft.token_ids = std::move(draft);
  return p;
}

std::vector<int32_t> served(ProposalBook& book, const Sequence& seq, int max_tokens) {
  const DraftQuery q{&seq, max_tokens};
  return book.propose({&q, 1})[0].token_ids;
}

bool missing(const ProposalBook& book, const Sequence& seq) {
  const DraftQuery q{&seq, 4};
  return !book.missing({&q, 1}).empty();
}

TEST(ProposalBook, ServesAProposalForExactlyItsContext) {
  ProposalBook book;
  Sequence seq = make_sequence(1, {5, 6, 7});
  EXPECT_TRUE(missing(book, seq));
  book.add(proposal(1, 3, 3, {}, {8, 9, 10}));
  EXPECT_FALSE(missing(book, seq));
  EXPECT_EQ(served(book, seq, 4), (std::vector<int32_t>{8, 9, 10}));
  EXPECT_EQ(served(book, seq, 2), (std::vector<int32_t>{8, 9}));  // the control's length
  EXPECT_EQ(book.num_served_ahead(), 0);
}

TEST(ProposalBook, AProposalMadeAheadServesWhenTheTargetTookItsGuess) {
  ProposalBook book;
  // Known: 5 6 7; the step in flight verifies drafts 8 9. Asked ahead: the
  // context 5 6 7 8 9 (8 9 assumed), proposing the target's next (4) and
  // the window after it (11 12).
  book.add(proposal(1, 5, 3, {8, 9}, {4, 11, 12}));
  // The target took both drafts and sampled 4: the next draft is 11 12.
  Sequence all = make_sequence(1, {5, 6, 7, 8, 9, 4});
  EXPECT_FALSE(missing(book, all));
  EXPECT_EQ(served(book, all, 4), (std::vector<int32_t>{11, 12}));
  EXPECT_EQ(book.num_served_ahead(), 1);
  // It sampled another token after them: the guess is thrown away.
  Sequence other_token = make_sequence(1, {5, 6, 7, 8, 9, 3});
  EXPECT_TRUE(missing(book, other_token));
  EXPECT_TRUE(served(book, other_token, 4).empty());
  // It rejected draft 9 (and sampled 4 in its place): the context differs.
  Sequence rejected = make_sequence(1, {5, 6, 7, 8, 4});
  EXPECT_TRUE(missing(book, rejected));
  EXPECT_TRUE(served(book, rejected, 4).empty());
  // It took all the proposal's tokens: nothing left to serve.
  Sequence spent = make_sequence(1, {5, 6, 7, 8, 9, 4, 11, 12});
  EXPECT_TRUE(missing(book, spent));
  EXPECT_EQ(book.num_served_ahead(), 1);
}

TEST(ProposalBook, AnEmptyProposalForTheContextIsNotMissing) {
  // The draft had nothing (or no room): asking again would get the same.
  ProposalBook book;
  Sequence seq = make_sequence(1, {5, 6, 7});
  book.add(proposal(1, 3, 3, {}, {}));
  EXPECT_FALSE(missing(book, seq));
  EXPECT_TRUE(served(book, seq, 4).empty());
}

TEST(ProposalBook, ServesTheDistributionsOfTheTokensItServes) {
  ProposalBook book;
  Proposal p = proposal(1, 3, 3, {}, {4, 11, 12});
  p.draft.probs = {{0.1f}, {0.2f}, {0.3f}};
  book.add(std::move(p));
  Sequence seq = make_sequence(1, {5, 6, 7, 4});
  const DraftQuery q{&seq, 1};
  const Draft d = book.propose({&q, 1})[0];
  EXPECT_EQ(d.token_ids, (std::vector<int32_t>{11}));
  ASSERT_EQ(d.probs.size(), 1u);
  EXPECT_EQ(d.probs[0], (std::vector<float>{0.2f}));
}

TEST(ProposalBook, ReleasedSequencesLoseTheirProposalAndAreReported) {
  ProposalBook book;
  Sequence seq = make_sequence(1, {5, 6, 7});
  book.add(proposal(1, 3, 3, {}, {8}));
  book.release(1);
  EXPECT_TRUE(missing(book, seq));
  EXPECT_EQ(book.take_released(), (std::vector<SequenceId>{1}));
  EXPECT_TRUE(book.take_released().empty());
}

}  // namespace
}  // namespace hive
