// The BPE merge loop and its per-thread word cache.
#include <queue>

#include "base/error.hpp"
#include "runtime/text/tokenizer/bpe_model.hpp"
#include "runtime/text/utf8.hpp"

namespace hive::tokenizer {
namespace {

// A symbol of the word being merged, in a linked list over a vector so that
// merging never moves memory. A merged-away symbol has length 0.
struct Symbol {
  int32_t id = 0;
  int32_t prev = -1;
  int32_t next = -1;
  uint32_t length = 0;  // bytes of the word it covers
};

struct QueuedMerge {
  int32_t rank = 0;
  int32_t pos = 0;
  int32_t new_id = 0;
};

// Lowest rank first, then leftmost.
struct Later {
  bool operator()(const QueuedMerge& a, const QueuedMerge& b) const {
    return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
  }
};

// Words repeat a lot in text, so each thread keeps the ids of the words it
// merged (Hugging Face keeps a per-thread cache too). One cache per thread,
// for the model it last served; no lock on the encode path.
struct WordCache {
  uint64_t owner = 0;
  StringMap<std::vector<int32_t>> words;
};
constexpr std::size_t kCacheCapacity = 32768;  // words; the cache restarts when full
constexpr std::size_t kMaxCachedWordBytes = 256;

WordCache& thread_cache(uint64_t owner) {
  thread_local WordCache cache;
  if (cache.owner != owner) {
    cache.words.clear();
    cache.owner = owner;
  }
  return cache;
}

}  // namespace

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& ids) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    if (const auto id = token_to_id(word)) {
      ids.push_back(*id);
      return;
    }
  }
  if (word.size() >= kMaxCachedWordBytes) {
    merge_word(word, ids);
    return;
  }
  WordCache& cache = thread_cache(cache_owner_);
  if (const auto hit = cache.words.find(word); hit != cache.words.end()) {
    ids.insert(ids.end(), hit->second.begin(), hit->second.end());
    return;
  }
  const std::size_t first = ids.size();
  merge_word(word, ids);
  if (cache.words.size() >= kCacheCapacity) cache.words.clear();
  cache.words.emplace(
      std::string(word),
      std::vector<int32_t>(ids.begin() + static_cast<std::ptrdiff_t>(first), ids.end()));
}

// One symbol per character; unknown characters become their <0xXX> byte
// tokens (byte_fallback) or the unknown token (fused into one when fuse_unk),
// or are dropped when the model has neither -- all as Hugging Face does.
void BpeModel::initial_symbols(std::string_view word, std::vector<int32_t>& ids,
                               std::vector<uint32_t>& lengths) const {
  std::optional<std::pair<int32_t, uint32_t>> pending_unk;
  std::string affixed;
  std::size_t pos = 0;
  while (pos < word.size()) {
    const std::size_t start = pos;
    pos += utf8::sequence_length(static_cast<unsigned char>(word[pos]));
    const auto byte_length = static_cast<uint32_t>(pos - start);
    std::string_view symbol = word.substr(start, pos - start);
    const bool prefixed = start > 0 && !continuing_subword_prefix_.empty();
    const bool suffixed = pos == word.size() && !end_of_word_suffix_.empty();
    if (prefixed || suffixed) {
      affixed = prefixed ? continuing_subword_prefix_ : std::string();
      affixed.append(symbol);
      if (suffixed) affixed.append(end_of_word_suffix_);
      symbol = affixed;
    }
    if (const auto id = token_to_id(symbol)) {
      if (pending_unk) {
        ids.push_back(pending_unk->first);
        lengths.push_back(pending_unk->second);
        pending_unk.reset();
      }
      ids.push_back(*id);
      lengths.push_back(byte_length);
      continue;
    }
    if (byte_fallback_) {
      bool all_bytes_known = true;
      for (const char c : symbol)
        all_bytes_known &= byte_tokens_[static_cast<unsigned char>(c)].has_value();
      if (all_bytes_known) {
        // A pending unknown token stays pending here, as in Hugging Face.
        for (const char c : symbol) {
          ids.push_back(*byte_tokens_[static_cast<unsigned char>(c)]);
          lengths.push_back(1);
        }
        continue;
      }
    }
    if (!unk_token_) continue;
    const auto unk_id = token_to_id(*unk_token_);
    check(unk_id.has_value(), "tokenizer.json: model.unk_token: \"", *unk_token_,
          "\" is not in model.vocab");
    if (pending_unk && fuse_unk_) {
      pending_unk->second += byte_length;
      continue;
    }
    if (pending_unk) {
      ids.push_back(pending_unk->first);
      lengths.push_back(pending_unk->second);
    }
    pending_unk.emplace(*unk_id, byte_length);
  }
  if (pending_unk) {
    ids.push_back(pending_unk->first);
    lengths.push_back(pending_unk->second);
  }
}

void BpeModel::merge_word(std::string_view word, std::vector<int32_t>& ids) const {
  std::vector<int32_t> symbol_ids;
  std::vector<uint32_t> lengths;
  initial_symbols(word, symbol_ids, lengths);
  const auto count = static_cast<int32_t>(symbol_ids.size());
  std::vector<Symbol> symbols(symbol_ids.size());
  std::priority_queue<QueuedMerge, std::vector<QueuedMerge>, Later> queue;
  for (int32_t i = 0; i < count; ++i) {
    symbols[i] = Symbol{symbol_ids[i], i - 1, i + 1 < count ? i + 1 : -1, lengths[i]};
    if (i + 1 < count)
      if (const Merge* merge = find_merge(symbol_ids[i], symbol_ids[i + 1]))
        queue.push(QueuedMerge{merge->rank, i, merge->new_id});
  }
  while (!queue.empty()) {
    const QueuedMerge top = queue.top();
    queue.pop();
    Symbol& current = symbols[top.pos];
    if (current.length == 0 || current.next == -1) continue;
    const Symbol right = symbols[current.next];
    // Entries go stale when a neighbour merged first; Hugging Face checks the
    // pair still produces the queued token.
    const Merge* merge = find_merge(current.id, right.id);
    if (merge == nullptr || merge->new_id != top.new_id) continue;
    symbols[current.next].length = 0;
    current.id = top.new_id;
    current.length += right.length;
    current.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    if (current.prev >= 0)
      if (const Merge* left = find_merge(symbols[current.prev].id, current.id))
        queue.push(QueuedMerge{left->rank, current.prev, left->new_id});
    if (current.next >= 0)
      if (const Merge* next = find_merge(current.id, symbols[current.next].id))
        queue.push(QueuedMerge{next->rank, top.pos, next->new_id});
  }
  for (const Symbol& symbol : symbols)
    if (symbol.length != 0) ids.push_back(symbol.id);
}

}  // namespace hive::tokenizer
