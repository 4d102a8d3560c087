#include "runtime/text/tokenizer/streaming_detokenizer.hpp"

#include <algorithm>

namespace hive {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
// A character has at most 4 bytes, so at most 4 tokens can be waiting for
// the rest of one: a window still ending in U+FFFD after more tokens than
// that changed it ends in a real U+FFFD (the model wrote one), and holding it
// back would stall the stream and re-decode an ever longer window.
constexpr int kMaxTokensPerCharacter = 4;
// However many tokens add nothing (skipped special tokens after a lone lead
// byte), the window is emitted at this length: each step decodes the whole
// window, so an unbounded one would make the stream quadratic.
constexpr std::size_t kMaxHeldTokens = 32;

// Whether `text` holds nothing that `prefix` does not already have.
bool adds_nothing(const std::string& prefix, const std::string& text) {
  return text.size() <= prefix.size() && prefix.starts_with(text);
}

// Where `text` stops agreeing with `prefix`, moved back to a character start.
std::size_t common_prefix_length(const std::string& prefix, const std::string& text) {
  std::size_t length = 0;
  while (length < prefix.size() && length < text.size() && prefix[length] == text[length]) ++length;
  while (length > 0 && length < text.size() &&
         (static_cast<unsigned char>(text[length]) & 0xC0) == 0x80)
    --length;
  return length;
}

}  // namespace

StreamingDetokenizer::StreamingDetokenizer(Tokenizer tokenizer, bool skip_special_tokens)
    : tokenizer_(std::move(tokenizer)), skip_special_tokens_(skip_special_tokens) {}

void StreamingDetokenizer::prime(std::span<const int32_t> context) {
  ids_.clear();
  prefix_.clear();
  prefix_index_ = 0;
  num_held_ = 0;
  held_text_.clear();
  const auto text_of = [&](std::span<const int32_t> ids) {
    return tokenizer_.decode(std::vector<int32_t>(ids.begin(), ids.end()), skip_special_tokens_);
  };
  // Trailing ids of a character the context leaves unfinished stay pending:
  // the new ids may finish it, and the whole character is then new text.
  // Decoded from the start: a byte-fallback decoder replaces a whole run of
  // byte tokens when any of it is invalid, so a window starting inside a
  // character says nothing about how the context ends.
  size_t pending = 0;
  const size_t max_pending = std::min<size_t>(context.size(), kMaxTokensPerCharacter);
  while (pending < max_pending &&
         text_of(context.first(context.size() - pending)).ends_with(kReplacement))
    ++pending;
  if (pending == max_pending &&
      (pending == context.size() ||
       text_of(context.first(context.size() - pending)).ends_with(kReplacement)))
    pending = 0;  // no finished character in reach: the U+FFFD is the text
  // Context: the fewest ids before those that decode to whole characters,
  // and to some text (a skipped special token decodes to none).
  const std::span<const int32_t> done = context.first(context.size() - pending);
  size_t n = std::min<size_t>(done.size(), 1);
  prefix_ = text_of(done.last(n));
  while (n < done.size() && (prefix_.empty() || prefix_.ends_with(kReplacement)))
    prefix_ = text_of(done.last(++n));
  ids_.assign(done.data() + (done.size() - n), context.data() + context.size());
  prefix_index_ = n;
}

std::string StreamingDetokenizer::step(int32_t id) {
  if (prefix_.empty() && !ids_.empty()) {
    // The context decoded to nothing (say, a skipped special token): retry it.
    std::string context = tokenizer_.decode(ids_, skip_special_tokens_);
    if (!context.ends_with(kReplacement)) {
      prefix_ = std::move(context);
      prefix_index_ = ids_.size();
    }
  }
  ids_.push_back(id);
  const std::string text = tokenizer_.decode(ids_, skip_special_tokens_);
  if (adds_nothing(prefix_, text)) return {};
  if (text.ends_with(kReplacement)) {
    // Only tokens that change the text count (a skipped special token adds
    // no byte and cannot complete a character).
    if (text != held_text_) {
      ++num_held_;
      held_text_ = text;
    }
    if (num_held_ <= kMaxTokensPerCharacter && ids_.size() - prefix_index_ <= kMaxHeldTokens)
      return {};
  }
  num_held_ = 0;
  held_text_.clear();
  // A valid window always extends its context; invalid byte-fallback UTF-8
  // can rewrite it, and then only what differs is new (see the header).
  const std::size_t agreed =
      text.starts_with(prefix_) ? prefix_.size() : common_prefix_length(prefix_, text);
  std::string fresh = text.substr(agreed);
  const std::size_t new_prefix_index = ids_.size() - prefix_index_;
  ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(prefix_index_));
  prefix_ = tokenizer_.decode(ids_, skip_special_tokens_);
  prefix_index_ = new_prefix_index;
  return fresh;
}

std::string StreamingDetokenizer::finish() {
  const std::string text = tokenizer_.decode(ids_, skip_special_tokens_);
  std::string rest;
  if (!adds_nothing(prefix_, text)) {
    const std::size_t agreed =
        text.starts_with(prefix_) ? prefix_.size() : common_prefix_length(prefix_, text);
    rest = text.substr(agreed);
  }
  ids_.clear();
  prefix_.clear();
  prefix_index_ = 0;
  num_held_ = 0;
  held_text_.clear();
  return rest;
}

}  // namespace hive
