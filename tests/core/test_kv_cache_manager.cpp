// KVCacheManager: exact block tables, reference counts and free-queue order
// through allocate / append / fork (copy-on-write) / free / evict / prefix
// hits / sliding-window release / swap, and the tables' updates the workers
// apply (BlockTables). Block size 4 throughout; the device
// pool has blocks 1..9 (0 is the null block).
#include <gtest/gtest.h>

#include <numeric>

#include "base/error.hpp"
#include "runtime/core/block_tables.hpp"
#include "runtime/core/kv_cache_manager.hpp"

namespace hive {
namespace {

using Ids = std::vector<int32_t>;
using Copies = std::vector<BlockCopy>;

Ids iota(int32_t first, int32_t count) {
  Ids ids(static_cast<size_t>(count));
  std::iota(ids.begin(), ids.end(), first);
  return ids;
}

class KVCacheManagerTest : public ::testing::Test {
 protected:
  void TearDown() override {
    EXPECT_EQ(kv->device_pool().num_free_blocks(), kv->device_pool().num_allocatable_blocks())
        << "device blocks leaked";
    if (kv->host_pool()) {
      EXPECT_EQ(kv->host_pool()->num_free_blocks(), kv->host_pool()->num_allocatable_blocks())
          << "host blocks leaked";
    }
  }
  void make(bool prefix_caching, int32_t host_blocks = 0, int64_t window = 0) {
    KVCacheConfig config;
    config.block_size = 4;
    config.num_device_blocks = 10;
    config.num_host_blocks = host_blocks;
    config.enable_prefix_caching = prefix_caching;
    config.sliding_window = window;
    kv = std::make_unique<KVCacheManager>(config);
  }
  Sequence& seq(SequenceId id, Ids tokens, std::vector<uint64_t> extra_keys = {}) {
    auto request = std::make_shared<Request>();
    request->id = str_cat("r", id);
    request->prompt_token_ids = std::move(tokens);
    request->cache_extra_keys = std::move(extra_keys);
    sequences.push_back(std::make_unique<Sequence>(id, request, id));
    return *sequences.back();
  }
  // Allocates the sequence's uncomputed tokens and marks them computed.
  Copies run(Sequence& s, const PrefixHit& hit = {}) {
    const int64_t n = s.num_uncomputed_tokens() - hit.num_tokens;
    EXPECT_TRUE(kv->can_allocate(s, n, hit));
    Copies copies = kv->allocate(s, n, hit);
    s.num_computed_tokens = s.num_tokens();
    return copies;
  }
  Ids table(const Sequence& s) const {
    const auto t = kv->block_table(s.id);
    return {t.begin(), t.end()};
  }
  // The update a plan would carry for the sequence now, as (kept, new ids).
  std::pair<int32_t, Ids> update(const Sequence& s) {
    BlockTableUpdate u = kv->take_update(s.id);
    return {u.num_kept_blocks, std::move(u.new_block_ids)};
  }
  int32_t refs(int32_t block) const { return kv->device_pool().ref_count(block); }
  Ids free_queue() const { return kv->device_pool().free_block_queue(); }

  std::unique_ptr<KVCacheManager> kv;
  std::vector<std::unique_ptr<Sequence>> sequences;
};

TEST_F(KVCacheManagerTest, AllocatesAppendsAndFreesTailFirst) {
  make(false);
  Sequence& a = seq(1, iota(0, 10));
  EXPECT_TRUE(run(a).empty());
  EXPECT_EQ(table(a), (Ids{1, 2, 3}));
  EXPECT_EQ(free_queue(), iota(4, 6));
  a.token_ids.push_back(10);  // 11 and 12 tokens still fit block 3
  run(a);
  a.token_ids.push_back(11);
  run(a);
  EXPECT_EQ(table(a), (Ids{1, 2, 3}));
  a.token_ids.push_back(12);  // the 13th token starts block 4
  run(a);
  EXPECT_EQ(table(a), (Ids{1, 2, 3, 4}));
  EXPECT_EQ(kv->num_held_blocks(a.id), 4);
  kv->free(a.id);
  EXPECT_EQ(free_queue(), (Ids{5, 6, 7, 8, 9, 4, 3, 2, 1}));
  EXPECT_FALSE(kv->has_blocks(a.id));
}

TEST_F(KVCacheManagerTest, RefusesWhatThePoolCannotHold) {
  make(false);
  Sequence& a = seq(1, iota(0, 36));
  EXPECT_TRUE(kv->can_allocate(a, 36));  // 9 blocks: the whole pool
  Sequence& big = seq(2, iota(0, 37));
  EXPECT_FALSE(kv->can_allocate(big, 37));
  EXPECT_THROW(kv->allocate(big, 37), Error);
  run(a);
  Sequence& b = seq(3, iota(0, 1));
  EXPECT_FALSE(kv->can_allocate(b, 1));
  kv->free(a.id);
}

TEST_F(KVCacheManagerTest, PrefixHitsReuseFullBlocksAndCountTokens) {
  make(true);
  Sequence& a = seq(1, iota(0, 10));
  run(a);  // [1, 2, 3]; blocks 1 and 2 are full and cached
  Ids shared = iota(0, 8);
  shared.insert(shared.end(), {100, 101, 102});
  Sequence& b = seq(2, shared);
  const PrefixHit hit = kv->find_cached_prefix(b);
  EXPECT_EQ(hit.blocks, (Ids{1, 2}));
  EXPECT_EQ(hit.num_tokens, 8);
  run(b, hit);
  EXPECT_EQ(table(b), (Ids{1, 2, 4}));
  EXPECT_EQ(refs(1), 2);
  EXPECT_EQ(refs(2), 2);
  EXPECT_EQ(kv->stats().prefix_queried_tokens, 10 + 11);
  EXPECT_EQ(kv->stats().prefix_hit_tokens, 8);

  kv->free(a.id);
  EXPECT_EQ(free_queue(), (Ids{5, 6, 7, 8, 9, 3}));
  kv->free(b.id);
  EXPECT_EQ(free_queue(), (Ids{5, 6, 7, 8, 9, 3, 4, 2, 1}));
  // Free but cached: a third request hits them and takes them out of the queue.
  Sequence& c = seq(3, iota(0, 9));
  const PrefixHit again = kv->find_cached_prefix(c);
  EXPECT_EQ(again.blocks, (Ids{1, 2}));
  run(c, again);
  EXPECT_EQ(table(c), (Ids{1, 2, 5}));
  EXPECT_EQ(free_queue(), (Ids{6, 7, 8, 9, 3, 4}));
  kv->free(c.id);
}

TEST_F(KVCacheManagerTest, AHitAlwaysLeavesTheLastTokenToCompute) {
  make(true);
  Sequence& a = seq(1, iota(0, 8));
  run(a);
  Sequence& same = seq(2, iota(0, 8));  // identical: only block 1 may be hit
  const PrefixHit hit = kv->find_cached_prefix(same);
  EXPECT_EQ(hit.blocks, (Ids{1}));
  run(same, hit);
  EXPECT_EQ(table(same), (Ids{1, 3}));
  kv->free(a.id);
  kv->free(same.id);
}

TEST_F(KVCacheManagerTest, ExtraKeysSeparateOtherwiseEqualPrefixes) {
  make(true);
  Sequence& a = seq(1, iota(0, 9), {42});
  run(a);
  EXPECT_TRUE(kv->find_cached_prefix(seq(2, iota(0, 9), {43})).blocks.empty());
  EXPECT_TRUE(kv->find_cached_prefix(seq(3, iota(0, 9))).blocks.empty());
  EXPECT_EQ(kv->find_cached_prefix(seq(4, iota(0, 9), {42})).blocks, (Ids{1, 2}));
  kv->free(a.id);
}

TEST_F(KVCacheManagerTest, HitsOnFreeBlocksCountAgainstTheFreePool) {
  make(true);
  Sequence& a = seq(1, iota(0, 9));
  run(a);  // [1, 2, 3]
  kv->free(a.id);
  Sequence& filler = seq(2, iota(1000, 24));  // takes 6 of the 9 free blocks: 4..9
  run(filler);
  EXPECT_EQ(free_queue(), (Ids{3, 2, 1}));
  Ids tokens = iota(0, 8);
  tokens.resize(20, 7);  // hit [1, 2], then 12 more tokens: 3 new blocks
  Sequence& b = seq(3, tokens);
  const PrefixHit hit = kv->find_cached_prefix(b);
  ASSERT_EQ(hit.blocks, (Ids{1, 2}));
  EXPECT_FALSE(kv->can_allocate(b, 12, hit));  // 3 new + 2 hit blocks leaving the queue > 3
  EXPECT_TRUE(kv->can_allocate(b, 4, hit));
  kv->free(filler.id);
}

TEST_F(KVCacheManagerTest, EvictionDropsTheOldestFreedCachedBlock) {
  make(true);
  Sequence& a = seq(1, iota(0, 9));
  run(a);
  kv->free(a.id);                            // queue 4..9, 3, 2, 1 with 1 and 2 cached
  Sequence& filler = seq(2, iota(500, 28));  // 7 blocks: 4..9 and 3
  run(filler);
  EXPECT_EQ(kv->find_cached_prefix(seq(3, iota(0, 9))).blocks, (Ids{1, 2}));
  filler.token_ids.resize(29, 1);  // one more block: 2 is reused, its hash evicted
  run(filler);
  EXPECT_EQ(table(filler).back(), 2);
  EXPECT_EQ(kv->device_pool().num_evictions(), 1);
  EXPECT_EQ(kv->find_cached_prefix(seq(4, iota(0, 9))).blocks, (Ids{1}));  // the chain breaks
  kv->free(filler.id);
}

TEST_F(KVCacheManagerTest, ForkSharesBlocksAndCopiesOnlyOnAppendToASharedBlock) {
  make(false);
  Sequence& parent = seq(1, iota(0, 6));
  run(parent);  // [1, 2], block 2 half full
  kv->fork(parent.id, 2);
  Sequence& child = seq(2, iota(0, 6));
  child.num_computed_tokens = 6;
  EXPECT_EQ(table(child), (Ids{1, 2}));
  EXPECT_EQ(refs(1), 2);
  EXPECT_EQ(refs(2), 2);

  parent.token_ids.push_back(60);  // appends into shared block 2: copy it first
  EXPECT_TRUE(kv->can_allocate(parent, 1));
  EXPECT_EQ(run(parent), (Copies{{2, 3}}));
  EXPECT_EQ(table(parent), (Ids{1, 3}));
  EXPECT_EQ(refs(2), 1);
  EXPECT_EQ(refs(3), 1);
  EXPECT_EQ(kv->stats().copy_on_write_blocks, 1);

  child.token_ids.push_back(61);  // block 2 is its own now: no copy
  EXPECT_TRUE(run(child).empty());
  EXPECT_EQ(table(child), (Ids{1, 2}));
  EXPECT_EQ(refs(1), 2);

  kv->free(parent.id);
  EXPECT_EQ(free_queue(), (Ids{4, 5, 6, 7, 8, 9, 3}));
  kv->free(child.id);
  EXPECT_EQ(free_queue(), (Ids{4, 5, 6, 7, 8, 9, 3, 2, 1}));
}

TEST_F(KVCacheManagerTest, ForkAtABlockBoundaryNeedsNoCopy) {
  make(false);
  Sequence& parent = seq(1, iota(0, 8));
  run(parent);  // [1, 2], both full
  kv->fork(parent.id, 2);
  Sequence& child = seq(2, iota(0, 8));
  child.num_computed_tokens = 8;
  for (Sequence* s : {&parent, &child}) {
    s->token_ids.push_back(9);
    EXPECT_TRUE(run(*s).empty());
  }
  EXPECT_EQ(table(parent), (Ids{1, 2, 3}));
  EXPECT_EQ(table(child), (Ids{1, 2, 4}));
  EXPECT_EQ(kv->stats().copy_on_write_blocks, 0);
  kv->free(child.id);
  kv->free(parent.id);
  EXPECT_EQ(free_queue(), (Ids{5, 6, 7, 8, 9, 4, 3, 2, 1}));
}

TEST_F(KVCacheManagerTest, CopyOnWriteNeedsAFreeBlock) {
  make(false);
  Sequence& parent = seq(1, iota(0, 34));  // 9 blocks: the whole pool, the last half full
  run(parent);
  kv->fork(parent.id, 2);
  parent.token_ids.push_back(1);
  EXPECT_FALSE(kv->can_allocate(parent, 1));  // fits its block, but that block is shared
  kv->free(2);
  EXPECT_TRUE(kv->can_allocate(parent, 1));
  kv->free(parent.id);
}

TEST_F(KVCacheManagerTest, SlidingWindowReleasesBlocksNoQueryCanSee) {
  make(false, 0, /*window=*/4);
  Sequence& a = seq(1, iota(0, 10));
  run(a);  // [1, 2, 3]; the queries of this step still saw block 1
  EXPECT_EQ(table(a), (Ids{1, 2, 3}));
  a.token_ids.push_back(10);  // the query at position 10 sees 7..10
  run(a);
  EXPECT_EQ(table(a), (Ids{BlockPool::kNullBlock, 2, 3}));
  EXPECT_EQ(free_queue(), (Ids{4, 5, 6, 7, 8, 9, 1}));
  EXPECT_EQ(kv->num_held_blocks(a.id), 2);
  for (int32_t t = 11; t < 14; ++t) {
    a.token_ids.push_back(t);
    run(a);
  }
  EXPECT_EQ(table(a), (Ids{BlockPool::kNullBlock, BlockPool::kNullBlock, 3, 4}));
  kv->free(a.id);
  EXPECT_EQ(free_queue(), (Ids{5, 6, 7, 8, 9, 1, 2, 4, 3}));
}

TEST_F(KVCacheManagerTest, SwapOutAndInMovesBlocksBetweenPools) {
  make(false, /*host_blocks=*/5);
  Sequence& a = seq(1, iota(0, 10));
  run(a);  // [1, 2, 3]
  ASSERT_TRUE(kv->can_swap_out(a.id));
  EXPECT_EQ(kv->swap_out(a.id), (Copies{{1, 1}, {2, 2}, {3, 3}}));
  EXPECT_EQ(free_queue(), (Ids{4, 5, 6, 7, 8, 9, 3, 2, 1}));
  EXPECT_EQ(kv->host_pool()->free_block_queue(), (Ids{4}));
  EXPECT_THROW(kv->can_allocate(a, 1), Error);
  EXPECT_EQ(kv->stats().swapped_out_blocks, 3);

  Sequence& b = seq(2, iota(0, 20));  // 5 device blocks: 4..8
  run(b);
  EXPECT_FALSE(kv->can_swap_out(b.id));  // 5 blocks, 1 free host block
  ASSERT_TRUE(kv->can_swap_in(a, 0));
  // 4 free blocks: its 3 and one more hold 16 tokens, a 17th needs a fifth.
  ASSERT_EQ(kv->device_pool().num_free_blocks(), 4);
  EXPECT_TRUE(kv->can_swap_in(a, 6));
  EXPECT_FALSE(kv->can_swap_in(a, 7));
  EXPECT_EQ(kv->swap_in(a), (Copies{{1, 9}, {2, 3}, {3, 2}}));
  EXPECT_EQ(table(a), (Ids{9, 3, 2}));
  EXPECT_EQ(kv->host_pool()->free_block_queue(), (Ids{4, 3, 2, 1}));
  EXPECT_EQ(kv->stats().swapped_in_blocks, 3);
  a.token_ids.push_back(10);
  run(a);
  EXPECT_EQ(table(a), (Ids{9, 3, 2}));
  kv->free(a.id);
  kv->free(b.id);
}

TEST_F(KVCacheManagerTest, FreeingASwappedSequenceReleasesHostBlocks) {
  make(false, 5);
  Sequence& a = seq(1, iota(0, 5));
  run(a);
  kv->swap_out(a.id);
  kv->free(a.id);
  EXPECT_EQ(kv->host_pool()->free_block_queue(), (Ids{3, 4, 2, 1}));
}

// A plan carries each table as its change since the last update taken:
// appends keep everything, a copy-on-write keeps the blocks before the
// copied one, a truncation keeps what stays, and a new table (first
// allocation, fork, swap-in) or a sliding window's release keeps none.
TEST_F(KVCacheManagerTest, UpdatesCarryOnlyWhatChangedSinceTheLastOne) {
  using Update = std::pair<int32_t, Ids>;
  make(false, /*host_blocks=*/5);
  Sequence& parent = seq(1, iota(0, 6));
  run(parent);  // [1, 2], block 2 half full
  EXPECT_EQ(update(parent), (Update{0, {1, 2}}));
  EXPECT_EQ(update(parent), (Update{2, {}}));  // nothing changed since
  parent.token_ids.resize(9, 7);
  run(parent);  // [1, 2, 3]
  EXPECT_EQ(update(parent), (Update{2, {3}}));

  kv->fork(parent.id, 2);
  Sequence& child = seq(2, parent.token_ids);
  child.num_computed_tokens = 9;
  EXPECT_EQ(update(child), (Update{0, {1, 2, 3}}));
  parent.token_ids.push_back(8);
  EXPECT_EQ(run(parent), (Copies{{3, 4}}));  // appends into shared block 3: copied
  EXPECT_EQ(update(parent), (Update{2, {4}}));

  parent.token_ids.resize(17, 9);
  run(parent);  // [1, 2, 4, 5, 6]
  EXPECT_EQ(update(parent), (Update{3, {5, 6}}));
  kv->truncate(parent.id, 13);  // rejected drafts: block 6 goes
  parent.token_ids.resize(13);
  parent.num_computed_tokens = 13;
  parent.token_ids.resize(15, 3);
  run(parent);  // [1, 2, 4, 5]: the truncation and the append within block 5
  EXPECT_EQ(update(parent), (Update{4, {}}));
  kv->truncate(parent.id, 11);
  parent.token_ids.resize(11);
  parent.num_computed_tokens = 11;
  EXPECT_EQ(update(parent), (Update{3, {}}));

  kv->free(child.id);
  ASSERT_TRUE(kv->can_swap_out(parent.id));
  kv->swap_out(parent.id);
  EXPECT_THROW(kv->take_update(parent.id), Error);  // no device blocks to plan with
  kv->swap_in(parent);
  EXPECT_EQ(update(parent), (Update{0, Ids(kv->block_table(parent.id).begin(),
                                            kv->block_table(parent.id).end())}));
  kv->free(parent.id);

  make(false, 0, /*window=*/4);
  Sequence& a = seq(1, iota(0, 10));
  run(a);
  EXPECT_EQ(update(a), (Update{0, {1, 2, 3}}));
  a.token_ids.push_back(10);  // block 1 leaves the window: the null block takes its place
  run(a);
  EXPECT_EQ(update(a), (Update{0, {BlockPool::kNullBlock, 2, 3}}));
  kv->free(a.id);
}

// The worker's side: updates applied in plan order rebuild the tables.
TEST(BlockTables, AppliesUpdatesInPlanOrderAndDropsFinishedSequences) {
  const auto run = [](SequenceId id, int32_t kept, Ids fresh) {
    ScheduledSequence s;
    s.seq_id = id;
    s.token_ids = {1};
    s.num_kept_blocks = kept;
    s.new_block_ids = std::move(fresh);
    return s;
  };
  const auto held = [](const BlockTables& tables, SequenceId id) {
    const std::span<const int32_t> t = tables.at(id);
    return Ids(t.begin(), t.end());
  };
  BlockTables tables;
  StepPlan plan;
  plan.sequences = {run(1, 0, {3, 8}), run(2, 0, {5})};
  tables.apply(plan);
  EXPECT_EQ(held(tables, 1), (Ids{3, 8}));
  plan.sequences = {run(1, 2, {}), run(2, 1, {9})};  // 1 decodes in place, 2 grows
  tables.apply(plan);
  EXPECT_EQ(held(tables, 1), (Ids{3, 8}));
  EXPECT_EQ(held(tables, 2), (Ids{5, 9}));
  plan.sequences = {run(2, 1, {4})};  // copy-on-write of 2's last block
  tables.apply(plan);
  EXPECT_EQ(held(tables, 2), (Ids{5, 4}));
  plan.sequences = {};
  plan.finished_seq_ids = {1};
  tables.apply(plan);
  EXPECT_EQ(tables.size(), 1u);
  EXPECT_THROW(tables.at(1), Error);

  plan.finished_seq_ids = {};
  plan.sequences = {run(7, 1, {2})};  // an update whose base never arrived
  EXPECT_THROW(tables.apply(plan), Error);
  plan.sequences = {run(8, 0, {})};  // a run with no blocks
  EXPECT_THROW(tables.apply(plan), Error);
}

}  // namespace
}  // namespace hive
