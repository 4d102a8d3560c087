#pragma once
// SentencePiece's word marker: spaces become "▁" (U+2581), a "▁" may be
// prepended, and the text may be cut before each "▁". The decoder turns the
// marks back into spaces. Both directions read the same tokenizer.json fields.
#include <string>
#include <vector>

#include "runtime/text/tokenizer/json_fields.hpp"
#include "runtime/text/tokenizer/piece.hpp"

namespace hive::tokenizer {

enum class PrependScheme { First, Never, Always };

class Metaspace {
 public:
  static Metaspace from_json(const Json& spec, const std::string& path);

  // Appends the parts of `piece` (rewritten in place first) to out.
  void pre_tokenize(Piece& piece, std::vector<Piece>& out) const;

  // Marks become spaces, except in the first token when a prefix was
  // prepended, where they are dropped.
  void decode_chain(std::vector<std::string>& tokens) const;

 private:
  char32_t replacement_ = 0x2581;
  std::string replacement_text_;
  PrependScheme prepend_scheme_ = PrependScheme::Always;
  bool split_ = true;
};

}  // namespace hive::tokenizer
