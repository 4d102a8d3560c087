#include "runtime/text/tokenizer/token_trie.hpp"

#include <algorithm>

namespace hive::tokenizer {

TokenTrie::TokenTrie() : nodes_(1) {}

std::optional<int32_t> TokenTrie::child(int32_t node, unsigned char byte) const {
  const auto& children = nodes_[static_cast<std::size_t>(node)].children;
  const auto it =
      std::lower_bound(children.begin(), children.end(), byte,
                       [](const auto& entry, unsigned char b) { return entry.first < b; });
  if (it == children.end() || it->first != byte) return std::nullopt;
  return it->second;
}

void TokenTrie::insert(std::string_view key, int32_t value) {
  if (key.empty()) return;
  first_byte_[static_cast<unsigned char>(key[0])] = true;
  int32_t node = 0;
  for (const char c : key) {
    const auto byte = static_cast<unsigned char>(c);
    std::optional<int32_t> next = child(node, byte);
    if (!next) {
      next = static_cast<int32_t>(nodes_.size());
      nodes_.emplace_back();
      auto& children = nodes_[static_cast<std::size_t>(node)].children;
      children.insert(
          std::upper_bound(children.begin(), children.end(), byte,
                           [](unsigned char b, const auto& entry) { return b < entry.first; }),
          {byte, *next});
    }
    node = *next;
  }
  nodes_[static_cast<std::size_t>(node)].value = value;
}

std::vector<TrieMatch> TokenTrie::find_all(std::string_view text) const {
  std::vector<TrieMatch> matches;
  if (empty()) return matches;
  std::size_t start = 0;
  while (start < text.size()) {
    if (!first_byte_[static_cast<unsigned char>(text[start])]) {
      ++start;
      continue;
    }
    int32_t node = 0;
    std::optional<TrieMatch> longest;
    for (std::size_t pos = start; pos < text.size(); ++pos) {
      const std::optional<int32_t> next = child(node, static_cast<unsigned char>(text[pos]));
      if (!next) break;
      node = *next;
      if (const auto& value = nodes_[static_cast<std::size_t>(node)].value)
        longest = TrieMatch{start, pos + 1, *value};
    }
    if (!longest) {
      ++start;
      continue;
    }
    matches.push_back(*longest);
    start = longest->end;
  }
  return matches;
}

}  // namespace hive::tokenizer
