#pragma once
// Decoders turn token strings back into text: ByteLevel, Metaspace,
// ByteFallback, Fuse, Strip, Replace and Sequence, with Hugging Face's
// semantics. Each step maps the list of token strings to a new list; the
// decoded text is the concatenation of the last list.
#include <memory>
#include <string>
#include <vector>

#include "runtime/text/tokenizer/json_fields.hpp"

namespace hive::tokenizer {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
  // decode_chain without the UTF-8 repair: a token's own bytes, which may
  // be part of a character (what a grammar matcher walks).
  virtual void decode_chain_bytes(std::vector<std::string>& tokens) const { decode_chain(tokens); }
};

// nullptr for a null spec. Errors name `path` (e.g. "tokenizer.json: decoder").
std::unique_ptr<Decoder> make_decoder(const Json& spec, const std::string& path);

}  // namespace hive::tokenizer
