#pragma once
// BlockPool: the fixed set of KV-cache blocks of one memory (a device, or the
// host swap space) and their bookkeeping: reference counts, the free queue in
// eviction order and the prefix-cache map from block hash to block. It knows
// nothing of sequences; KVCacheManager builds block tables on top of it.
//
//   block ids:  0      1   2   3   4   5   6   7
//               null   └──────── allocatable ───────┘
//
//   free_block_queue (front is reused first):  5 ⇄ 2 ⇄ 7 ⇄ 3
//     allocate(n)        pops n from the front; a popped block that still has
//                        a hash leaves the prefix cache (it is overwritten)
//     release(blocks)    a block whose ref count drops to 0 joins the back and
//                        keeps its hash: it can be hit until it is reused (LRU)
//     add_reference(..)  a prefix hit on a free block takes it out of the queue
//
// Block 0 is the null block: never handed out, never counted, never freed. A
// block table holds it where a position will not be read again (outside a
// sliding window), and the host pool uses it the same way.
#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace hive {

// What a full block's K/V depend on: the cache entry of the block before it
// (kRootEntry for a sequence's first block), its token ids and the request's
// extra keys (anything else that changes the K/V, e.g. a cache salt). A hit
// compares the whole key, not just its hash: a 64-bit hash can be made to
// collide on purpose, and a forged hit would hand one request K/V computed
// from another's tokens.
inline constexpr int64_t kRootEntry = 0;
struct BlockKey {
  int64_t parent = kRootEntry;
  std::vector<int32_t> token_ids;
  std::vector<uint64_t> extra_keys;
  bool operator==(const BlockKey&) const = default;
};

using BlockHash = uint64_t;
BlockHash hash_key(const BlockKey& key);

// A doubly linked list of block ids with O(1) push_back, pop_front and remove.
class FreeBlockQueue {
 public:
  explicit FreeBlockQueue(int32_t num_blocks);
  void push_back(int32_t block);
  int32_t pop_front();
  void remove(int32_t block);
  bool contains(int32_t block) const { return in_queue_[static_cast<size_t>(block)]; }
  int32_t size() const { return size_; }
  std::vector<int32_t> to_vector() const;  // front to back

 private:
  static constexpr int32_t kNone = -1;
  std::vector<int32_t> prev_, next_;
  std::vector<bool> in_queue_;
  int32_t head_ = kNone, tail_ = kNone, size_ = 0;
};

class BlockPool {
 public:
  static constexpr int32_t kNullBlock = 0;

  // num_blocks includes the null block, so it must be >= 2.
  explicit BlockPool(int32_t num_blocks);

  int32_t num_blocks() const { return static_cast<int32_t>(ref_counts_.size()); }
  int32_t num_allocatable_blocks() const { return num_blocks() - 1; }
  int32_t num_free_blocks() const { return free_block_queue_.size(); }
  int32_t ref_count(int32_t block) const;
  // Free block ids from the next to be reused to the last.
  std::vector<int32_t> free_block_queue() const { return free_block_queue_.to_vector(); }
  int64_t num_evictions() const { return num_evictions_; }

  // Takes n blocks off the front of the free queue, each with ref count 1.
  // Needs n <= num_free_blocks(); callers ask first.
  std::vector<int32_t> allocate(int32_t n);
  // One more reference to each block (a prefix hit or a fork). Null entries
  // are skipped.
  void add_reference(std::span<const int32_t> blocks);
  // One reference less on each block; blocks reaching 0 join the back of the
  // free queue in the order given. Null entries are skipped.
  void release(std::span<const int32_t> blocks);

  // Prefix cache: a cache entry (an id never reused) names one block's
  // contents; the entries after it name it as their parent.
  struct CachedBlock {
    int32_t block = 0;
    int64_t entry = 0;
  };
  // The block holding exactly `key`, if any.
  std::optional<CachedBlock> cached_block(const BlockKey& key) const;
  // Records that `block` (full, in use) holds `key` and returns the entry
  // that now names those contents: this block's, or that of another block
  // already holding them (the cache keeps that one). Keys that share a hash
  // are all kept: a forged collision cannot keep other contents out.
  int64_t cache_block(int32_t block, BlockKey key);
  // The entry of a cached block.
  std::optional<int64_t> block_entry(int32_t block) const;

 private:
  void check_block(int32_t block, const char* what) const;

  struct Entry {
    int64_t id = 0;
    BlockHash hash = 0;
    BlockKey key;
  };

  std::vector<int32_t> ref_counts_;
  std::vector<std::optional<Entry>> entries_;  // per block, while it is cached
  FreeBlockQueue free_block_queue_;
  std::unordered_multimap<BlockHash, int32_t> cached_blocks_;
  int64_t next_entry_ = kRootEntry + 1;
  int64_t num_evictions_ = 0;
};

}  // namespace hive
