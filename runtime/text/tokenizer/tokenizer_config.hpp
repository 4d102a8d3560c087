#pragma once
// What tokenizer_config.json adds to tokenizer.json, as transformers 5 reads
// it: the named special tokens (bos, eos, ...), tokens listed in
// added_tokens_decoder, split_special_tokens. Its add_bos_token and
// add_eos_token are not read: transformers drops them when tokenizer.json
// exists, and tokenizer.json's post-processor decides.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/text/tokenizer/added_vocabulary.hpp"
#include "runtime/text/tokenizer/json_fields.hpp"

namespace hive::tokenizer {

struct TokenizerConfig {
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  // added_tokens_decoder, by id: each replaces the token of the same content.
  std::vector<AddedToken> added_tokens_decoder;
  // The named and extra special tokens, in the order transformers adds them;
  // only those not already added tokens are added (as special tokens).
  std::vector<AddedToken> special_tokens;
  bool split_special_tokens = false;
};

// An empty object (no tokenizer_config.json) gives the defaults.
TokenizerConfig parse_tokenizer_config(const Json& config, const std::string& path);

}  // namespace hive::tokenizer
