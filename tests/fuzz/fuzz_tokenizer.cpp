// Tokenizers on arbitrary bytes. The first byte picks what the rest is:
//   0     a tokenizer.json, loaded; if it loads, it encodes and decodes its
//         own bytes
//   1, 2  text for the bundled byte-level BPE or the SentencePiece-style
//         fixture tokenizer: encoded (invalid UTF-8 included), then decoded
//         back, with and without special tokens
#include <span>
#include <string>

#include "base/error.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

void round_trip(const hive::Tokenizer& tokenizer, const std::string& text) {
  for (const bool special : {false, true}) {
    const std::vector<int32_t> ids = tokenizer.encode(text, special);
    // Every id the encoder gives is a token of the tokenizer (ids may be
    // sparse: a vocabulary of 6 may hold id 7).
    for (const int32_t id : ids)
      if (!tokenizer.id_to_token(id)) std::abort();
    volatile size_t length = tokenizer.decode(ids, special).size();
    (void)length;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const hive::Tokenizer byte_level =
      hive::Tokenizer::from_directory(HIVE_SOURCE_DIR "/models/hive-draft");
  static const hive::Tokenizer sentencepiece =
      hive::Tokenizer::from_directory(HIVE_SOURCE_DIR "/tests/data/tokenizers/sentencepiece_bpe");
  const std::string rest = hive::fuzz::text(data + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      try {
        round_trip(hive::Tokenizer::from_json(rest, "", "tokenizer.json"), rest);
      } catch (const hive::Error&) {
        // A clear error naming the file is the expected answer to a bad one.
      }
      break;
    case 1: round_trip(byte_level, rest); break;
    case 2: round_trip(sentencepiece, rest); break;
  }
  return 0;
}
