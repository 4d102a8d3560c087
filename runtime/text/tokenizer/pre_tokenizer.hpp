#pragma once
// Pre-tokenizers cut normalized pieces into the words the model sees one at
// a time: Split (regex or string, every delimiter behaviour, invert),
// ByteLevel, Metaspace, Digits and Sequence, with Hugging Face's semantics.
#include <memory>
#include <string>
#include <vector>

#include "runtime/text/tokenizer/json_fields.hpp"
#include "runtime/text/tokenizer/piece.hpp"

namespace hive::tokenizer {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces each piece without a token id by its parts.
  virtual void pre_tokenize(std::vector<Piece>& pieces) const = 0;
};

// nullptr for a null spec. Errors name `path` (e.g. "tokenizer.json: pre_tokenizer").
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const Json& spec, const std::string& path);

}  // namespace hive::tokenizer
