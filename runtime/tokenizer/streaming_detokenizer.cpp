#include "runtime/tokenizer/streaming_detokenizer.hpp"

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
  // The fewest last ids (up to one character's worth) that decode to whole
  // characters: one is enough for a leading space.
  for (size_t n = 1; n <= std::min<size_t>(context.size(), kMaxTokensPerCharacter); ++n) {
    ids_.assign(context.end() - static_cast<std::ptrdiff_t>(n), context.end());
    prefix_ = tokenizer_.decode(ids_, skip_special_tokens_);
    if (!prefix_.ends_with(kReplacement)) break;
  }
  prefix_index_ = ids_.size();
  num_held_ = 0;
  held_text_.clear();
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
