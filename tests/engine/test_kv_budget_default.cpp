// The engines' default KV budget on the bundled model: 0.9 of the memory
// free once the weights are loaded, no more than max_num_seqs sequences of
// the model's context length can fill, and an explicit byte budget as given.
#include <gtest/gtest.h>

#include <algorithm>

#include "kernels/cpu/cpu_backend.hpp"
#include "runtime/engine/llm_engine.hpp"
#include "tests/common/model_dirs.hpp"

namespace hive {
namespace {

// A CPU backend whose free memory is a fixed figure.
class FixedFreeMemoryBackend : public CpuBackend {
 public:
  explicit FixedFreeMemoryBackend(int64_t free_bytes) : free_bytes_(free_bytes) {}
  int64_t free_memory_bytes() const override { return free_bytes_; }

 private:
  int64_t free_bytes_;
};

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kOldDefault = 64 * kMiB;  // the fixed budget before this default

struct Sizes {
  int64_t bytes_per_block, blocks_per_seq;
};

Sizes sizes(const Model& model, const EngineConfig& config) {
  const int64_t context = model.config().max_position_embeddings;
  return {kv_bytes_per_block(model.config(), config.block_size, config.kv_cache_dtype),
          (context + config.block_size - 1) / config.block_size};
}

int64_t device_blocks(Model& model, const EngineConfig& config) {
  return engine_core_config(model, config).kv_cache.num_device_blocks;
}

TEST(KVBudgetDefault, AShareOfTheFreeMemory) {
  FixedFreeMemoryBackend backend(100 * kMiB);
  Model model(test::model_dir("bundled/hive-moe-target"), backend);
  EngineConfig config;
  config.scheduler.max_num_seqs = 1024;  // a ceiling far above the share
  const Sizes s = sizes(model, config);
  ASSERT_GT(s.blocks_per_seq * 1024 * s.bytes_per_block, 90 * kMiB);
  EXPECT_EQ(device_blocks(model, config),
            static_cast<int64_t>(0.9 * 100 * kMiB) / s.bytes_per_block);
  EXPECT_GT(device_blocks(model, config), kOldDefault / s.bytes_per_block);
  // Two in-process ranks share it.
  EXPECT_EQ(engine_core_config(model, config, 2).kv_cache.num_device_blocks,
            static_cast<int64_t>(0.9 * 50 * kMiB) / s.bytes_per_block);
}

// A draft model's pool has as many blocks as the target's: its bytes per
// block come out of the same share of the free memory. A budget in bytes
// is the target's pool, as given.
TEST(KVBudgetDefault, TheDraftModelsPoolIsInTheBudget) {
  FixedFreeMemoryBackend backend(100 * kMiB);
  Model model(test::model_dir("bundled/hive-moe-target"), backend);
  const Model draft(test::model_dir("bundled/hive-draft"), backend);
  EngineConfig config;
  config.scheduler.max_num_seqs = 1024;
  const int64_t target = sizes(model, config).bytes_per_block;
  const int64_t both =
      target + kv_bytes_per_block(draft.config(), config.block_size, config.kv_cache_dtype);
  ASSERT_GT(both, target);
  EXPECT_EQ(engine_core_config(model, config, 1, 1, &draft).kv_cache.num_device_blocks,
            static_cast<int64_t>(0.9 * 100 * kMiB) / both);
  config.kv_budget.bytes = 32 * kMiB;
  EXPECT_EQ(device_blocks(model, config), 32 * kMiB / target);
  EXPECT_EQ(engine_core_config(model, config, 1, 1, &draft).kv_cache.num_device_blocks,
            32 * kMiB / target);
}

TEST(KVBudgetDefault, NoMoreThanTheSequencesCanFill) {
  FixedFreeMemoryBackend backend(int64_t{20} << 30);  // 20 GiB free
  Model model(test::model_dir("bundled/hive-moe-target"), backend);
  EngineConfig config;
  const Sizes s = sizes(model, config);
  for (const int64_t max_num_seqs : {16, 64, 256}) {
    config.scheduler.max_num_seqs = max_num_seqs;
    EXPECT_EQ(device_blocks(model, config), max_num_seqs * s.blocks_per_seq + 1)
        << max_num_seqs << " sequences";
  }
  config.scheduler.max_model_len = 100;  // 7 blocks of 16
  EXPECT_EQ(device_blocks(model, config), 256 * 7 + 1);
}

TEST(KVBudgetDefault, AByteBudgetIsTakenAsGiven) {
  FixedFreeMemoryBackend backend(int64_t{20} << 30);
  Model model(test::model_dir("bundled/hive-moe-target"), backend);
  EngineConfig config;
  const Sizes s = sizes(model, config);
  config.kv_budget.bytes = 8 * s.bytes_per_block;  // below the ceiling
  EXPECT_EQ(device_blocks(model, config), 8);
  config.kv_budget.bytes = 20000 * s.bytes_per_block;  // above it: still taken
  EXPECT_EQ(device_blocks(model, config), 20000);
}

// On this machine's real free memory: more than the old 64 MiB where memory
// allows it, and never past the ceiling.
TEST(KVBudgetDefault, OnThisMachine) {
  CpuBackend cpu;
  Model model(test::model_dir("bundled/hive-moe-target"), cpu);
  EngineConfig config;
  config.scheduler.max_num_seqs = 256;
  const Sizes s = sizes(model, config);
  const int64_t ceiling = 256 * s.blocks_per_seq + 1;
  const int64_t blocks = device_blocks(model, config);
  EXPECT_LE(blocks, ceiling);
  if (cpu.free_memory_bytes() < 2 * ceiling * s.bytes_per_block)
    GTEST_SKIP() << "less than " << 2 * ceiling * s.bytes_per_block << " bytes free";
  EXPECT_EQ(blocks, ceiling);
  EXPECT_GT(blocks * s.bytes_per_block, kOldDefault);
}

}  // namespace
}  // namespace hive
