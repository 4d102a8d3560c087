#pragma once
// The BPE model: a vocabulary and ranked merges. A word starts as one symbol
// per character (or per byte, through <0xXX> tokens, with byte_fallback);
// the lowest-ranked adjacent pair is merged until no pair has a merge, ties
// going to the leftmost pair -- Hugging Face's algorithm, step for step.
//
//   "lower"  l o w e r  --(l,o)-->  lo w e r  --(lo,w)-->  low e r  --(e,r)-->  low er
//
// Results are cached per word, per thread (see bpe_model.cpp).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/text/tokenizer/json_fields.hpp"
#include "runtime/text/tokenizer/string_map.hpp"

namespace hive::tokenizer {

class BpeModel {
 public:
  // Reads a "model" object of type BPE; errors name `path` and the field.
  static std::unique_ptr<BpeModel> from_json(const Json& spec, const std::string& path);

  // Appends the ids of one word (a pre-tokenized piece).
  void tokenize(std::string_view word, std::vector<int32_t>& ids) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  const std::string* id_to_token(int32_t id) const;
  std::size_t vocab_size() const { return vocab_.size(); }

 private:
  struct Merge {
    int32_t rank = 0;
    int32_t new_id = 0;
  };

  BpeModel() = default;
  void read_merges(const Json& merges, const std::string& path);
  void merge_word(std::string_view word, std::vector<int32_t>& ids) const;
  void initial_symbols(std::string_view word, std::vector<int32_t>& ids,
                       std::vector<uint32_t>& lengths) const;
  const Merge* find_merge(int32_t left, int32_t right) const;

  StringMap<int32_t> vocab_;
  std::vector<const std::string*> id_to_token_;  // into vocab_'s keys; null for unused ids
  std::unordered_map<uint64_t, Merge> merges_;
  std::optional<std::string> unk_token_;
  std::string continuing_subword_prefix_;
  std::string end_of_word_suffix_;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  std::vector<std::optional<int32_t>> byte_tokens_;  // <0xXX> ids, with byte_fallback
  uint64_t cache_owner_ = 0;  // identifies this model in the per-thread caches
};

}  // namespace hive::tokenizer
