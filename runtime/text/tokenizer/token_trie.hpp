#pragma once
// A byte trie over the added tokens' contents, found leftmost-longest: the
// earliest match wins, and of those starting there, the longest (Hugging
// Face's Aho-Corasick match kind). "<|im_start|>" beats "<|im" at the same offset.
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace hive::tokenizer {

struct TrieMatch {
  std::size_t start = 0;
  std::size_t end = 0;
  int32_t value = 0;
};

class TokenTrie {
 public:
  TokenTrie();
  void insert(std::string_view key, int32_t value);
  bool empty() const { return nodes_.size() == 1; }
  // Non-overlapping matches, left to right.
  std::vector<TrieMatch> find_all(std::string_view text) const;

 private:
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> children;  // sorted by byte
    std::optional<int32_t> value;                             // set where a key ends
  };
  std::optional<int32_t> child(int32_t node, unsigned char byte) const;

  std::vector<Node> nodes_;
  std::array<bool, 256> first_byte_{};  // bytes some key starts with: a quick skip
};

}  // namespace hive::tokenizer
