#pragma once
// Normalizers rewrite a piece's text before pre-tokenization: NFC, NFD,
// NFKC, NFKD, Lowercase, Prepend, Replace, Strip, StripAccents and Sequence,
// with Hugging Face's semantics.
#include <memory>
#include <string>

#include "runtime/text/tokenizer/json_fields.hpp"
#include "runtime/text/tokenizer/piece.hpp"

namespace hive::tokenizer {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(Piece& piece) const = 0;
};

// nullptr for a null spec. Errors name `path` (e.g. "tokenizer.json: normalizer").
std::unique_ptr<Normalizer> make_normalizer(const Json& spec, const std::string& path);

}  // namespace hive::tokenizer
