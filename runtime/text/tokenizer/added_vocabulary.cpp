#include "runtime/text/tokenizer/added_vocabulary.hpp"

#include <algorithm>

#include "runtime/text/tokenizer/bpe_model.hpp"
#include "runtime/text/tokenizer/normalizer.hpp"
#include "runtime/text/tokenizer/unicode.hpp"
#include "runtime/text/utf8.hpp"

namespace hive::tokenizer {
namespace {

// Rust regex \w$ and ^\w, and the \s*$ / ^\s* runs, as Hugging Face uses them.
bool ends_with_word(std::string_view text) {
  if (text.empty()) return false;
  std::size_t end = text.size();
  return is_word_char(utf8::previous_code_point(text, end));
}

bool starts_with_word(std::string_view text) {
  if (text.empty()) return false;
  std::size_t pos = 0;
  return is_word_char(utf8::next_code_point(text, pos));
}

std::size_t trailing_space_start(std::string_view text) {
  std::size_t end = text.size();
  while (end > 0) {
    std::size_t before = end;
    if (!is_whitespace(utf8::previous_code_point(text, before))) break;
    end = before;
  }
  return end;
}

std::size_t leading_space_end(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t after = pos;
    if (!is_whitespace(utf8::next_code_point(text, after))) break;
    pos = after;
  }
  return pos;
}

bool same_flags(const AddedToken& a, const AddedToken& b) {
  return a.content == b.content && a.single_word == b.single_word && a.lstrip == b.lstrip &&
         a.rstrip == b.rstrip && a.normalized == b.normalized && a.special == b.special;
}

}  // namespace

int32_t AddedVocabulary::add(const AddedToken& token, const BpeModel& model,
                             const Normalizer* normalizer) {
  if (const auto existing = token_to_id(token.content)) {
    if (same_flags(by_id_.at(*existing).token, token)) return *existing;
  }
  std::optional<int32_t> id = token_to_id(token.content);
  if (!id) id = model.token_to_id(token.content);
  if (!id) {
    const auto vocab_size = static_cast<int32_t>(model.vocab_size());
    const int32_t max_added = by_id_.empty() ? -1 : by_id_.rbegin()->first;
    id = by_id_.empty() ? vocab_size
                        : (max_added >= vocab_size || vocab_size == 0 ? max_added + 1 : vocab_size);
  }
  Entry entry{token, std::nullopt};
  if (token.normalized && normalizer != nullptr) {
    Piece piece{token.content, std::nullopt, true};
    normalizer->normalize(piece);
    if (piece.text != token.content) entry.normalized_form = std::move(piece.text);
  }
  by_content_.insert_or_assign(token.content, *id);
  if (token.special) special_contents_.insert(token.content);
  by_id_.insert_or_assign(*id, std::move(entry));
  rebuild_tries();
  return *id;
}

void AddedVocabulary::rebuild_tries() {
  raw_trie_ = TokenTrie();
  normalized_trie_ = TokenTrie();
  for (const auto& [id, entry] : by_id_) {
    if (entry.token.normalized)
      normalized_trie_.insert(entry.normalized_form.value_or(entry.token.content), id);
    else
      raw_trie_.insert(entry.token.content, id);
  }
}

std::optional<int32_t> AddedVocabulary::token_to_id(std::string_view content) const {
  const auto it = by_content_.find(content);
  if (it == by_content_.end()) return std::nullopt;
  return it->second;
}

const AddedToken* AddedVocabulary::find(int32_t id) const {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &it->second.token;
}

const std::string* AddedVocabulary::decode_form(int32_t id) const {
  const auto it = by_id_.find(id);
  if (it == by_id_.end()) return nullptr;
  return it->second.normalized_form ? &*it->second.normalized_form : &it->second.token.content;
}

std::size_t AddedVocabulary::count_outside(const BpeModel& model) const {
  std::size_t count = 0;
  for (const auto& [content, id] : by_content_) count += !model.token_to_id(content).has_value();
  return count;
}

bool AddedVocabulary::is_special_content(std::string_view text) const {
  return special_contents_.find(text) != special_contents_.end();
}

void AddedVocabulary::split(const TokenTrie& trie, std::vector<Piece>& pieces) const {
  if (trie.empty()) return;
  split_pieces(pieces, [&](Piece& piece, std::vector<Piece>& out) {
    const std::string_view text = piece.text;
    std::size_t done = 0;  // end of what has been emitted
    for (const TrieMatch& match : trie.find_all(text)) {
      const AddedToken& token = by_id_.at(match.value).token;
      if (split_special_tokens_ && is_special_content(token.content)) continue;
      std::size_t start = match.start, stop = match.end;
      if (token.single_word && ((start > 0 && ends_with_word(text.substr(0, start))) ||
                                (stop < text.size() && starts_with_word(text.substr(stop)))))
        continue;
      if (token.lstrip) start = std::max(trailing_space_start(text.substr(0, start)), done);
      if (token.rstrip) stop += leading_space_end(text.substr(stop));
      if (done < start)
        out.push_back(Piece{std::string(text.substr(done, start - done)), std::nullopt,
                            piece.at_input_start && done == 0});
      out.push_back(Piece{std::string(text.substr(start, stop - start)), match.value, false});
      done = stop;
    }
    if (done == 0) {
      out.push_back(std::move(piece));
      return;
    }
    if (done < text.size())
      out.push_back(Piece{std::string(text.substr(done)), std::nullopt, false});
  });
}

}  // namespace hive::tokenizer
