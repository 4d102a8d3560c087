// BlockPool: exact block ids, reference counts and free-queue order through
// allocate / add_reference / release / cache / evict.
#include <gtest/gtest.h>

#include "kernels/error.hpp"
#include "runtime/block_pool.hpp"

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

TEST_F(BlockPoolTest, CachedBlocksStayHittableUntilReusedThenAreEvicted) {
  const Ids a = pool.allocate(2);  // 1, 2
  pool.cache_block(1, 111);
  pool.cache_block(2, 222);
  EXPECT_EQ(pool.cached_block(111), 1);
  // Another block with the same contents: the cache keeps the first.
  const Ids dup = pool.allocate(1);  // 3
  pool.cache_block(dup[0], 111);
  EXPECT_EQ(pool.cached_block(111), 1);
  EXPECT_FALSE(pool.block_hash(3).has_value());
  pool.release(dup);
  pool.release(Ids{2, 1});
  EXPECT_EQ(pool.free_block_queue(), (Ids{4, 5, 6, 7, 3, 2, 1}));
  EXPECT_EQ(pool.cached_block(222), 2);  // free but still cached
  EXPECT_EQ(pool.block_hash(2), BlockHash{222});
  const Ids next = pool.allocate(5);  // 4, 5, 6, 7, 3: no cached block reused yet
  EXPECT_EQ(pool.num_evictions(), 0);
  const Ids evicting = pool.allocate(1);  // block 2, the least recently freed cached one
  EXPECT_EQ(evicting, (Ids{2}));
  EXPECT_EQ(pool.num_evictions(), 1);
  EXPECT_FALSE(pool.cached_block(222).has_value());
  EXPECT_EQ(pool.cached_block(111), 1);
  pool.release(next);
  pool.release(evicting);
}

TEST(BlockHash, ChainsParentTokensAndExtraKeys) {
  const std::vector<int32_t> tokens = {1, 2, 3, 4};
  const std::vector<uint64_t> none, salt = {7};
  const BlockHash h = hash_block(kRootBlockHash, tokens, none);
  EXPECT_EQ(h, hash_block(kRootBlockHash, tokens, none));
  EXPECT_NE(h, hash_block(h, tokens, none));  // same tokens, different parent
  EXPECT_NE(h, hash_block(kRootBlockHash, tokens, salt));
  EXPECT_NE(h, hash_block(kRootBlockHash, std::vector<int32_t>{1, 2, 4, 3}, none));
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
