#include "actors/expert_actor.hpp"

#include <caf/send.hpp>

namespace hive {

namespace {

// A step's [layer * num_experts + expert] delta summed over layers: the
// placement is one for all layers, so it balances their total.
std::vector<int64_t> per_expert(const std::vector<int64_t>& delta, int num_experts) {
  std::vector<int64_t> sum(static_cast<size_t>(num_experts), 0);
  for (size_t i = 0; i < delta.size(); ++i) sum[i % sum.size()] += delta[i];
  return sum;
}

// Experts every rank holds, as metrics report them.
std::vector<int32_t> held_everywhere(const ExpertPlacement& placement) {
  std::vector<int32_t> experts;
  for (int e = 0; e < placement.num_experts(); ++e)
    if (placement.holders(e).size() == static_cast<size_t>(placement.world_size()))
      experts.push_back(e);
  return experts;
}

}  // namespace

expert_actor::behavior_type expert(expert_actor::stateful_pointer<ExpertState> self,
                                   ExpertSetup setup) {
  ExpertState& state = self->state;
  state.load = ExpertLoad(setup.num_layers, setup.num_experts);
  state.replicate_hot_experts = setup.replicate_hot_experts;
  state.world_size = setup.world_size;
  if (setup.num_experts > 0 && setup.rebalance.period_steps > 0)
    state.balancer.emplace(ExpertPlacement(setup.num_experts, setup.world_size, setup.placement),
                           setup.rebalance);
  return {
      [self](load_atom, const std::vector<int64_t>& delta, const std::vector<int64_t>& remote) {
        ExpertState& st = self->state;
        st.load.add(delta, remote);
        const auto reply_to = caf::actor_cast<caf::actor>(self->current_sender());
        if (st.balancer) {
          if (auto replicas = st.balancer->add_step(per_expert(delta, st.load.num_experts())))
            caf::anon_send(reply_to, replicas_atom_v, std::move(*replicas));
          return;
        }
        // Fixed once, from the first traffic: a hot set that kept moving
        // would otherwise copy weights every step.
        if (st.replicated.empty() && st.replicate_hot_experts > 0 && st.load.total() > 0) {
          st.replicated = st.load.hottest(st.replicate_hot_experts);
          std::vector<std::vector<int32_t>> replicas(static_cast<size_t>(st.world_size),
                                                     st.replicated);
          caf::anon_send(reply_to, replicas_atom_v, std::move(replicas));
        }
      },
      [self](metrics_atom) {
        const ExpertState& st = self->state;
        ExpertStats stats;
        stats.num_experts = st.load.num_experts();
        stats.load = st.load.load();
        stats.remote = st.load.remote();
        for (int layer = 0; layer < st.load.num_layers(); ++layer)
          stats.imbalance.push_back(st.load.imbalance(layer));
        stats.replicated = st.balancer ? held_everywhere(st.balancer->placement()) : st.replicated;
        stats.replans = st.balancer ? st.balancer->num_replans() : 0;
        return stats;
      },
  };
}

}  // namespace hive
