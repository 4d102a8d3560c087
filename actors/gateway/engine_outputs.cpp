#include "actors/gateway/engine_outputs.hpp"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <utility>

#include "actors/gateway/generation.hpp"

namespace hive::gateway {

EngineOutputs::EngineOutputs(Engine& engine, const Tokenizer& tokenizer)
    : engine_(engine), text_(tokenizer) {}

std::shared_ptr<EngineOutputs> EngineOutputs::make(Engine& engine, const Tokenizer& tokenizer,
                                                   boost::asio::any_io_executor io) {
  std::shared_ptr<EngineOutputs> outputs(new EngineOutputs(engine, tokenizer));
  // Weak: the client lives in what it would keep alive. The gate keeps a
  // batch that arrives after the server went away from its io_context.
  std::weak_ptr<EngineOutputs> weak = outputs;
  outputs->client_.emplace(engine.connect([weak, io, gate = outputs->gate_](OutputBatch& batch) {
    const std::lock_guard lock(gate->mutex);
    if (!gate->open) return;
    boost::asio::post(io, [weak, batch = std::move(batch)]() mutable {
      if (const std::shared_ptr<EngineOutputs> self = weak.lock()) self->dispatch(batch);
    });
  }));
  return outputs;
}

EngineOutputs::~EngineOutputs() {
  const std::lock_guard lock(gate_->mutex);
  gate_->open = false;
}

void EngineOutputs::submit(const ProcessedRequest& r, std::shared_ptr<Generation> owner) {
  const std::string& id = r.request.id;
  text_.add_request(id, r.request.n, r.request.prompt_token_ids, r.text);
  routes_[id] = Route{std::move(owner), std::max(r.request.n, 1)};
  try {
    engine_.submit(r.request, *client_);
  } catch (...) {
    forget(id);
    throw;
  }
}

void EngineOutputs::forget(const std::string& request_id) {
  routes_.erase(request_id);
  text_.abort_request(request_id);
}

void EngineOutputs::forget_all() {
  for (const auto& [id, route] : std::exchange(routes_, {})) text_.abort_request(id);
}

void EngineOutputs::dispatch(OutputBatch& batch) {
  for (TokenEvent& event : batch.events) {
    const auto it = routes_.find(event.request_id);
    if (it == routes_.end()) continue;  // forgotten
    // Held here: the owner may forget the request while it handles this.
    const std::shared_ptr<Generation> owner = it->second.owner;
    const bool last = event.finished && (event.sample_index < 0 || --it->second.samples_left == 0);
    owner->handle(event);
    if (last) forget(event.request_id);
  }
}

}  // namespace hive::gateway
