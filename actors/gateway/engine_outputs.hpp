#pragma once
// The gateway's one consumer of the engine (an EngineClient, as vLLM has one
// output queue per client): each step's outputs of every API request arrive
// in one OutputBatch, cross to the I/O thread in one post, and are handed to
// each engine request's Generation here. The text of every choice is in one
// OutputProcessor, the same class `hive run` uses, so the gateway keeps no
// text of its own.
//
// The engine's thread only moves the batch over; everything else runs on
// the I/O thread, where Generations live, so nothing here is locked.
#include <boost/asio/any_io_executor.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "actors/engine.hpp"
#include "runtime/engine/input_processor.hpp"
#include "runtime/engine/output_processor.hpp"

namespace hive::gateway {

class Generation;

class EngineOutputs : public std::enable_shared_from_this<EngineOutputs> {
 public:
  static std::shared_ptr<EngineOutputs> make(Engine& engine, const Tokenizer& tokenizer,
                                             boost::asio::any_io_executor io);
  // Closes the gate: no batch is posted to the I/O context after this
  // returns (the engine may outlive the server and its io_context).
  ~EngineOutputs();

  // Sets up the request's text and submits it; its events go to `owner`.
  // Throws hive::Error if the engine refuses it.
  void submit(const ProcessedRequest& request, std::shared_ptr<Generation> owner);
  // The owner no longer listens: its text and its later events are dropped.
  void forget(const std::string& request_id);
  // The server is gone: every owner is let go. A Generation holds its
  // session and a session its Generation until the request's last event,
  // which a stopped io_context never runs: without this they leak.
  void forget_all();
  OutputProcessor& text() { return text_; }

 private:
  EngineOutputs(Engine& engine, const Tokenizer& tokenizer);
  void dispatch(OutputBatch& batch);

  struct Route {
    std::shared_ptr<Generation> owner;
    int samples_left = 0;
  };
  // Shared with the client's callback, which posts only while it is open.
  struct Gate {
    std::mutex mutex;
    bool open = true;
  };
  std::shared_ptr<Gate> gate_ = std::make_shared<Gate>();
  Engine& engine_;
  OutputProcessor text_;
  std::unordered_map<std::string, Route> routes_;  // by engine request id
  std::optional<EngineClient> client_;             // last: its callback finds the rest
};

}  // namespace hive::gateway
