#pragma once
// KVCacheManager: block tables of sequences over a BlockPool, with prefix
// caching, copy-on-write forks and swapping to a host pool. Pure bookkeeping:
// it decides which blocks hold which tokens and which block copies must run;
// the copies themselves run on the worker (PagedKVCache).
//
// allocate(seq, num_new_tokens, hit), block_size 4:
//
//   positions  0 1 2 3 | 4 5 6 7 | 8 9 . . | . . . .
//              └ prefix-cache hit ┘└ computed┘
//                                      └─ new tokens ─┘
//   block table [  b3   |   b7    |   b1    |   b6    ]
//                 hit      hit      own:     new block
//                                   copied first if shared (copy-on-write)
//
//   - a hit's blocks gain a reference (a free one leaves the free queue);
//   - a partly filled last block with ref count > 1 (shared by a fork) is
//     replaced by a fresh copy before this sequence appends to it;
//   - new blocks cover the positions up to num_computed + num_new;
//   - with prefix caching, every block that becomes full is registered
//     under its key (the entry of the block before it, its tokens), so later
//     requests can hit it;
//   - with a sliding window, blocks that no future query can see are
//     released and replaced by the null block.
//
// Freeing releases a table's blocks tail first, so a sequence's last blocks
// are evicted before its first ones (the shared prefix stays longest).
#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "runtime/core/block_pool.hpp"
#include "runtime/core/sequence.hpp"

namespace hive {

// The KV manager's own parameters, derived by engine_core_config from the
// kv_cache settings (EngineConfig) and the pool sizing; block_size has no
// default here so that kv_cache.block_size's is the only one.
struct KVCacheConfig {
  int32_t block_size = 0;
  int32_t num_device_blocks = 0;  // including the null block
  int32_t num_host_blocks = 0;    // swap space including its null block; 0: no swapping
  bool enable_prefix_caching = false;
  int64_t sliding_window = 0;  // 0: full attention
};

// Throws hive::Error naming the first bad field.
void validate(const KVCacheConfig& config);

struct BlockCopy {
  int32_t src = 0;
  int32_t dst = 0;
  bool operator==(const BlockCopy&) const = default;
};

struct PrefixHit {
  std::vector<int32_t> blocks;   // full cached blocks from the start of the sequence
  std::vector<int64_t> entries;  // their prefix-cache entries
  int64_t num_tokens = 0;
};

// How a sequence's block table changed since the last take_update(): a
// worker holding the table as it was then keeps its first num_kept_blocks
// and appends new_block_ids. Appending blocks keeps everything; a
// copy-on-write keeps the blocks before the copied one; a sliding window's
// release, a swap or a new table keeps none; a truncation keeps what stays.
struct BlockTableUpdate {
  int32_t num_kept_blocks = 0;
  std::vector<int32_t> new_block_ids;
};

struct KVCacheStats {
  int64_t prefix_queried_tokens = 0;  // tokens of admitted sequences looked up
  int64_t prefix_hit_tokens = 0;
  int64_t copy_on_write_blocks = 0;
  int64_t swapped_out_blocks = 0;
  int64_t swapped_in_blocks = 0;
};

class KVCacheManager {
 public:
  explicit KVCacheManager(const KVCacheConfig& config);

  const KVCacheConfig& config() const { return config_; }
  const BlockPool& device_pool() const { return device_pool_; }
  const BlockPool* host_pool() const { return host_pool_ ? &*host_pool_ : nullptr; }
  const KVCacheStats& stats() const { return stats_; }

  // The longest run of cached full blocks at the start of a sequence that has
  // no blocks yet, leaving at least its last token to compute (its logits are
  // needed). Empty without prefix caching.
  PrefixHit find_cached_prefix(const Sequence& seq) const;

  // Whether allocate() would succeed now.
  bool can_allocate(const Sequence& seq, int64_t num_new_tokens, const PrefixHit& hit = {}) const;
  // The free blocks allocate() would take.
  int64_t num_blocks_needed(const Sequence& seq, int64_t num_new_tokens,
                            const PrefixHit& hit = {}) const;
  // Gives `seq` the blocks for positions up to num_computed_tokens +
  // hit.num_tokens + num_new_tokens (the hit is for a sequence's first
  // allocation). Returns the copy-on-write copies to run before the step.
  std::vector<BlockCopy> allocate(const Sequence& seq, int64_t num_new_tokens,
                                  const PrefixHit& hit = {});
  // The child shares all of the parent's blocks (parallel sampling, beams).
  void fork(SequenceId parent, SequenceId child);
  // Releases the sequence's blocks, on the device or on the host.
  void free(SequenceId seq);
  // Releases the device blocks past those covering the sequence's first
  // num_tokens positions: speculation's rejected drafts. Blocks holding
  // drafts were never cached (only known tokens are).
  void truncate(SequenceId seq, int64_t num_tokens);
  // Puts the sequence's full blocks of computed, known tokens in the prefix
  // cache (allocate() does so for the tokens it is given; a token pending
  // then is known later).
  void cache_computed_blocks(const Sequence& seq);
  // The cache's contents are gone (the workers holding them were replaced):
  // forgets every sequence's blocks and every cached prefix. Counters stay.
  void reset();

  // Swapping preempts a sequence by moving its blocks to the host pool.
  bool can_swap_out(SequenceId seq) const;
  std::vector<BlockCopy> swap_out(SequenceId seq);  // device block -> host block
  // Room for the sequence's blocks and for its next num_new_tokens: one
  // swapped in without room to go on would only be swapped out again.
  bool can_swap_in(const Sequence& seq, int64_t num_new_tokens) const;
  std::vector<BlockCopy> swap_in(const Sequence& seq);  // host block -> device block

  bool has_blocks(SequenceId seq) const { return tables_.count(seq) != 0; }
  std::span<const int32_t> block_table(SequenceId seq) const;
  // The change to the sequence's table since the last call for it (since it
  // got its blocks, for the first). The scheduler takes one per run it
  // plans, so a worker that applies them in plan order holds the table.
  BlockTableUpdate take_update(SequenceId seq);
  // Blocks the sequence holds, null placeholders not counted.
  int32_t num_held_blocks(SequenceId seq) const;

 private:
  struct Table {
    std::vector<int32_t> blocks;
    // Per full block, in order: the prefix-cache entry naming its contents,
    // kNoEntry for a block released before it was cached (and so for every
    // block after it).
    std::vector<int64_t> entries;
    size_t num_released_blocks = 0;  // leading entries replaced by the null block
    bool on_host = false;
    // Leading blocks unchanged since the last take_update(): every change
    // to `blocks` other than an append lowers it to the first changed index.
    size_t num_unchanged = 0;
  };

  const Table& table(SequenceId seq) const;
  int64_t blocks_for(int64_t num_tokens) const;
  bool needs_copy_on_write(const Table& table, int64_t num_computed) const;
  void release_outside_window(Table& table, int64_t num_computed);
  static constexpr int64_t kNoEntry = -1;
  BlockKey block_key(const Sequence& seq, int64_t parent, size_t index) const;
  // The entry of full block `index` of `table`, caching its block if needed.
  int64_t cache_block(const Sequence& seq, const Table& table, size_t index);
  void cache_full_blocks(const Sequence& seq, Table& table, int64_t num_tokens);

  KVCacheConfig config_;
  BlockPool device_pool_;
  std::optional<BlockPool> host_pool_;
  std::unordered_map<SequenceId, Table> tables_;
  KVCacheStats stats_;
};

}  // namespace hive
