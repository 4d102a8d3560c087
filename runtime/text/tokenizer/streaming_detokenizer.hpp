#pragma once
// Text from token ids as they arrive, for streaming responses. Each step
// returns the new text (possibly empty) and never ends inside a UTF-8
// sequence: a token that completes only part of a character is held back
// until the character is complete.
//
// It follows Hugging Face's DecodeStream: decode a short window of ids (the
// ids of the last emitted chunk, as context, plus the new ones) and emit
// what extends the window's previous text. Context matters: SentencePiece
// decoders drop the first token's leading space, and a window that starts
// one token earlier keeps the space where it belongs.
//
//   ids:     [▁Hello]   [▁world]          [<0xE4>][<0xBD>][<0xA0>]
//   window:  ▁Hello     ▁Hello ▁world     ▁world <0xE4>...    (held: "�" at the end)
//   emitted: "Hello"    " world"          ""      ""     " 你"
//
// A window that still ends in U+FFFD after more than 4 tokens changed it
// (more than one character can span) ends in a real U+FFFD and is emitted.
//
// The chunks, then finish(), concatenate to decode(all ids). One exception,
// where Hugging Face's DecodeStream raises instead: byte-fallback ids that
// are not valid UTF-8 can turn already emitted text into U+FFFD; the stream
// then keeps going and differs from decode() in those replacement characters.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/text/tokenizer/tokenizer.hpp"

namespace hive {

class StreamingDetokenizer {
 public:
  StreamingDetokenizer(Tokenizer tokenizer, bool skip_special_tokens);

  // Starts over with the end of `context` (the prompt) as the window's
  // context, not emitted, so the first new token decodes as it does after
  // the prompt: a SentencePiece decoder drops the leading space of a
  // window's first token, which would glue the first generated word onto the
  // prompt. A character the context leaves unfinished is new text once the
  // new ids finish it (a context ending in a U+FFFD of its own is taken for
  // one, and that U+FFFD is emitted again).
  void prime(std::span<const int32_t> context);
  // The text this id adds; empty while it is held back.
  std::string step(int32_t id);
  // Whatever is still held back (an unfinished character comes out as U+FFFD).
  std::string finish();

 private:
  Tokenizer tokenizer_;
  bool skip_special_tokens_;
  std::vector<int32_t> ids_;  // the window: context ids, then pending ones
  std::string prefix_;        // decode of the context ids
  std::size_t prefix_index_ = 0;
  // While the window ends in U+FFFD: how many tokens changed it, and its
  // text after the last of them.
  int num_held_ = 0;
  std::string held_text_;
};

}  // namespace hive
