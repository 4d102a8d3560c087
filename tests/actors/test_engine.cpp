// hive::Engine on real threads: the blocking iterator, the callback, cancel,
// metrics and shutdown, against the offline engine's outputs.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "actors/engine.hpp"
#include "base/error.hpp"
#include "kernels/cpu/cpu_backend.hpp"

namespace hive {
namespace {

HiveConfig fixture_options() {
  HiveConfig options;
  options.model = std::string(HIVE_TEST_DATA) + "/models/qwen3_moe";
  options.engine.block_size = 4;
  options.engine.kv_budget = KVBudget{int64_t{1} << 20, 0.0};
  return options;
}

Request greedy(const std::string& id, std::vector<int32_t> prompt, int64_t max_tokens) {
  Request r;
  r.id = id;
  r.prompt_token_ids = std::move(prompt);
  r.stop.max_tokens = max_tokens;
  r.stop.ignore_eos = true;
  return r;
}

std::vector<int32_t> offline(const Request& request) {
  CpuBackend cpu;
  Model model(fixture_options().model, cpu);
  LLMEngine engine(model, fixture_options().engine);
  return engine.generate({request}).at(0).samples.at(0).token_ids;
}

// The engine keeps select_backend's note for its caller to print (hive serve
// and hive run do): on a device asked for or found but not used, it says
// why the CPU runs. Automatic today always means the CPU: no CUDA device
// here, and with one the CUDA backend still lacks ops the model needs.
TEST(Engine, KeepsTheDeviceNote) {
  HiveConfig options = fixture_options();
  options.device = DeviceChoice::cpu;
  EXPECT_EQ(Engine(options).device_note(), "");
  options.device = DeviceChoice::automatic;
  const Engine automatic(options);
  EXPECT_NE(automatic.device_note().find("using the CPU backend"), std::string::npos)
      << automatic.device_note();
}

TEST(Engine, StreamsCallbacksAndMetrics) {
  const Request a = greedy("a", {5, 9, 13, 2}, 6);
  const Request b = greedy("b", {8, 1, 3}, 5);
  Engine engine(fixture_options());
  std::vector<TokenEvent> callback_events;  // written on an actor thread, read after shutdown
  engine.submit(b, [&](const TokenEvent& e) { callback_events.push_back(e); });
  std::vector<int32_t> streamed;
  TokenStream stream = engine.submit(a);
  for (const TokenEvent& event : stream)
    if (!event.finished)
      streamed.insert(streamed.end(), event.token_ids.begin(), event.token_ids.end());
  EXPECT_EQ(streamed, offline(a));
  EXPECT_EQ(engine.shutdown(ShutdownMode::drain), 0);
  ASSERT_FALSE(callback_events.empty());
  EXPECT_TRUE(callback_events.back().finished);
  EXPECT_EQ(callback_events.back().token_ids, offline(b));
  EXPECT_THROW(engine.submit(a), Error);
}

// A client's requests reach it in one batch per step, in the engine's
// order, with the same tokens as one stream each; shutdown waits for the
// client's last batch.
TEST(Engine, AClientGetsOneBatchPerStep) {
  Engine engine(fixture_options());
  std::vector<OutputBatch> batches;  // written on the engine's thread, read after shutdown
  const EngineClient client =
      engine.connect([&](OutputBatch& batch) { batches.push_back(std::move(batch)); });
  std::vector<Request> requests;
  for (int i = 0; i < 8; ++i) {
    requests.push_back(greedy(str_cat("r", i), {5, 9, 13, static_cast<int32_t>(i)}, 5));
    engine.submit(requests.back(), client);
  }
  EngineMetrics m = engine.metrics();
  for (; m.num_finished_requests < 8; m = engine.metrics())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(m.num_output_messages, m.num_output_steps);
  EXPECT_EQ(engine.shutdown(ShutdownMode::drain), 0);
  std::map<std::string, std::vector<int32_t>> streamed, finished;
  for (const OutputBatch& batch : batches)
    for (const TokenEvent& e : batch.events) {
      auto& ids = e.finished ? finished[e.request_id] : streamed[e.request_id];
      ids.insert(ids.end(), e.token_ids.begin(), e.token_ids.end());
    }
  for (const Request& r : requests) {
    EXPECT_EQ(streamed[r.id], offline(r)) << r.id;
    EXPECT_EQ(finished[r.id], offline(r)) << r.id;
  }
  EXPECT_LT(batches.size(), size_t{8 * 5});
}

// A client's requests end with the cause when the scheduler stops: those in
// flight then, and those submitted after it (a submission to the stopped
// scheduler would be dropped, and the gateway request would never end).
TEST(Engine, AClientsRequestsEndWhenTheSchedulerStops) {
  Engine engine(fixture_options());
  std::mutex mutex;
  std::map<std::string, std::string> ended;  // request id -> error
  const EngineClient client = engine.connect([&](OutputBatch& batch) {
    const std::lock_guard lock(mutex);
    for (const TokenEvent& e : batch.events)
      if (e.finished) ended[e.request_id] = e.error;
  });
  const auto wait_for = [&](const std::string& id) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      {
        const std::lock_guard lock(mutex);
        if (ended.count(id) > 0) return ended[id];
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return std::string("(never ended)");
  };
  engine.submit(greedy("before", {5, 9, 13}, 400), client);
  engine.inject_scheduler_stop();
  engine.submit(greedy("racing", {5, 9, 13}, 4), client);
  for (const char* id : {"before", "racing"})
    EXPECT_NE(wait_for(id).find("the engine's scheduler stopped"), std::string::npos) << id;
  engine.submit(greedy("after", {5, 9, 13}, 4), client);
  EXPECT_NE(wait_for("after").find("the engine's scheduler stopped"), std::string::npos);
  EXPECT_EQ(engine.shutdown(ShutdownMode::drain), 0);
}

TEST(Engine, ASubmissionThroughAnotherEnginesClientIsRefused) {
  Engine first(fixture_options());
  Engine second(fixture_options());
  const EngineClient client = first.connect([](OutputBatch&) {});
  EXPECT_THROW(second.submit(greedy("r", {1, 2}, 2), client), Error);
}

TEST(Engine, MetricsCountTheWork) {
  Engine engine(fixture_options());
  TokenStream stream = engine.submit(greedy("a", {1, 2, 3}, 4));
  while (stream.next()) {
  }
  const EngineMetrics m = engine.metrics();
  EXPECT_EQ(m.num_generated_tokens, 4);
  EXPECT_EQ(m.num_finished_requests, 1);
  EXPECT_EQ(m.num_free_blocks, m.num_blocks);
  EXPECT_EQ(m.num_experts, 8);
}

TEST(Engine, ShutdownFailsInFlightRequestsWithAClearError) {
  Engine engine(fixture_options());
  TokenStream stream = engine.submit(greedy("long", {1, 2, 3}, 200));
  std::optional<TokenEvent> first = stream.next();
  ASSERT_TRUE(first && !first->finished);
  EXPECT_EQ(engine.shutdown(ShutdownMode::fail_in_flight), 1);
  std::optional<TokenEvent> last;
  while (auto e = stream.next()) last = e;
  ASSERT_TRUE(last && last->finished);
  EXPECT_EQ(last->error, "the engine shut down with the request in flight");
}

TEST(Engine, CancelEndsTheStreamAsAborted) {
  Engine engine(fixture_options());
  TokenStream stream = engine.submit(greedy("c", {4, 4, 4}, 200));
  ASSERT_TRUE(stream.next());
  engine.cancel("c");
  std::optional<TokenEvent> last;
  while (auto e = stream.next()) last = e;
  ASSERT_TRUE(last && last->finished);
  EXPECT_EQ(last->reason(), FinishReason::aborted);
  EXPECT_LT(last->token_ids.size(), 200u);
}

// A stream ends even when the request is refused before it could start.
TEST(Engine, ARefusedRequestEndsItsStreamWithTheError) {
  Engine engine(fixture_options());
  Request none = greedy("none", {4, 4}, 3);
  none.n = 0;
  std::vector<TokenEvent> events;
  for (const TokenEvent& e : engine.submit(none)) events.push_back(e);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(events[0].finished);
  EXPECT_NE(events[0].error.find("n must be in [1, max_num_seqs = 64] (got 0)"), std::string::npos)
      << events[0].error;
  Request huge = greedy("huge", {4, 4}, std::numeric_limits<int64_t>::max());
  events.clear();
  for (const TokenEvent& e : engine.submit(huge)) events.push_back(e);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_NE(events[0].error.find("exceed the model's context length of 256 tokens"),
            std::string::npos)
      << events[0].error;
}

// Options the scheduler or KV manager would reject fail the constructor, in
// the caller's thread, instead of the actor that would build them.
TEST(Engine, BadSchedulerOptionsFailTheConstructor) {
  HiveConfig o = fixture_options();
  o.engine.scheduler.max_num_seqs = 0;
  try {
    Engine engine(o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_num_seqs must be >= 1 (got 0)"), std::string::npos)
        << e.what();
  }
}

// n > 1 asks for several samples; cancelled before the prompt is done, the
// stream still ends (with one aborted event per sample).
TEST(Engine, CancelBeforeParallelSamplesForkEndsEverySample) {
  HiveConfig o = fixture_options();
  o.engine.scheduler.max_num_batched_tokens = 4;  // the prompt takes several steps
  Engine engine(o);
  Request pair = greedy("pair", std::vector<int32_t>(40, 7), 5);
  pair.n = 2;
  TokenStream stream = engine.submit(pair);
  engine.cancel("pair");
  int finished = 0;
  for (const TokenEvent& e : stream) {
    EXPECT_TRUE(e.finished);
    EXPECT_EQ(e.reason(), FinishReason::aborted);
    ++finished;
  }
  EXPECT_EQ(finished, 2);
  const EngineMetrics m = engine.metrics();
  EXPECT_EQ(m.num_free_blocks, m.num_blocks);
  EXPECT_EQ(engine.shutdown(), 0);
}

// Polls metrics until `done` holds (the scheduler works asynchronously).
template <class Done>
EngineMetrics wait_for(Engine& engine, Done done) {
  for (int i = 0; i < 2000; ++i) {
    const EngineMetrics m = engine.metrics();
    if (done(m)) return m;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return engine.metrics();
}

// Nobody reads a dropped stream, or a callback that threw: the request is
// cancelled and its blocks come back (it ran to max_tokens before).
TEST(Engine, ADroppedStreamOrAThrowingCallbackCancelsItsRequest) {
  Engine engine(fixture_options());
  {
    TokenStream stream = engine.submit(greedy("dropped", {1, 2, 3}, 250));
    const std::optional<TokenEvent> first = stream.next();
    ASSERT_TRUE(first && !first->finished);
  }
  engine.submit(greedy("throws", {4, 5, 6}, 250),
                [](const TokenEvent&) { throw std::runtime_error("callback failed"); });
  const EngineMetrics m = wait_for(engine, [](const EngineMetrics& s) {
    return s.num_running == 0 && s.num_waiting == 0 && s.num_free_blocks == s.num_blocks;
  });
  EXPECT_EQ(m.num_running, 0);
  EXPECT_EQ(m.num_free_blocks, m.num_blocks);
  EXPECT_LT(m.num_generated_tokens, 2 * 250);
  EXPECT_EQ(engine.shutdown(), 0);
}

// A stream refused for a duplicate id, dropped unread, must not cancel the
// request that holds the id (its cancel names its own sink).
TEST(Engine, ADroppedDuplicateDoesNotCancelTheOriginal) {
  Engine engine(fixture_options());
  const Request original = greedy("x", {1, 2, 3}, 30);
  TokenStream stream = engine.submit(original);
  { TokenStream duplicate = engine.submit(original); }
  engine.submit(original, [](const TokenEvent&) { throw std::runtime_error("refused anyway"); });
  std::vector<int32_t> tokens;
  std::optional<TokenEvent> last;
  while (auto e = stream.next()) last = e;
  ASSERT_TRUE(last && last->finished);
  EXPECT_EQ(last->reason(), FinishReason::length) << last->error;
  EXPECT_EQ(last->token_ids, offline(original));
  EXPECT_EQ(engine.shutdown(), 0);
}

// shutdown(drain) returns after every callback ran its last event, so what
// the callbacks write may be read (and freed) as soon as it returns.
TEST(Engine, ShutdownReturnsAfterTheCallbacksRanTheirLastEvents) {
  for (int round = 0; round < 5; ++round) {
    Engine engine(fixture_options());
    std::vector<int> finished(4, 0);  // written by the callbacks, read after shutdown
    for (int i = 0; i < 4; ++i)
      engine.submit(greedy("r" + std::to_string(i), {1, 2, static_cast<int32_t>(3 + i)}, 3),
                    [&finished, i](const TokenEvent& e) {
                      if (!e.finished) return;
                      // A slow last event: shutdown() must still wait for it.
                      std::this_thread::sleep_for(std::chrono::milliseconds(2));
                      ++finished[static_cast<size_t>(i)];
                    });
    EXPECT_EQ(engine.shutdown(ShutdownMode::drain), 0);
    EXPECT_EQ(finished, std::vector<int>(4, 1)) << "round " << round;
  }
}

// Concurrent shutdowns: the second waits for the first, so neither returns
// while requests are still being drained.
TEST(Engine, ASecondShutdownWaitsForTheFirst) {
  Engine engine(fixture_options());
  std::atomic<bool> finished = false;
  engine.submit(greedy("slow", {1, 2, 3}, 40), [&](const TokenEvent& e) {
    if (e.finished) finished = true;
  });
  std::thread first([&] { engine.shutdown(ShutdownMode::drain); });
  std::thread second([&] {
    engine.shutdown(ShutdownMode::drain);
    EXPECT_TRUE(finished) << "a shutdown returned before the drain ended";
  });
  first.join();
  second.join();
  EXPECT_TRUE(finished);
}

// A stream may outlive its engine: it ends with the engine's error, and
// destroying the engine does not wait for it (it hung for ever before).
TEST(Engine, AStreamMayOutliveItsEngine) {
  std::optional<TokenStream> stream;
  std::optional<TokenStream> done;
  {
    Engine engine(fixture_options());
    done.emplace(engine.submit(greedy("done", {1, 2}, 2)));
    while (done->next()) {
    }
    stream.emplace(engine.submit(greedy("long", {1, 2, 3}, 200)));
    const std::optional<TokenEvent> first = stream->next();
    ASSERT_TRUE(first && !first->finished);
  }
  std::optional<TokenEvent> last;
  while (auto e = stream->next()) last = e;
  ASSERT_TRUE(last && last->finished);
  EXPECT_FALSE(last->error.empty());
  stream.reset();
  done.reset();
}

// HiveConfig::dequantize reaches the model: a quantized GGUF loaded with
// dequantize gives the logits of the offline engine on the bf16 copies, not
// those of the file's blocks (which differ: 8-bit activations).
TEST(Engine, LoadsAGgufDequantizedWhenAsked) {
  HiveConfig options = fixture_options();
  options.model = std::string(HIVE_TEST_DATA) + "/gguf/models/qwen3_moe-q8_0.gguf";
  options.device = DeviceChoice::cpu;
  Request request = greedy("q", {5, 9, 13, 2}, 3);
  request.return_logits = true;
  const auto offline_logits = [&](const LoadOptions& load) {
    CpuBackend cpu;
    Model model(options.model, cpu, load);
    LLMEngine engine(model, options.engine);
    return engine.generate({request}).at(0).samples.at(0).logits;
  };
  const auto engine_logits = [&](const HiveConfig& o) {
    Engine engine(o);
    std::vector<std::vector<float>> logits;
    for (const TokenEvent& event : engine.submit(request))
      if (event.finished) logits = event.logits;
    return logits;
  };
  const std::vector<std::vector<float>> dequantized = offline_logits({.dequantize = true});
  const std::vector<std::vector<float>> quantized = offline_logits({});
  ASSERT_EQ(dequantized.size(), 3u);
  ASSERT_NE(dequantized, quantized);
  options.dequantize = true;
  EXPECT_EQ(engine_logits(options), dequantized);
  options.dequantize = false;
  EXPECT_EQ(engine_logits(options), quantized);
}

}  // namespace
}  // namespace hive
