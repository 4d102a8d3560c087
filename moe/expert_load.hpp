#pragma once
// Per-layer, per-expert routing statistics: how many (token, expert)
// assignments each expert received and how many of them crossed to another
// rank (all-to-all traffic), accumulated from per-step deltas, the
// imbalance of each layer (max / mean over its experts; 1 is perfectly
// even) and the hottest experts over all layers (the candidates for
// replication on every rank). Pure state, no threads; the expert actor owns one.
#include <cstdint>
#include <span>
#include <vector>

namespace hive {

class ExpertLoad {
 public:
  ExpertLoad(int num_layers, int num_experts);

  // delta: [layer * num_experts + expert], tokens routed in one step;
  // remote (empty, or the same shape): those sent to another rank.
  void add(std::span<const int64_t> delta, std::span<const int64_t> remote = {});

  int num_layers() const { return num_layers_; }
  int num_experts() const { return num_experts_; }
  const std::vector<int64_t>& load() const { return load_; }
  const std::vector<int64_t>& remote() const { return remote_; }
  int64_t total() const { return total_; }
  // max / mean of the layer's experts; 0 for a layer nothing was routed in.
  double imbalance(int layer) const;
  // The n experts with the most tokens summed over layers, hottest first
  // (ties: lower expert id first).
  std::vector<int32_t> hottest(int n) const;

 private:
  int num_layers_, num_experts_;
  std::vector<int64_t> load_;
  std::vector<int64_t> remote_;
  int64_t total_ = 0;
};

}  // namespace hive
