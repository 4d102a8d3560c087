#pragma once
// A draft model as a Drafter: a smaller model with the target's vocabulary
// proposes γ tokens per sequence by running autoregressively in its own KV
// pool. It keeps, per sequence, the tokens whose K/V it holds; a proposal
// first catches up from the longest prefix those share with the sequence
// now (the drafts the target rejected fall away there), then samples γ
// tokens with the request's sampling parameters (penalties aside), returning
// their distributions for the verification to divide by. Greedy requests
// get the draft's argmax and no distributions.
//
// Sequences of one proposal run batched: one forward pass per drafted
// position. A sequence whose blocks do not fit in the pool gets no draft
// (it decodes without speculation); the drafter never fails a request.
#include <cstdint>
#include <memory>
#include <random>
#include <unordered_map>
#include <vector>

#include "runtime/core/drafter.hpp"
#include "runtime/core/kv_cache_manager.hpp"
#include "runtime/model/model.hpp"
#include "runtime/model/paged_kv_cache.hpp"

namespace hive {

struct DraftModelConfig {
  int32_t block_size = 16;
  int32_t num_blocks = 0;  // the draft's KV pool, including the null block
  DType kv_cache_dtype = kDefaultKVCacheDType;
};

class DraftModelDrafter final : public Drafter {
 public:
  // The draft must outlive the drafter and share the target's vocabulary
  // (`target_vocab_size`; a mismatch throws hive::Error).
  DraftModelDrafter(Model& draft, const DraftModelConfig& config, int64_t target_vocab_size);

  std::vector<Draft> propose(std::span<const DraftQuery> queries) override;
  void release(SequenceId seq) override;

  // Sequences the drafter holds K/V for.
  size_t num_sequences() const { return states_.size(); }
  const KVCacheManager& kv_cache() const { return kv_; }

 private:
  struct State {
    std::unique_ptr<Sequence> shadow;  // the tokens whose K/V the draft holds, then one to run
    std::mt19937_64 rng;
  };
  struct Active {
    const DraftQuery* query = nullptr;
    State* state = nullptr;
    Draft draft;
  };
  // Rolls the state back to what it shares with the sequence; false when
  // the draft's pool has no room for its next run.
  bool catch_up(State& state, const Sequence& seq, int64_t num_tokens);
  void forward(std::vector<Active*>& runs);

  Model& model_;
  DraftModelConfig config_;
  PagedKVCache cache_;
  KVCacheManager kv_;
  std::unordered_map<SequenceId, State> states_;
  std::vector<float> logits_;
};

}  // namespace hive
