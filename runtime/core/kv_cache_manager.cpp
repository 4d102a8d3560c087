#include "runtime/core/kv_cache_manager.hpp"

#include <algorithm>

#include "base/error.hpp"

namespace hive {

void validate(const KVCacheConfig& config) {
  check(config.block_size >= 1, "block_size must be >= 1 (got ", config.block_size, ")");
  check(config.num_device_blocks >= 2,
        "num_device_blocks must be >= 2, the null block and one more (got ",
        config.num_device_blocks, ")");
  check(config.sliding_window >= 0, "sliding_window must be >= 0 (got ", config.sliding_window,
        ")");
  check(config.num_host_blocks == 0 || config.num_host_blocks >= 2,
        "num_host_blocks must be 0 (no swapping) or >= 2 (got ", config.num_host_blocks, ")");
}

KVCacheManager::KVCacheManager(const KVCacheConfig& config)
    : config_(config), device_pool_((validate(config), config.num_device_blocks)) {
  if (config.num_host_blocks > 0) host_pool_.emplace(config.num_host_blocks);
}

void KVCacheManager::reset() {
  device_pool_ = BlockPool(config_.num_device_blocks);
  if (host_pool_) host_pool_.emplace(config_.num_host_blocks);
  tables_.clear();
}

const KVCacheManager::Table& KVCacheManager::table(SequenceId seq) const {
  const auto it = tables_.find(seq);
  check(it != tables_.end(), "KV cache: sequence ", seq, " holds no blocks");
  return it->second;
}

std::span<const int32_t> KVCacheManager::block_table(SequenceId seq) const {
  return table(seq).blocks;
}

BlockTableUpdate KVCacheManager::take_update(SequenceId seq) {
  const auto it = tables_.find(seq);
  check(it != tables_.end() && !it->second.on_host, "KV cache: sequence ", seq,
        " holds no device blocks to plan with");
  Table& t = it->second;
  const size_t kept = std::min(t.num_unchanged, t.blocks.size());
  BlockTableUpdate update{static_cast<int32_t>(kept),
                          {t.blocks.begin() + static_cast<std::ptrdiff_t>(kept), t.blocks.end()}};
  t.num_unchanged = t.blocks.size();
  return update;
}

int32_t KVCacheManager::num_held_blocks(SequenceId seq) const {
  const auto& blocks = table(seq).blocks;
  return static_cast<int32_t>(std::count_if(blocks.begin(), blocks.end(),
                                            [](int32_t b) { return b != BlockPool::kNullBlock; }));
}

int64_t KVCacheManager::blocks_for(int64_t num_tokens) const {
  return (num_tokens + config_.block_size - 1) / config_.block_size;
}

BlockKey KVCacheManager::block_key(const Sequence& seq, int64_t parent, size_t index) const {
  const auto block_size = static_cast<size_t>(config_.block_size);
  const std::span<const int32_t> tokens =
      std::span<const int32_t>(seq.token_ids).subspan(index * block_size, block_size);
  return BlockKey{parent, {tokens.begin(), tokens.end()}, seq.request->cache_extra_keys};
}

PrefixHit KVCacheManager::find_cached_prefix(const Sequence& seq) const {
  PrefixHit hit;
  if (!config_.enable_prefix_caching) return hit;
  const int64_t max_blocks = (seq.num_known_tokens() - 1) / config_.block_size;
  int64_t parent = kRootEntry;
  for (int64_t b = 0; b < max_blocks; ++b) {
    const auto cached = device_pool_.cached_block(block_key(seq, parent, static_cast<size_t>(b)));
    if (!cached) break;
    hit.blocks.push_back(cached->block);
    hit.entries.push_back(cached->entry);
    parent = cached->entry;
  }
  hit.num_tokens = static_cast<int64_t>(hit.blocks.size()) * config_.block_size;
  return hit;
}

bool KVCacheManager::needs_copy_on_write(const Table& t, int64_t num_computed) const {
  if (num_computed % config_.block_size == 0) return false;  // appends start a new block
  const auto index = static_cast<size_t>(num_computed / config_.block_size);
  return index < t.blocks.size() && t.blocks[index] != BlockPool::kNullBlock &&
         device_pool_.ref_count(t.blocks[index]) > 1;
}

bool KVCacheManager::can_allocate(const Sequence& seq, int64_t num_new_tokens,
                                  const PrefixHit& hit) const {
  return num_blocks_needed(seq, num_new_tokens, hit) <= device_pool_.num_free_blocks();
}

int64_t KVCacheManager::num_blocks_needed(const Sequence& seq, int64_t num_new_tokens,
                                          const PrefixHit& hit) const {
  const auto it = tables_.find(seq.id);
  const bool has_table = it != tables_.end();
  check(!has_table || hit.blocks.empty(), "KV cache: sequence ", seq.id,
        " already has blocks; a prefix hit is for its first allocation");
  check(!has_table || !it->second.on_host, "KV cache: sequence ", seq.id,
        " is swapped out; swap it in before allocating");
  const int64_t num_computed = seq.num_computed_tokens + hit.num_tokens;
  const auto table_size =
      static_cast<int64_t>(has_table ? it->second.blocks.size() : hit.blocks.size());
  int64_t needed = std::max<int64_t>(0, blocks_for(num_computed + num_new_tokens) - table_size);
  if (has_table && needs_copy_on_write(it->second, num_computed)) ++needed;
  for (const int32_t block : hit.blocks)
    if (device_pool_.ref_count(block) == 0) ++needed;  // it leaves the free queue
  return needed;
}

std::vector<BlockCopy> KVCacheManager::allocate(const Sequence& seq, int64_t num_new_tokens,
                                                const PrefixHit& hit) {
  const int64_t num_computed = seq.num_computed_tokens + hit.num_tokens;
  check(num_new_tokens >= 1 && num_computed + num_new_tokens <= seq.num_tokens(),
        "KV cache: cannot allocate ", num_new_tokens, " new tokens after ", num_computed,
        " for sequence ", seq.id, " of ", seq.num_tokens(), " tokens");
  check(can_allocate(seq, num_new_tokens, hit), "KV cache: ", device_pool_.num_free_blocks(),
        " free blocks are too few for sequence ", seq.id, "; ask can_allocate first");
  const auto [it, inserted] = tables_.try_emplace(seq.id);
  Table& t = it->second;
  if (inserted && config_.enable_prefix_caching) {
    stats_.prefix_queried_tokens += seq.num_tokens();
    stats_.prefix_hit_tokens += hit.num_tokens;
  }
  check(hit.entries.size() == hit.blocks.size(), "KV cache: a prefix hit of ", hit.blocks.size(),
        " blocks has ", hit.entries.size(), " entries");
  device_pool_.add_reference(hit.blocks);
  t.blocks.insert(t.blocks.end(), hit.blocks.begin(), hit.blocks.end());
  t.entries.insert(t.entries.end(), hit.entries.begin(), hit.entries.end());
  release_outside_window(t, num_computed);

  std::vector<BlockCopy> copies;
  if (needs_copy_on_write(t, num_computed)) {
    const auto index = static_cast<size_t>(num_computed / config_.block_size);
    t.num_unchanged = std::min(t.num_unchanged, index);
    int32_t& shared = t.blocks[index];
    const int32_t fresh = device_pool_.allocate(1).front();
    copies.push_back({shared, fresh});
    device_pool_.release(std::span<const int32_t>(&shared, 1));
    shared = fresh;
    ++stats_.copy_on_write_blocks;
  }
  const int64_t missing =
      blocks_for(num_computed + num_new_tokens) - static_cast<int64_t>(t.blocks.size());
  if (missing > 0) {
    const std::vector<int32_t> fresh = device_pool_.allocate(static_cast<int32_t>(missing));
    t.blocks.insert(t.blocks.end(), fresh.begin(), fresh.end());
  }
  cache_full_blocks(seq, t, num_computed + num_new_tokens);
  return copies;
}

void KVCacheManager::release_outside_window(Table& t, int64_t num_computed) {
  if (config_.sliding_window <= 0) return;
  // The next query sits at num_computed and sees from here on.
  const int64_t first_visible = num_computed - config_.sliding_window + 1;
  while (t.num_released_blocks < t.blocks.size() &&
         static_cast<int64_t>(t.num_released_blocks + 1) * config_.block_size <= first_visible) {
    t.num_unchanged = std::min(t.num_unchanged, t.num_released_blocks);
    int32_t& block = t.blocks[t.num_released_blocks++];
    device_pool_.release(std::span<const int32_t>(&block, 1));
    block = BlockPool::kNullBlock;
  }
}

int64_t KVCacheManager::cache_block(const Sequence& seq, const Table& t, size_t index) {
  const int64_t parent = index == 0 ? kRootEntry : t.entries[index - 1];
  // A block released outside the sliding window keeps the entry it had.
  if (t.blocks[index] == BlockPool::kNullBlock) return t.entries.at(index);
  if (parent == kNoEntry) return kNoEntry;
  return device_pool_.cache_block(t.blocks[index], block_key(seq, parent, index));
}

void KVCacheManager::cache_full_blocks(const Sequence& seq, Table& t, int64_t num_tokens) {
  if (!config_.enable_prefix_caching) return;
  // A block holding a pending token is cached once the token is known, by
  // the sequence's next allocation.
  num_tokens = std::min(num_tokens, seq.num_known_tokens());
  const auto num_full = static_cast<size_t>(num_tokens / config_.block_size);
  while (t.entries.size() < num_full) {
    const size_t i = t.entries.size();
    t.entries.push_back(t.blocks[i] == BlockPool::kNullBlock ? kNoEntry : cache_block(seq, t, i));
  }
}

void KVCacheManager::cache_computed_blocks(const Sequence& seq) {
  const auto it = tables_.find(seq.id);
  if (it == tables_.end() || it->second.on_host) return;
  cache_full_blocks(seq, it->second, seq.num_computed_tokens);
}

void KVCacheManager::fork(SequenceId parent, SequenceId child) {
  const Table& source = table(parent);
  check(!source.on_host, "KV cache: cannot fork swapped-out sequence ", parent);
  check(!tables_.count(child), "KV cache: fork target ", child, " already holds blocks");
  Table copy = source;
  copy.num_unchanged = 0;  // the child's table is new to the workers
  device_pool_.add_reference(copy.blocks);
  tables_.emplace(child, std::move(copy));
}

void KVCacheManager::free(SequenceId seq) {
  const auto it = tables_.find(seq);
  check(it != tables_.end(), "KV cache: freeing sequence ", seq, " which holds no blocks");
  const std::vector<int32_t> tail_first(it->second.blocks.rbegin(), it->second.blocks.rend());
  (it->second.on_host ? *host_pool_ : device_pool_).release(tail_first);
  tables_.erase(it);
}

void KVCacheManager::truncate(SequenceId seq, int64_t num_tokens) {
  const auto it = tables_.find(seq);
  check(it != tables_.end() && !it->second.on_host, "KV cache: truncating sequence ", seq,
        " which holds no device blocks");
  Table& t = it->second;
  const auto keep = std::max(static_cast<size_t>(blocks_for(num_tokens)), t.num_released_blocks);
  if (t.blocks.size() <= keep) return;
  check(t.entries.size() <= keep, "KV cache: truncating cached blocks of sequence ", seq);
  const std::vector<int32_t> tail_first(t.blocks.rbegin(),
                                        t.blocks.rend() - static_cast<std::ptrdiff_t>(keep));
  device_pool_.release(tail_first);
  t.blocks.resize(keep);
  t.num_unchanged = std::min(t.num_unchanged, keep);
}

bool KVCacheManager::can_swap_out(SequenceId seq) const {
  return host_pool_ && !table(seq).on_host && num_held_blocks(seq) <= host_pool_->num_free_blocks();
}

bool KVCacheManager::can_swap_in(const Sequence& seq, int64_t num_new_tokens) const {
  const Table& t = table(seq.id);
  const int64_t growth = std::max<int64_t>(0, blocks_for(seq.num_computed_tokens + num_new_tokens) -
                                                  static_cast<int64_t>(t.blocks.size()));
  return t.on_host && num_held_blocks(seq.id) + growth <= device_pool_.num_free_blocks();
}

std::vector<BlockCopy> KVCacheManager::swap_out(SequenceId seq) {
  check(can_swap_out(seq), "KV cache: sequence ", seq, " cannot be swapped out (",
        host_pool_ ? host_pool_->num_free_blocks() : 0, " free host blocks)");
  Table& t = tables_.at(seq);
  const std::vector<int32_t> host = host_pool_->allocate(num_held_blocks(seq));
  const std::vector<int32_t> tail_first(t.blocks.rbegin(), t.blocks.rend());
  std::vector<BlockCopy> copies;
  for (int32_t& block : t.blocks) {
    if (block == BlockPool::kNullBlock) continue;
    copies.push_back({block, host[copies.size()]});
    block = copies.back().dst;
  }
  device_pool_.release(tail_first);
  t.on_host = true;
  t.num_unchanged = 0;
  stats_.swapped_out_blocks += static_cast<int64_t>(copies.size());
  return copies;
}

std::vector<BlockCopy> KVCacheManager::swap_in(const Sequence& seq) {
  check(can_swap_in(seq, 0), "KV cache: sequence ", seq.id, " cannot be swapped in (",
        device_pool_.num_free_blocks(), " free device blocks)");
  Table& t = tables_.at(seq.id);
  const std::vector<int32_t> device = device_pool_.allocate(num_held_blocks(seq.id));
  const std::vector<int32_t> tail_first(t.blocks.rbegin(), t.blocks.rend());
  std::vector<BlockCopy> copies;
  for (int32_t& block : t.blocks) {
    if (block == BlockPool::kNullBlock) continue;
    copies.push_back({block, device[copies.size()]});
    block = copies.back().dst;
  }
  host_pool_->release(tail_first);
  t.on_host = false;
  t.num_unchanged = 0;
  // The restored blocks hold the same tokens: make them hittable again (an
  // entry of theirs still cached elsewhere is kept).
  for (size_t i = 0; i < t.entries.size(); ++i) t.entries[i] = cache_block(seq, t, i);
  stats_.swapped_in_blocks += static_cast<int64_t>(copies.size());
  return copies;
}

}  // namespace hive
