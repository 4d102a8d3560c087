// hive bench serve: a load client, like `vllm bench serve`. It sends
// --num-prompts completions of --input-len random words, asking for
// --output-len tokens each (ignore_eos), at most --max-concurrency at once,
// arriving as a Poisson process of --request-rate per second (inf: all at
// once), and prints request throughput, output tokens/s, time to first
// token, time per output token and inter-token latency (mean, median, p99).
//
//   --url URL        against a running server (streamed completions, SSE)
//   --compare        starts the engine here, serves it on a free port, and
//                    runs the same load over HTTP and through the embedded
//                    hive::Engine, one after the other, with their ratio
//                    (prefix caching off: both runs compute every prompt)
//   --rounds R       with --compare: R alternating rounds of each, the
//                    median round reported
//
// Connections are kept alive and reused between requests, as the pools of
// HTTP client libraries (the openai client's httpx, aiohttp) reuse them.
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "actors/engine.hpp"
#include "actors/gateway/server.hpp"
#include "base/error.hpp"
#include "base/json_reader.hpp"
#include "runtime/engine/input_processor.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/progress.hpp"
#include "tools/cli/text_prompt.hpp"
#include "base/json_writer.hpp"

namespace hive::cli {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Clock = std::chrono::steady_clock;

struct Load {
  int num_prompts = 64;
  int max_concurrency = 16;
  double request_rate = 0;  // per second; 0: all at once
  int input_len = 64;
  int output_len = 64;
  uint64_t seed = 0;
};

// One request's timeline, in seconds from its start.
struct Trace {
  double ttft = 0;
  double e2e = 0;
  std::vector<double> token_times;  // when each piece of output arrived
  int64_t output_tokens = 0;
  bool ok = false;
};

struct Summary {
  double seconds = 0;
  int completed = 0;
  int64_t output_tokens = 0;
  std::vector<double> ttft, tpot, itl;
};

double mean(const std::vector<double>& v) {
  double sum = 0;
  for (const double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto at = static_cast<size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(at, v.size() - 1)];
}

// Runs `send(i)` for every prompt, at most max_concurrency at once, started
// at Poisson arrival times.
Summary run_load(const Load& load, const std::function<Trace(int)>& send) {
  std::vector<Trace> traces(static_cast<size_t>(load.num_prompts));
  std::mutex mutex;
  std::condition_variable slot_free;
  int running = 0, finished = 0;
  Progress progress = Progress::on_stderr("bench serve", load.num_prompts, "requests");
  std::mt19937_64 rng(load.seed);
  std::exponential_distribution<double> gap(load.request_rate > 0 ? load.request_rate : 1.0);
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  auto next_arrival = start;
  for (int i = 0; i < load.num_prompts; ++i) {
    if (load.request_rate > 0) {
      std::this_thread::sleep_until(next_arrival);
      next_arrival += std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(gap(rng)));
    }
    {
      std::unique_lock lock(mutex);
      slot_free.wait(lock, [&] { return running < load.max_concurrency; });
      ++running;
    }
    threads.emplace_back([&, i] {
      traces[static_cast<size_t>(i)] = send(i);
      std::lock_guard lock(mutex);
      --running;
      progress.update(++finished);  // under the lock: one writer at a time
      slot_free.notify_one();
    });
  }
  for (std::thread& t : threads) t.join();
  progress.done();
  Summary s;
  s.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (const Trace& t : traces) {
    if (!t.ok) continue;
    ++s.completed;
    s.output_tokens += t.output_tokens;
    s.ttft.push_back(t.ttft);
    if (t.output_tokens > 1)
      s.tpot.push_back((t.e2e - t.ttft) / static_cast<double>(t.output_tokens - 1));
    for (size_t k = 1; k < t.token_times.size(); ++k)
      s.itl.push_back(t.token_times[k] - t.token_times[k - 1]);
  }
  return s;
}

// Random English words, one per --input-len: random token ids would make
// the output text start with broken characters, held back from the stream,
// and the time to the first text would no longer be the first token's.
std::vector<std::string> random_prompts(const Load& load) {
  static const char* const kWords[] = {
      "the", "king", "said", "unto", "them", "and", "a", "man", "of", "wisdom", "shall",
      "find", "good", "fortune", "in", "his", "house", "when", "day", "comes", "light",
      "over", "water", "people", "land", "heart", "word", "time", "old", "new", "long"};
  std::mt19937_64 rng(load.seed);
  std::uniform_int_distribution<size_t> word(0, std::size(kWords) - 1);
  std::vector<std::string> prompts(static_cast<size_t>(load.num_prompts));
  for (std::string& p : prompts)
    for (int k = 0; k < load.input_len; ++k) p += (k ? " " : "") + std::string(kWords[word(rng)]);
  return prompts;
}

// The server's address, resolved once (a lookup per request would cost
// milliseconds of its own).
asio::ip::tcp::endpoint resolve(const std::string& host, const std::string& port) {
  asio::io_context io;
  return *asio::ip::tcp::resolver(io).resolve(host, port).begin();
}

// One kept-alive connection to the server, with its own I/O context (the
// requests are synchronous, one thread each).
struct Connection {
  asio::io_context io;
  beast::tcp_stream stream{io};
  beast::flat_buffer buffer;
};

// Connections kept alive between requests, as an HTTP client library's
// pool keeps them: a request does not pay for a TCP handshake and a new
// server session, which a real client does not pay per request either.
class ConnectionPool {
 public:
  ConnectionPool(asio::ip::tcp::endpoint server, std::string host)
      : server_(std::move(server)), host_(std::move(host)) {}

  const std::string& host() const { return host_; }

  // An idle connection, or a new one; `reused` says which.
  std::unique_ptr<Connection> take(bool& reused) {
    {
      std::lock_guard lock(mutex_);
      reused = !idle_.empty();
      if (reused) {
        std::unique_ptr<Connection> connection = std::move(idle_.back());
        idle_.pop_back();
        return connection;
      }
    }
    auto connection = std::make_unique<Connection>();
    connection->stream.connect(server_);
    connection->stream.socket().set_option(asio::ip::tcp::no_delay(true));
    return connection;
  }

  void give_back(std::unique_ptr<Connection> connection) {
    std::lock_guard lock(mutex_);
    idle_.push_back(std::move(connection));
  }

 private:
  asio::ip::tcp::endpoint server_;
  std::string host_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Connection>> idle_;
};

// One streamed completion over HTTP; each SSE event is one HTTP chunk.
Trace send_http(ConnectionPool& pool, const nlohmann::json& body) {
  Trace trace;
  http::request<http::string_body> request{http::verb::post, "/v1/completions", 11};
  request.set(http::field::host, pool.host());
  request.set(http::field::content_type, "application/json");
  request.body() = json_text(body);
  request.prepare_payload();
  const auto start = Clock::now();
  std::string events;
  auto on_chunk = [&](std::uint64_t, std::string_view data, beast::error_code&) -> std::size_t {
    const double now = std::chrono::duration<double>(Clock::now() - start).count();
    events.append(data);
    if (data.find("\"text\":\"") != std::string_view::npos &&
        data.find("\"text\":\"\"") == std::string_view::npos) {
      if (trace.token_times.empty()) trace.ttft = now;
      trace.token_times.push_back(now);
    }
    return data.size();
  };
  // A kept-alive connection the server has closed meanwhile (its idle
  // timeout) fails before any response: the request goes again on a new one.
  for (int attempt = 0; attempt < 2; ++attempt) {
    bool reused = false;
    std::unique_ptr<Connection> connection = pool.take(reused);
    beast::error_code error;
    http::write(connection->stream, request, error);
    http::response_parser<http::empty_body> parser;
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    if (!error) http::read_header(connection->stream, connection->buffer, parser, error);
    if (error) {
      if (reused) continue;
      return trace;
    }
    if (parser.get().result() != http::status::ok) return trace;
    parser.on_chunk_body(on_chunk);
    while (!parser.is_done() && !error)
      http::read(connection->stream, connection->buffer, parser, error);
    trace.e2e = std::chrono::duration<double>(Clock::now() - start).count();
    if (error) return trace;
    if (parser.keep_alive()) pool.give_back(std::move(connection));
    break;
  }
  const size_t usage = events.rfind("\"usage\":");
  if (usage == std::string::npos) return trace;
  const size_t line_start = events.rfind("data: ", usage) + 6;
  const auto chunk = parse_json(events.substr(line_start, events.find('\n', usage) - line_start),
                                "the server's usage event");
  trace.output_tokens = chunk["usage"]["completion_tokens"].get<int64_t>();
  trace.ok = true;
  return trace;
}

// The same request through the embedded engine.
Trace send_embedded(Engine& engine, InputProcessor& inputs, std::mutex& inputs_mutex,
                    const RequestInput& input) {
  // The clock starts before the prompt is tokenized, as the HTTP request's
  // starts before the server tokenizes it.
  const auto start = Clock::now();
  Request request;
  {
    std::lock_guard lock(inputs_mutex);  // the processor is not for threads
    request = inputs.process(input).request;
  }
  Trace trace;
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  engine.submit(request, [&](const TokenEvent& event) {
    const double now = std::chrono::duration<double>(Clock::now() - start).count();
    std::lock_guard lock(mutex);
    if (!event.finished) {
      if (trace.token_times.empty()) trace.ttft = now;
      trace.token_times.push_back(now);
      return;
    }
    trace.e2e = now;
    trace.output_tokens = static_cast<int64_t>(event.token_ids.size());
    trace.ok = event.error.empty();
    done = true;
    finished.notify_one();
  });
  std::unique_lock lock(mutex);
  finished.wait(lock, [&] { return done; });
  return trace;
}

nlohmann::json report(const char* name, const Summary& s) {
  return {{"name", name},
          {"completed", s.completed},
          {"duration_s", s.seconds},
          {"request_throughput", s.completed / s.seconds},
          {"output_tokens_per_s", static_cast<double>(s.output_tokens) / s.seconds},
          {"ttft_ms", {{"mean", 1e3 * mean(s.ttft)}, {"median", 1e3 * percentile(s.ttft, 50)},
                       {"p99", 1e3 * percentile(s.ttft, 99)}}},
          {"tpot_ms", {{"mean", 1e3 * mean(s.tpot)}, {"median", 1e3 * percentile(s.tpot, 50)},
                       {"p99", 1e3 * percentile(s.tpot, 99)}}},
          {"itl_ms", {{"mean", 1e3 * mean(s.itl)}, {"median", 1e3 * percentile(s.itl, 50)},
                      {"p99", 1e3 * percentile(s.itl, 99)}}}};
}

// The round with the median output tokens/s, with every round's figure.
nlohmann::json median_round(std::vector<nlohmann::json> rounds) {
  std::vector<double> rates;
  for (const nlohmann::json& r : rounds) rates.push_back(r["output_tokens_per_s"].get<double>());
  std::sort(rounds.begin(), rounds.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a["output_tokens_per_s"].get<double>() < b["output_tokens_per_s"].get<double>();
  });
  nlohmann::json median = rounds[rounds.size() / 2];
  median["rounds_output_tokens_per_s"] = rates;
  return median;
}

void print_row(const nlohmann::json& r) {
  std::printf("%-9s %5d %8.2f %9.1f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f\n",
              r["name"].get<std::string>().c_str(), r["completed"].get<int>(),
              r["request_throughput"].get<double>(), r["output_tokens_per_s"].get<double>(),
              r["ttft_ms"]["mean"].get<double>(), r["ttft_ms"]["median"].get<double>(),
              r["ttft_ms"]["p99"].get<double>(), r["tpot_ms"]["median"].get<double>(),
              r["itl_ms"]["median"].get<double>(), r["itl_ms"]["p99"].get<double>());
}

}  // namespace

int run_bench_serve(const std::vector<std::string>& argv) {
  const Args args(argv,
                  {"--url", "--model", "--num-prompts", "--max-concurrency", "--request-rate",
                   "--input-len", "--output-len", "--seed", "--rounds", "--json"},
                  {"--compare"});
  check(args.has("--url") != args.has("--compare"),
        "give --url URL (a running server) or --compare (serve here, and compare with the "
        "embedded engine)");
  Load load;
  load.num_prompts = static_cast<int>(args.get_int("--num-prompts", 64, 1, 1 << 20));
  load.max_concurrency = static_cast<int>(args.get_int("--max-concurrency", 16, 1, 4096));
  const std::string rate = args.get("--request-rate", "inf");
  load.request_rate = rate == "inf" ? 0.0 : args.get_double("--request-rate", 0);
  check(rate == "inf" || load.request_rate > 0, "--request-rate must be > 0 or inf");
  load.input_len = static_cast<int>(args.get_int("--input-len", 64, 1, 1 << 20));
  load.output_len = static_cast<int>(args.get_int("--output-len", 64, 1, 1 << 20));
  load.seed = static_cast<uint64_t>(args.get_int("--seed", 0, 0));
  const auto rounds = static_cast<int>(args.get_int("--rounds", 1, 1, 100));
  check(rounds == 1 || args.has("--compare"), "--rounds is for --compare");

  const auto body = [&](const std::string& prompt) {
    return nlohmann::json{{"prompt", prompt}, {"max_tokens", load.output_len},
                          {"ignore_eos", true}, {"stream", true},
                          {"stream_options", {{"include_usage", true}}}};
  };
  std::vector<nlohmann::json> rows;
  nlohmann::json paired;  // --compare: round against round
  if (args.has("--url")) {
    const std::string url = args.get("--url", "");
    const std::string rest = url.rfind("http://", 0) == 0 ? url.substr(7) : url;
    const size_t colon = rest.find(':');
    const std::string host = rest.substr(0, colon);
    const std::string port = colon == std::string::npos ? "80" : rest.substr(colon + 1, rest.find('/', colon) - colon - 1);
    const auto prompts = random_prompts(load);
    ConnectionPool pool(resolve(host, port), host);
    rows.push_back(report("http", run_load(load, [&](int i) {
      return send_http(pool, body(prompts[static_cast<size_t>(i)]));
    })));
  } else {
    HiveConfig config;
    config.model = model_dir_or_default(args);
    config.device = DeviceChoice::cpu;
    config.engine.kv_budget.bytes = int64_t{256} << 20;
    config.engine.scheduler.max_num_seqs = std::max(load.max_concurrency, 1);
    // Both runs send the same prompts, one after the other: with the prefix
    // cache on, the second would find every prompt cached and skip its
    // prefill (a 64-token prompt's time to first token: 2 ms against 18).
    config.engine.enable_prefix_caching = false;
    Engine engine(config);
    InputLimits limits;
    limits.max_sequence_tokens = engine.max_sequence_tokens();
    limits.max_n = config.engine.scheduler.max_num_seqs;
    InputProcessor inputs(config.model, engine.model_config(), limits);
    gateway::ServerOptions options;
    options.port = 0;
    options.model_name = "bench";
    gateway::Server server(engine, inputs, options);
    server.listen();
    std::thread serving([&] { server.run(); });
    const auto prompts = random_prompts(load);
    ConnectionPool pool(resolve("127.0.0.1", std::to_string(server.port())), "127.0.0.1");
    std::mutex inputs_mutex;
    const auto http_run = [&](const Load& l) {
      return run_load(l, [&](int i) {
        return send_http(pool, body(prompts[static_cast<size_t>(i)]));
      });
    };
    const auto embedded_run = [&](const Load& l) {
      return run_load(l, [&](int i) {
        RequestInput input;
        input.id = str_cat("bench-", i);
        input.prompt = prompts[static_cast<size_t>(i)];
        input.max_tokens = load.output_len;
        input.ignore_eos = true;
        return send_embedded(engine, inputs, inputs_mutex, input);
      });
    };
    // A short round of each first: the first steps allocate and fault pages in.
    Load warmup = load;
    warmup.num_prompts = std::min(load.num_prompts, load.max_concurrency);
    warmup.request_rate = 0;
    http_run(warmup);
    embedded_run(warmup);
    // Alternating rounds; each side's row is its median round by output
    // tokens/s (one run of each moved by up to 15 % between runs here).
    std::vector<nlohmann::json> http_rounds, embedded_rounds;
    for (int round = 0; round < rounds; ++round) {
      http_rounds.push_back(report("http", http_run(load)));
      embedded_rounds.push_back(report("embedded", embedded_run(load)));
    }
    rows.push_back(median_round(http_rounds));
    rows.push_back(median_round(embedded_rounds));
    // Each HTTP round against the embedded round right after it: the pair
    // shares the machine's state of the moment, which moves between rounds
    // by more than the difference measured.
    std::vector<double> ratios, ttft_differences;
    for (size_t r = 0; r < http_rounds.size(); ++r) {
      ratios.push_back(http_rounds[r]["output_tokens_per_s"].get<double>() /
                       embedded_rounds[r]["output_tokens_per_s"].get<double>());
      ttft_differences.push_back(http_rounds[r]["ttft_ms"]["median"].get<double>() -
                                 embedded_rounds[r]["ttft_ms"]["median"].get<double>());
    }
    paired = {{"output_tokens_per_s_ratios", ratios},
              {"median_output_tokens_per_s_ratio", percentile(ratios, 50)},
              {"median_ttft_differences_ms", ttft_differences},
              {"median_median_ttft_difference_ms", percentile(ttft_differences, 50)}};
    server.stop();
    serving.join();
    engine.shutdown();
  }
  std::printf("%d prompts of %d tokens, %d out each, concurrency %d, rate %s\n", load.num_prompts,
              load.input_len, load.output_len, load.max_concurrency, rate.c_str());
  std::printf("%-9s %5s %8s %9s %8s %8s %8s %8s %8s %8s\n", "", "done", "req/s", "out tok/s",
              "TTFT ms", "TTFT med", "TTFT p99", "TPOT med", "ITL med", "ITL p99");
  for (const nlohmann::json& r : rows) print_row(r);
  nlohmann::json out = {{"num_prompts", load.num_prompts}, {"input_len", load.input_len},
                        {"output_len", load.output_len}, {"max_concurrency", load.max_concurrency},
                        {"request_rate", rate}, {"runs", rows}};
  if (rows.size() == 2) {
    out["http_over_embedded_output_tokens_per_s"] =
        rows[0]["output_tokens_per_s"].get<double>() / rows[1]["output_tokens_per_s"].get<double>();
    out["http_minus_embedded_median_ttft_ms"] =
        rows[0]["ttft_ms"]["median"].get<double>() - rows[1]["ttft_ms"]["median"].get<double>();
    std::printf("HTTP / embedded output tok/s: %.3f; median TTFT difference: %+.2f ms\n",
                out["http_over_embedded_output_tokens_per_s"].get<double>(),
                out["http_minus_embedded_median_ttft_ms"].get<double>());
    out["paired_rounds"] = paired;
    std::printf("paired rounds (median of %zu): HTTP / embedded %.3f; TTFT difference %+.2f ms\n",
                paired["output_tokens_per_s_ratios"].size(),
                paired["median_output_tokens_per_s_ratio"].get<double>(),
                paired["median_median_ttft_difference_ms"].get<double>());
  }
  if (args.has("--json")) {
    std::ofstream file(args.get("--json", ""));
    check(file.good(), "--json: cannot write ", args.get("--json", ""));
    file << json_text(out, 2) << "\n";
    check(file.good(), "--json: writing ", args.get("--json", ""), " failed");
  }
  return 0;
}

}  // namespace hive::cli
