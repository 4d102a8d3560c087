// BlockPool: exact block ids, reference counts and free-queue order through
// allocate / add_reference / release / cache / evict.
#include <gtest/gtest.h>

#include "base/error.hpp"
#include "runtime/core/block_pool.hpp"

namespace hive {
namespace {

using Ids = std::vector<int32_t>;

class BlockPoolTest : public ::testing::Test {
 protected:
  void TearDown() override {
    EXPECT_EQ(pool.num_free_blocks(), pool.num_allocatable_blocks()) << "a test leaked blocks";
  }
  BlockPool pool{8};  // null block 0 and blocks 1..7
};

TEST_F(BlockPoolTest, AllocatesFromTheFrontAndFreesToTheBack) {
  EXPECT_EQ(pool.free_block_queue(), (Ids{1, 2, 3, 4, 5, 6, 7}));
  const Ids a = pool.allocate(3);
  EXPECT_EQ(a, (Ids{1, 2, 3}));
  EXPECT_EQ(pool.ref_count(2), 1);
  const Ids b = pool.allocate(2);
  EXPECT_EQ(b, (Ids{4, 5}));
  EXPECT_EQ(pool.free_block_queue(), (Ids{6, 7}));
  pool.release(Ids{3, 1});  // caller's order is the eviction order
  EXPECT_EQ(pool.free_block_queue(), (Ids{6, 7, 3, 1}));
  EXPECT_EQ(pool.allocate(3), (Ids{6, 7, 3}));
  EXPECT_EQ(pool.free_block_queue(), (Ids{1}));
  pool.release(Ids{2, 3, 6, 7, 4, 5});
  EXPECT_EQ(pool.free_block_queue(), (Ids{1, 2, 3, 6, 7, 4, 5}));
}

TEST_F(BlockPoolTest, NullBlockIsNeverHandedOutOrCounted) {
  EXPECT_EQ(pool.num_blocks(), 8);
  EXPECT_EQ(pool.num_allocatable_blocks(), 7);
  Ids all = pool.allocate(7);
  EXPECT_EQ(std::count(all.begin(), all.end(), BlockPool::kNullBlock), 0);
  EXPECT_EQ(pool.num_free_blocks(), 0);
  EXPECT_THROW(pool.allocate(1), Error);
  pool.release(Ids{BlockPool::kNullBlock});  // skipped, like a table's placeholder
  pool.add_reference(Ids{BlockPool::kNullBlock});
  EXPECT_THROW(pool.ref_count(BlockPool::kNullBlock), Error);
  pool.release(all);
}

TEST_F(BlockPoolTest, ReferencesKeepABlockOutOfTheFreeQueue) {
  const Ids a = pool.allocate(2);  // 1, 2
  pool.add_reference(a);
  EXPECT_EQ(pool.ref_count(1), 2);
  pool.release(a);
  EXPECT_EQ(pool.ref_count(1), 1);
  EXPECT_EQ(pool.free_block_queue(), (Ids{3, 4, 5, 6, 7}));
  pool.release(a);
  EXPECT_EQ(pool.free_block_queue(), (Ids{3, 4, 5, 6, 7, 1, 2}));
  EXPECT_THROW(pool.release(Ids{1}), Error);  // released more often than referenced
  // A reference to a free block (a prefix hit) takes it out of the middle.
  pool.add_reference(Ids{5});
  EXPECT_EQ(pool.free_block_queue(), (Ids{3, 4, 6, 7, 1, 2}));
  pool.release(Ids{5});
  EXPECT_EQ(pool.free_block_queue(), (Ids{3, 4, 6, 7, 1, 2, 5}));
}

BlockKey key(int64_t parent, Ids tokens) {
  return BlockKey{parent, std::move(tokens), {}};
}

TEST_F(BlockPoolTest, CachedBlocksStayHittableUntilReusedThenAreEvicted) {
  const Ids a = pool.allocate(2);  // 1, 2
  const int64_t first = pool.cache_block(1, key(kRootEntry, {1, 2}));
  const int64_t second = pool.cache_block(2, key(first, {3, 4}));
  EXPECT_NE(first, second);
  EXPECT_EQ(pool.cached_block(key(kRootEntry, {1, 2}))->block, 1);
  EXPECT_EQ(pool.cached_block(key(first, {3, 4}))->entry, second);
  // The same tokens after another parent are other contents.
  EXPECT_FALSE(pool.cached_block(key(second, {3, 4})).has_value());
  // Another block with the same contents: the cache keeps the first, and
  // names its entry.
  const Ids dup = pool.allocate(1);  // 3
  EXPECT_EQ(pool.cache_block(dup[0], key(kRootEntry, {1, 2})), first);
  EXPECT_EQ(pool.cached_block(key(kRootEntry, {1, 2}))->block, 1);
  EXPECT_FALSE(pool.block_entry(3).has_value());
  // A cached block is never cached again with other contents.
  EXPECT_THROW(pool.cache_block(1, key(kRootEntry, {9, 9})), Error);
  pool.release(dup);
  pool.release(Ids{2, 1});
  EXPECT_EQ(pool.free_block_queue(), (Ids{4, 5, 6, 7, 3, 2, 1}));
  EXPECT_EQ(pool.cached_block(key(first, {3, 4}))->block, 2);  // free but still cached
  EXPECT_EQ(pool.block_entry(2), second);
  const Ids next = pool.allocate(5);  // 4, 5, 6, 7, 3: no cached block reused yet
  EXPECT_EQ(pool.num_evictions(), 0);
  const Ids evicting = pool.allocate(1);  // block 2, the least recently freed cached one
  EXPECT_EQ(evicting, (Ids{2}));
  EXPECT_EQ(pool.num_evictions(), 1);
  EXPECT_FALSE(pool.cached_block(key(first, {3, 4})).has_value());
  EXPECT_EQ(pool.cached_block(key(kRootEntry, {1, 2}))->block, 1);
  // Cached again, the same contents get a new entry: blocks cached after
  // the evicted one named it as their parent, and none of them can be hit.
  EXPECT_NE(pool.cache_block(2, key(first, {3, 4})), second);
  pool.release(next);
  pool.release(evicting);
}

// splitmix64's finaliser, as hash_key chains it.
uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

TEST_F(BlockPoolTest, KeysThatShareAHashAreKeptApart) {
  // The 64-bit hash is not secret: a second extra key can cancel the
  // difference in the first, so two requests' blocks collide on purpose.
  // Neither may hit the other's block, nor keep it out of the cache.
  const uint64_t start = mix(static_cast<uint64_t>(kRootEntry) ^ 0x9e3779b97f4a7c15ULL);
  const BlockKey honest{kRootEntry, {1, 2, 3, 4}, {11, 22}};
  const BlockKey forged{kRootEntry, {1, 2, 3, 4}, {33, mix(start ^ 11) ^ 22 ^ mix(start ^ 33)}};
  ASSERT_EQ(hash_key(honest), hash_key(forged));
  ASSERT_NE(honest, forged);
  const Ids blocks = pool.allocate(2);
  const int64_t forged_entry = pool.cache_block(blocks[0], forged);
  EXPECT_FALSE(pool.cached_block(honest).has_value());
  const int64_t honest_entry = pool.cache_block(blocks[1], honest);
  EXPECT_NE(honest_entry, forged_entry);
  EXPECT_EQ(pool.cached_block(honest)->block, blocks[1]);
  EXPECT_EQ(pool.cached_block(forged)->block, blocks[0]);
  // Evicting one leaves the other.
  pool.release(Ids{blocks[0]});
  const Ids reused = pool.allocate(pool.num_free_blocks());
  EXPECT_FALSE(pool.cached_block(forged).has_value());
  EXPECT_EQ(pool.cached_block(honest)->block, blocks[1]);
  pool.release(reused);
  pool.release(Ids{blocks[1]});
}

TEST(BlockKey, HashCoversParentTokensAndExtraKeys) {
  const BlockKey k{kRootEntry, {1, 2, 3, 4}, {}};
  EXPECT_EQ(hash_key(k), hash_key(BlockKey{kRootEntry, {1, 2, 3, 4}, {}}));
  EXPECT_NE(hash_key(k), hash_key(BlockKey{7, {1, 2, 3, 4}, {}}));
  EXPECT_NE(hash_key(k), hash_key(BlockKey{kRootEntry, {1, 2, 3, 4}, {7}}));
  EXPECT_NE(hash_key(k), hash_key(BlockKey{kRootEntry, {1, 2, 4, 3}, {}}));
}

TEST(BlockPoolErrors, NeedsANullBlockAndOneMore) {
  try {
    BlockPool tiny(1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(">= 2 blocks, the null block and one more (got 1)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace hive
