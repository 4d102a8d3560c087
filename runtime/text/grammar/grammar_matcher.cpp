#include "runtime/text/grammar/grammar_matcher.hpp"

#include <xgrammar/matcher.h>

#include "base/error.hpp"
#include "runtime/text/grammar/compiled_grammar_impl.hpp"

namespace hive {

struct GrammarMatcher::Impl {
  xgrammar::GrammarMatcher matcher;
  int32_t vocab_size;
};

GrammarMatcher::GrammarMatcher(const CompiledGrammar& grammar)
    : impl_(std::make_unique<Impl>(
          Impl{xgrammar::GrammarMatcher(grammar.impl().compiled, grammar.impl().stop_token_ids),
               grammar.vocab_size()})) {}

GrammarMatcher::GrammarMatcher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GrammarMatcher::~GrammarMatcher() = default;
GrammarMatcher::GrammarMatcher(GrammarMatcher&&) noexcept = default;
GrammarMatcher& GrammarMatcher::operator=(GrammarMatcher&&) noexcept = default;

int32_t GrammarMatcher::vocab_size() const {
  return impl_->vocab_size;
}

bool GrammarMatcher::fill_next_token_bitmask(std::span<int32_t> bitmask) {
  const int32_t words = bitmask_words(impl_->vocab_size);
  check(static_cast<int64_t>(bitmask.size()) == words, "grammar: the bitmask holds ",
        bitmask.size(), " words; vocab size ", impl_->vocab_size, " needs ", words);
  int64_t shape[1] = {words};
  DLTensor tensor{};
  tensor.data = bitmask.data();
  tensor.device = DLDevice{kDLCPU, 0};
  tensor.ndim = 1;
  tensor.dtype = xgrammar::GetBitmaskDLType();
  tensor.shape = shape;
  tensor.strides = nullptr;
  tensor.byte_offset = 0;
  return impl_->matcher.FillNextTokenBitmask(&tensor);
}

bool GrammarMatcher::accept_token(int32_t token_id) {
  if (token_id < 0 || token_id >= impl_->vocab_size) return false;
  return impl_->matcher.AcceptToken(token_id);
}

void GrammarMatcher::rollback(int num_tokens) {
  impl_->matcher.Rollback(num_tokens);
}
bool GrammarMatcher::is_terminated() const {
  return impl_->matcher.IsTerminated();
}
bool GrammarMatcher::can_terminate() const {
  return impl_->matcher.IsCompleted();
}

GrammarMatcher GrammarMatcher::fork() const {
  return GrammarMatcher(std::make_unique<Impl>(Impl{impl_->matcher.Fork(), impl_->vocab_size}));
}

bool GrammarMatcher::accept_bytes(const std::string& bytes) {
  return impl_->matcher.AcceptString(bytes);
}

}  // namespace hive
