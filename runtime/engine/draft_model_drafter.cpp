#include "runtime/engine/draft_model_drafter.hpp"

#include <algorithm>

#include "base/error.hpp"
#include "runtime/model/forward_batch.hpp"
#include "runtime/model/rejection_sampler.hpp"
#include "runtime/model/sampling.hpp"

namespace hive {
namespace {

KVCacheConfig draft_kv_config(const DraftModelConfig& config, const ModelConfig& model) {
  KVCacheConfig kv;
  kv.block_size = config.block_size;
  kv.num_device_blocks = config.num_blocks;
  kv.sliding_window = model.sliding_window;
  return kv;
}

}  // namespace

DraftModelDrafter::DraftModelDrafter(Model& draft, const DraftModelConfig& config,
                                     int64_t target_vocab_size)
    : model_(draft),
      config_(config),
      cache_(draft.backend(), draft.config(), config.num_blocks, config.block_size, 0,
             config.kv_cache_dtype),
      kv_(draft_kv_config(config, draft.config())) {
  check(draft.config().vocab_size == target_vocab_size, "draft model ",
        draft.directory().string(), ": its vocabulary has ", draft.config().vocab_size,
        " tokens, the target's ", target_vocab_size, "; speculation needs the same tokenizer");
}

void DraftModelDrafter::release(SequenceId seq) {
  if (kv_.has_blocks(seq)) kv_.free(seq);
  states_.erase(seq);
}

bool DraftModelDrafter::catch_up(State& state, const Sequence& seq, int64_t num_tokens) {
  Sequence& shadow = *state.shadow;
  // The K/V it holds stays valid up to the first token where the two
  // differ (a rejected draft); the last token always runs again, for its
  // logits.
  const auto mismatch = std::mismatch(shadow.token_ids.begin(), shadow.token_ids.end(),
                                      seq.token_ids.begin(), seq.token_ids.begin() + num_tokens);
  const int64_t shared = std::min<int64_t>(
      {mismatch.first - shadow.token_ids.begin(), shadow.num_computed_tokens, num_tokens - 1});
  if (shared < shadow.num_computed_tokens) {
    if (kv_.has_blocks(shadow.id)) kv_.truncate(shadow.id, shared);
    shadow.num_computed_tokens = shared;
  }
  shadow.token_ids.assign(seq.token_ids.begin(), seq.token_ids.begin() + num_tokens);
  if (kv_.can_allocate(shadow, num_tokens - shared)) return true;
  // No room to catch up: its blocks go to the others.
  release(shadow.id);
  return false;
}

std::vector<Draft> DraftModelDrafter::propose(std::span<const DraftQuery> queries) {
  std::vector<Active> active(queries.size());
  std::vector<Active*> runs;
  for (size_t i = 0; i < queries.size(); ++i) {
    const Sequence& seq = *queries[i].seq;
    auto [it, fresh] = states_.try_emplace(seq.id);
    State& state = it->second;
    if (fresh) {
      state.shadow = std::make_unique<Sequence>(seq.id, seq.request, 0);
      // Its own stream, apart from the target's (which verification draws).
      state.rng.seed(seq.request->sampling.seed.value_or(0) ^ 0x5eed0fd4af7ULL ^
                     static_cast<uint64_t>(seq.sample_index));
    }
    active[i].query = &queries[i];
    if (!catch_up(state, seq, seq.num_known_tokens())) continue;
    active[i].state = &it->second;
    runs.push_back(&active[i]);
  }
  while (!runs.empty()) forward(runs);
  std::vector<Draft> drafts;
  for (Active& a : active) drafts.push_back(std::move(a.draft));
  return drafts;
}

// One forward pass over every run's uncomputed tokens; each samples its
// next draft token, and those that want more stay in `runs`.
void DraftModelDrafter::forward(std::vector<Active*>& runs) {
  ForwardBatch batch;
  // Those the pool has no room for stop here, with the draft they have.
  std::erase_if(runs, [&](Active* a) {
    Sequence& shadow = *a->state->shadow;
    if (kv_.can_allocate(shadow, shadow.num_tokens() - shadow.num_computed_tokens)) {
      kv_.allocate(shadow, shadow.num_tokens() - shadow.num_computed_tokens);
      return false;
    }
    shadow.token_ids.resize(static_cast<size_t>(shadow.num_computed_tokens));
    return true;
  });
  if (runs.empty()) return;
  for (Active* a : runs) {
    Sequence& shadow = *a->state->shadow;
    const int64_t n = shadow.num_tokens() - shadow.num_computed_tokens;
    const std::span<const int32_t> tokens(shadow.token_ids.data() + shadow.num_computed_tokens,
                                          static_cast<size_t>(n));
    batch.logits_rows.push_back(batch.add_run(shadow.num_computed_tokens, tokens,
                                              kv_.block_table(shadow.id), config_.block_size));
    shadow.num_computed_tokens += n;
  }
  const int64_t vocab = model_.config().vocab_size;
  const auto rows = static_cast<int64_t>(runs.size());
  logits_.resize(static_cast<size_t>(rows * vocab));
  model_.forward(batch, cache_, Tensor::view(logits_.data(), DType::f32, {rows, vocab}));

  std::vector<Active*> next;
  for (size_t r = 0; r < runs.size(); ++r) {
    Active& a = *runs[r];
    const std::span<const float> row(logits_.data() + static_cast<int64_t>(r) * vocab,
                                     static_cast<size_t>(vocab));
    const SamplingParams& params = a.query->seq->request->sampling;
    int32_t token = 0;
    try {
      if (params.temperature == 0.0f) {
        token = argmax(row);
      } else {
        const std::vector<double> q = sampling_probs(row, params);
        token = draw_from(q, uniform(a.state->rng));
        a.draft.probs.emplace_back(q.begin(), q.end());
      }
    } catch (const Error&) {
      continue;  // unusable draft logits: propose what there is
    }
    a.draft.token_ids.push_back(token);
    if (static_cast<int>(a.draft.token_ids.size()) >= a.query->max_tokens) continue;
    a.state->shadow->token_ids.push_back(token);
    next.push_back(&a);
  }
  runs = std::move(next);
}

}  // namespace hive
