#pragma once
// Tokenizer's parts (internal to runtime/text/tokenizer).
#include <memory>
#include <optional>

#include "runtime/text/tokenizer/added_vocabulary.hpp"
#include "runtime/text/tokenizer/bpe_model.hpp"
#include "runtime/text/tokenizer/decoder.hpp"
#include "runtime/text/tokenizer/normalizer.hpp"
#include "runtime/text/tokenizer/post_processor.hpp"
#include "runtime/text/tokenizer/pre_tokenizer.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

namespace hive {

struct Tokenizer::Impl {
  std::unique_ptr<tokenizer::Normalizer> normalizer;
  std::unique_ptr<tokenizer::PreTokenizer> pre_tokenizer;
  std::unique_ptr<tokenizer::BpeModel> model;
  std::unique_ptr<tokenizer::PostProcessor> post_processor;
  std::unique_ptr<tokenizer::Decoder> decoder;
  tokenizer::AddedVocabulary added;
  std::optional<int32_t> bos_id;
  std::optional<int32_t> eos_id;

  // The token string decode() starts from; null for an unknown id.
  const std::string* token_string(int32_t id) const;
};

}  // namespace hive
