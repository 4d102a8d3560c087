#pragma once
// Post-processors wrap an encoded sequence in the special tokens the model
// expects: TemplateProcessing ("<s> $A"), ByteLevel (offsets only: ids
// untouched) and Sequence. Only single sequences are encoded, so a
// template's "pair" is read for validity and not used.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/text/tokenizer/json_fields.hpp"

namespace hive::tokenizer {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Without add_special_tokens a template still places the sequence, but no special token.
  virtual void process(std::vector<int32_t>& ids, bool add_special_tokens) const = 0;
};

// nullptr for a null spec. Errors name `path` (e.g. "tokenizer.json: post_processor").
std::unique_ptr<PostProcessor> make_post_processor(const Json& spec, const std::string& path);

}  // namespace hive::tokenizer
