#pragma once
// The memory-bandwidth roofline of decode, for the benchmark programs: a
// decode step at batch 1 reads every active weight once (plus the KV cache),
// so tokens/s <= read bandwidth / bytes per token. The bandwidth is probed
// in the benchmark's own run, by summing a buffer far larger than the caches
// with the threads the model uses.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <numeric>
#include <vector>

#include "runtime/model/model.hpp"
#include "runtime/model/model_stats.hpp"

namespace hive::bench {

// Best of several passes of a parallel read of `bytes` bytes; bytes/s.
inline double probe_read_bandwidth(size_t bytes = size_t{1} << 30) {
  std::vector<uint64_t> buffer(bytes / sizeof(uint64_t));
  std::iota(buffer.begin(), buffer.end(), 0);  // touch every page
  double best = 0;
  volatile uint64_t sink = 0;
  for (int pass = 0; pass < 5; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    uint64_t total = 0;
#pragma omp parallel for reduction(+ : total) schedule(static)
    for (size_t i = 0; i < buffer.size(); ++i) total += buffer[i];
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    sink = sink + total;
    best = std::max(best, static_cast<double>(bytes) / seconds);
  }
  return best;
}

// Weight bytes one decode token reads: the active parameters at their stored
// width, minus the embedding table (one row is read, not the table) unless
// it is tied to the output projection.
inline double decode_weight_bytes_per_token(const Model& model) {
  const ModelStats stats = model_stats(model.config(), model.weights());
  const ModelConfig& c = model.config();
  const double bytes_per_param =
      static_cast<double>(stats.weight_bytes) / static_cast<double>(stats.total_parameters);
  double bytes = static_cast<double>(stats.active_parameters) * bytes_per_param;
  if (!c.tie_word_embeddings)
    bytes -= static_cast<double>(c.vocab_size * c.hidden_size) * bytes_per_param;
  return bytes;
}

}  // namespace hive::bench
