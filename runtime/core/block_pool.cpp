#include "runtime/core/block_pool.hpp"

#include <algorithm>

#include "base/error.hpp"

namespace hive {

namespace {

// splitmix64's finaliser: every input bit affects every output bit.
uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

BlockHash hash_key(const BlockKey& key) {
  uint64_t h = mix(static_cast<uint64_t>(key.parent) ^ 0x9e3779b97f4a7c15ULL);
  for (const uint64_t extra : key.extra_keys) h = mix(h ^ extra);
  h = mix(h ^ key.token_ids.size());
  for (const int32_t token : key.token_ids) h = mix(h ^ static_cast<uint32_t>(token));
  return h;
}

FreeBlockQueue::FreeBlockQueue(int32_t num_blocks)
    : prev_(static_cast<size_t>(num_blocks), kNone),
      next_(static_cast<size_t>(num_blocks), kNone),
      in_queue_(static_cast<size_t>(num_blocks), false) {}

void FreeBlockQueue::push_back(int32_t block) {
  const auto b = static_cast<size_t>(block);
  check(!in_queue_[b], "free block queue: block ", block, " is already free");
  prev_[b] = tail_;
  next_[b] = kNone;
  if (tail_ != kNone) next_[static_cast<size_t>(tail_)] = block;
  if (head_ == kNone) head_ = block;
  tail_ = block;
  in_queue_[b] = true;
  ++size_;
}

int32_t FreeBlockQueue::pop_front() {
  check(head_ != kNone, "free block queue: no free block");
  const int32_t block = head_;
  remove(block);
  return block;
}

void FreeBlockQueue::remove(int32_t block) {
  const auto b = static_cast<size_t>(block);
  check(in_queue_[b], "free block queue: block ", block, " is not free");
  if (prev_[b] != kNone)
    next_[static_cast<size_t>(prev_[b])] = next_[b];
  else
    head_ = next_[b];
  if (next_[b] != kNone)
    prev_[static_cast<size_t>(next_[b])] = prev_[b];
  else
    tail_ = prev_[b];
  prev_[b] = next_[b] = kNone;
  in_queue_[b] = false;
  --size_;
}

std::vector<int32_t> FreeBlockQueue::to_vector() const {
  std::vector<int32_t> blocks;
  blocks.reserve(static_cast<size_t>(size_));
  for (int32_t b = head_; b != kNone; b = next_[static_cast<size_t>(b)]) blocks.push_back(b);
  return blocks;
}

BlockPool::BlockPool(int32_t num_blocks)
    : ref_counts_(static_cast<size_t>(std::max(num_blocks, 0)), 0),
      entries_(static_cast<size_t>(std::max(num_blocks, 0))),
      free_block_queue_(std::max(num_blocks, 0)) {
  check(num_blocks >= 2, "a block pool needs >= 2 blocks, the null block and one more (got ",
        num_blocks, ")");
  for (int32_t b = 1; b < num_blocks; ++b) free_block_queue_.push_back(b);
}

void BlockPool::check_block(int32_t block, const char* what) const {
  check(block > kNullBlock && block < num_blocks(), what, ": block ", block,
        " is not an allocatable block id (expected 1..", num_blocks() - 1, ")");
}

int32_t BlockPool::ref_count(int32_t block) const {
  check_block(block, "ref_count");
  return ref_counts_[static_cast<size_t>(block)];
}

std::optional<int64_t> BlockPool::block_entry(int32_t block) const {
  check_block(block, "block_entry");
  const std::optional<Entry>& entry = entries_[static_cast<size_t>(block)];
  return entry ? std::optional<int64_t>(entry->id) : std::nullopt;
}

std::vector<int32_t> BlockPool::allocate(int32_t n) {
  check(n >= 0 && n <= num_free_blocks(), "block pool: ", n, " blocks asked for, ",
        num_free_blocks(), " free");
  std::vector<int32_t> blocks(static_cast<size_t>(n));
  for (int32_t& block : blocks) {
    block = free_block_queue_.pop_front();
    const auto b = static_cast<size_t>(block);
    if (entries_[b]) {
      const auto [first, last] = cached_blocks_.equal_range(entries_[b]->hash);
      cached_blocks_.erase(
          std::find_if(first, last, [&](const auto& e) { return e.second == block; }));
      entries_[b].reset();
      ++num_evictions_;
    }
    ref_counts_[b] = 1;
  }
  return blocks;
}

void BlockPool::add_reference(std::span<const int32_t> blocks) {
  for (const int32_t block : blocks) {
    if (block == kNullBlock) continue;
    check_block(block, "add_reference");
    if (ref_counts_[static_cast<size_t>(block)]++ == 0) free_block_queue_.remove(block);
  }
}

void BlockPool::release(std::span<const int32_t> blocks) {
  for (const int32_t block : blocks) {
    if (block == kNullBlock) continue;
    check_block(block, "release");
    int32_t& count = ref_counts_[static_cast<size_t>(block)];
    check(count > 0, "block pool: block ", block, " released more often than referenced");
    if (--count == 0) free_block_queue_.push_back(block);
  }
}

std::optional<BlockPool::CachedBlock> BlockPool::cached_block(const BlockKey& key) const {
  const auto [first, last] = cached_blocks_.equal_range(hash_key(key));
  for (auto it = first; it != last; ++it) {
    const Entry& entry = *entries_[static_cast<size_t>(it->second)];
    if (entry.key == key) return CachedBlock{it->second, entry.id};
  }
  return std::nullopt;
}

int64_t BlockPool::cache_block(int32_t block, BlockKey key) {
  check_block(block, "cache_block");
  const auto b = static_cast<size_t>(block);
  check(ref_counts_[b] > 0, "block pool: caching free block ", block);
  if (entries_[b]) {
    check(entries_[b]->key == key, "block pool: block ", block, " is cached with other contents");
    return entries_[b]->id;
  }
  if (const std::optional<CachedBlock> same = cached_block(key)) return same->entry;
  const BlockHash hash = hash_key(key);
  entries_[b] = Entry{next_entry_++, hash, std::move(key)};
  cached_blocks_.emplace(hash, block);
  return entries_[b]->id;
}

}  // namespace hive
