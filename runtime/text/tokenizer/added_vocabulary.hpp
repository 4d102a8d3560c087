#pragma once
// Added tokens: strings matched in the text before the model sees it.
// Tokens with normalized=false are found in the raw input, the others in
// each piece after normalization; lstrip/rstrip let a match swallow the
// whitespace beside it and single_word rejects matches inside a word.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "runtime/text/tokenizer/piece.hpp"
#include "runtime/text/tokenizer/string_map.hpp"
#include "runtime/text/tokenizer/token_trie.hpp"

namespace hive::tokenizer {

class BpeModel;
class Normalizer;

struct AddedToken {
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
  bool special = false;
};

class AddedVocabulary {
 public:
  // Adds or updates a token, with Hugging Face's ids: the id it already has,
  // else its id in the model vocabulary, else the next free id. Returns the id.
  int32_t add(const AddedToken& token, const BpeModel& model, const Normalizer* normalizer);

  // split_special_tokens: special tokens are then read as plain text.
  void set_split_special_tokens(bool split) { split_special_tokens_ = split; }

  // Cut the pieces without token ids around matches of the normalized=false
  // tokens (raw) or of the normalized=true ones (normalized).
  void split_raw(std::vector<Piece>& pieces) const { split(raw_trie_, pieces); }
  void split_normalized(std::vector<Piece>& pieces) const { split(normalized_trie_, pieces); }

  std::optional<int32_t> token_to_id(std::string_view content) const;
  const AddedToken* find(int32_t id) const;
  // What decode() shows for the token: its normalized form when it has one.
  const std::string* decode_form(int32_t id) const;
  bool is_special_content(std::string_view text) const;
  std::size_t size() const { return by_id_.size(); }
  // Added contents that are not in the model's vocabulary.
  std::size_t count_outside(const BpeModel& model) const;

 private:
  struct Entry {
    AddedToken token;
    std::optional<std::string> normalized_form;  // when normalizing changes the content
  };
  void split(const TokenTrie& trie, std::vector<Piece>& pieces) const;
  void rebuild_tries();

  std::map<int32_t, Entry> by_id_;
  StringMap<int32_t> by_content_;
  // Contents ever added as special; like Hugging Face's set, it only grows.
  std::unordered_set<std::string, StringHash, std::equal_to<>> special_contents_;
  TokenTrie raw_trie_;
  TokenTrie normalized_trie_;
  bool split_special_tokens_ = false;
};

}  // namespace hive::tokenizer
