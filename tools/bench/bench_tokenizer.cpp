// Encode throughput of one tokenizer on one text, single thread.
//
//   bench_tokenizer --tokenizer DIR --text FILE [--mode document|lines] [--runs N]
//                   [--json FILE] [--ids FILE]
//
// document: the whole text is one string (Hugging Face's Tokenizer.encode(text));
// lines: each line is encoded on its own, as requests are (encode_batch(lines)).
// No special tokens. The first run fills the per-word BPE cache, later runs
// are timed and the median is reported. tools/bench_tokenizer.py runs this
// next to Hugging Face `tokenizers` on the same text.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

namespace {

using Clock = std::chrono::steady_clock;

std::string flag(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == name) return argv[i + 1];
  return fallback;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  hive::check(in.good(), path, ": cannot open");
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Seconds per run; `ids` gets the last run's ids (lines: concatenated).
std::vector<double> time_runs(const hive::Tokenizer& tokenizer, const std::string& text,
                              const std::vector<std::string>& lines, int runs,
                              std::vector<int32_t>& ids) {
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    const auto start = Clock::now();
    if (lines.empty()) {
      ids = tokenizer.encode(text, false);
    } else {
      ids.clear();
      for (const std::string& line : lines) {
        const std::vector<int32_t> line_ids = tokenizer.encode(line, false);
        ids.insert(ids.end(), line_ids.begin(), line_ids.end());
      }
    }
    times.push_back(seconds_since(start));
  }
  return times;
}

int run(int argc, char** argv) {
  const std::string dir = flag(argc, argv, "--tokenizer", "");
  const std::string text_path = flag(argc, argv, "--text", "");
  hive::check(!dir.empty() && !text_path.empty(),
              "usage: bench_tokenizer --tokenizer DIR --text FILE [--runs N] [--json FILE] "
              "[--ids FILE]");
  const int runs = std::max(2, std::stoi(flag(argc, argv, "--runs", "5")));
  const std::string text = read_file(text_path);
  const std::string mode = flag(argc, argv, "--mode", "document");
  hive::check(mode == "document" || mode == "lines", "--mode: expected document or lines (got ",
              mode, ")");
  const std::vector<std::string> lines =
      mode == "lines" ? split_lines(text) : std::vector<std::string>{};

  const auto start = Clock::now();
  const hive::Tokenizer tokenizer = hive::Tokenizer::from_directory(dir);
  const double load_seconds = seconds_since(start);

  std::vector<int32_t> ids;
  const std::vector<double> times = time_runs(tokenizer, text, lines, runs, ids);
  const double first = times.front();
  std::vector<double> warm(times.begin() + 1, times.end());
  std::sort(warm.begin(), warm.end());
  const double median = warm[warm.size() / 2];
  const double megabytes = static_cast<double>(text.size()) / 1e6;

  std::printf("%-40s %-9s %8s %9s %11s %12s %7s\n", "tokenizer", "mode", "MB", "tokens",
              "first MB/s", "median MB/s", "load s");
  std::printf("%-40s %-9s %8.3f %9zu %11.2f %12.2f %7.3f\n", dir.c_str(), mode.c_str(), megabytes,
              ids.size(), megabytes / first, megabytes / median, load_seconds);

  const nlohmann::json result = {{"tokenizer", dir},
                                 {"text", text_path},
                                 {"mode", mode},
                                 {"bytes", text.size()},
                                 {"tokens", ids.size()},
                                 {"runs", runs},
                                 {"first_seconds", first},
                                 {"median_seconds", median},
                                 {"first_mb_per_s", megabytes / first},
                                 {"median_mb_per_s", megabytes / median},
                                 {"load_seconds", load_seconds}};
  if (const std::string json_path = flag(argc, argv, "--json", ""); !json_path.empty())
    std::ofstream(json_path) << result.dump(2) << "\n";
  if (const std::string ids_path = flag(argc, argv, "--ids", ""); !ids_path.empty())
    std::ofstream(ids_path) << nlohmann::json(ids).dump() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_tokenizer: error: %s\n", e.what());
    return 1;
  }
}
