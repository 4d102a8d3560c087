#include "actors/expert_actor.hpp"

#include <caf/send.hpp>

namespace hive {

expert_actor::behavior_type expert(expert_actor::stateful_pointer<ExpertState> self,
                                   ExpertSetup setup) {
  self->state.load = ExpertLoad(setup.num_layers, setup.num_experts);
  self->state.replicate_hot_experts = setup.replicate_hot_experts;
  return {
      [self](load_atom, const std::vector<int64_t>& delta, const std::vector<int64_t>& remote) {
        ExpertState& st = self->state;
        st.load.add(delta, remote);
        // Decided once, from the first traffic: replicas are only ever added
        // on the workers, so a hot set that kept moving would grow without bound.
        if (st.replicated.empty() && st.replicate_hot_experts > 0 && st.load.total() > 0) {
          st.replicated = st.load.hottest(st.replicate_hot_experts);
          caf::anon_send(caf::actor_cast<caf::actor>(self->current_sender()), replicas_atom_v,
                         st.replicated);
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
        stats.replicated = st.replicated;
        return stats;
      },
  };
}

}  // namespace hive
