// Structured output's costs: compiling a constraint (cold, then from the
// cache) and filling the next-token mask, per token over whole random
// generations (each step draws a token the mask allows; stop tokens as soon
// as allowed, closing characters more often, so walks end), for a flat
// schema, a deeply nested schema and any JSON object, on one or more
// tokenizers. One thread.
//
//   bench_grammar_mask --tokenizer DIR [--tokenizer DIR ...] [--walks N]
//                      [--max-tokens N] [--seed N] [--json FILE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "runtime/text/grammar/grammar_compiler.hpp"
#include "runtime/text/grammar/grammar_matcher.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using hive::Constraint;
using hive::ConstraintKind;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

const char* const kFlat = R"({"type": "object", "properties": {
  "id": {"type": "integer", "minimum": 0}, "name": {"type": "string", "maxLength": 24},
  "email": {"type": "string", "format": "email"}, "score": {"type": "number"},
  "active": {"type": "boolean"}, "role": {"enum": ["admin", "user", "guest"]},
  "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 4},
  "note": {"anyOf": [{"type": "string", "maxLength": 32}, {"type": "null"}]}},
  "required": ["id", "name", "email", "active", "role"], "additionalProperties": false})";

// Six levels of objects, each with a scalar, an array of the next level and
// the next level itself, through $defs and $ref.
std::string nested_schema(int depth) {
  std::string defs;
  for (int level = 0; level < depth; ++level) {
    const std::string next = level + 1 < depth ? "L" + std::to_string(level + 1) : "";
    std::string properties = R"("n": {"type": "integer", "minimum": -100, "maximum": 100},
      "s": {"type": "string", "maxLength": 8})";
    std::string required = R"("n")";
    if (!next.empty()) {
      properties += R"(, "child": {"$ref": "#/$defs/)" + next + R"("}, "list": {"type": "array",
        "items": {"$ref": "#/$defs/)" +
                    next + R"("}, "maxItems": 2})";
      required += R"(, "child")";
    }
    defs += (level ? ", " : "") + std::string("\"L") + std::to_string(level) +
            R"(": {"type": "object", "properties": {)" + properties + R"(}, "required": [)" +
            required + R"(], "additionalProperties": false})";
  }
  return R"({"$defs": {)" + defs + R"(}, "$ref": "#/$defs/L0"})";
}

double percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1,
                         static_cast<std::size_t>(q * (values.size() - 1) + 0.5))];
}

struct Row {
  std::string tokenizer, constraint;
  int vocab_size;
  double setup_ms, compile_ms, cached_ms, median_us, p99_us, max_us;
  std::size_t masks, tokens_per_walk, ended;
};

Row measure(const std::string& dir, const hive::Tokenizer& tokenizer,
            const std::vector<std::string>& token_bytes, const std::string& name,
            const Constraint& constraint, int walks, int max_tokens, std::mt19937_64& rng) {
  Row row{dir, name, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  auto start = Clock::now();
  hive::GrammarCompiler compiler(tokenizer);
  row.setup_ms = ms_since(start);
  start = Clock::now();
  const hive::CompiledGrammar grammar = compiler.compile(constraint);
  row.compile_ms = ms_since(start);
  start = Clock::now();
  compiler.compile(constraint);
  row.cached_ms = ms_since(start);
  row.vocab_size = grammar.vocab_size();
  const auto& stops = compiler.stop_token_ids();
  std::vector<int32_t> mask(hive::GrammarMatcher::bitmask_words(grammar.vocab_size()));
  std::vector<double> times_us;
  std::size_t tokens = 0;
  for (int walk = 0; walk < walks; ++walk) {
    hive::GrammarMatcher matcher(grammar);
    for (int step = 0; step < max_tokens; ++step) {
      start = Clock::now();
      matcher.fill_next_token_bitmask(mask);
      times_us.push_back(ms_since(start) * 1000.0);
      std::vector<int32_t> candidates, closing;
      bool stopped = false;
      for (int32_t t = 0; t < grammar.vocab_size() && !stopped; ++t) {
        if (!((static_cast<uint32_t>(mask[t / 32]) >> (t % 32)) & 1u)) continue;
        if (std::find(stops.begin(), stops.end(), t) != stops.end()) {
          stopped = matcher.accept_token(t);
          continue;
        }
        candidates.push_back(t);
        if (token_bytes[t].find_first_of("\"}],") != std::string::npos) closing.push_back(t);
      }
      if (stopped) {
        ++row.ended;
        break;
      }
      hive::check(!candidates.empty(), name, ": no token allowed");
      const auto& pool = !closing.empty() && rng() % 3 == 0 ? closing : candidates;
      hive::check(matcher.accept_token(pool[rng() % pool.size()]), name, ": token refused");
      ++tokens;
    }
  }
  row.masks = times_us.size();
  row.tokens_per_walk = tokens / std::max(1, walks);
  row.median_us = percentile(times_us, 0.5);
  row.p99_us = percentile(times_us, 0.99);
  row.max_us = percentile(times_us, 1.0);
  return row;
}

int run(int argc, char** argv) {
  std::vector<std::string> dirs;
  int walks = 20, max_tokens = 256;
  uint64_t seed = 1;
  std::string json_path;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--tokenizer")
      dirs.push_back(value);
    else if (flag == "--walks")
      walks = std::stoi(value);
    else if (flag == "--max-tokens")
      max_tokens = std::stoi(value);
    else if (flag == "--seed")
      seed = std::stoull(value);
    else if (flag == "--json")
      json_path = value;
    else
      hive::fail("unknown flag ", flag);
  }
  hive::check(!dirs.empty(),
              "usage: bench_grammar_mask --tokenizer DIR [--tokenizer DIR ...] [--walks N] "
              "[--max-tokens N] [--seed N] [--json FILE]");
  const std::vector<std::pair<std::string, Constraint>> constraints = {
      {"flat schema", {ConstraintKind::json_schema, kFlat, {}}},
      {"nested schema (6)", {ConstraintKind::json_schema, nested_schema(6), {}}},
      {"json_object", {ConstraintKind::json_object, "", {}}}};
  std::mt19937_64 rng(seed);
  std::vector<Row> rows;
  for (const std::string& dir : dirs) {
    const hive::Tokenizer tokenizer = hive::Tokenizer::from_directory(dir);
    std::vector<std::string> token_bytes(tokenizer.vocab_size());
    for (int32_t t = 0; t < static_cast<int32_t>(token_bytes.size()); ++t)
      token_bytes[t] = tokenizer.token_bytes(t);
    for (const auto& [name, constraint] : constraints)
      rows.push_back(
          measure(dir, tokenizer, token_bytes, name, constraint, walks, max_tokens, rng));
  }
  std::printf("%-8s %-18s %9s %10s %11s %10s %7s %9s %9s %9s %7s\n", "vocab", "constraint",
              "setup ms", "compile ms", "cached ms", "masks", "tok/gen", "median us", "p99 us",
              "max us", "p99/med");
  nlohmann::json results = nlohmann::json::array();
  for (const Row& r : rows) {
    std::printf("%-8d %-18s %9.1f %10.1f %11.4f %10zu %7zu %9.1f %9.1f %9.1f %7.2f\n", r.vocab_size,
                r.constraint.c_str(), r.setup_ms, r.compile_ms, r.cached_ms, r.masks,
                r.tokens_per_walk, r.median_us, r.p99_us, r.max_us,
                r.p99_us / std::max(r.median_us, 1e-9));
    results.push_back({{"tokenizer", r.tokenizer},
                       {"vocab_size", r.vocab_size},
                       {"constraint", r.constraint},
                       {"setup_ms", r.setup_ms},
                       {"compile_ms", r.compile_ms},
                       {"cached_compile_ms", r.cached_ms},
                       {"masks", r.masks},
                       {"tokens_per_generation", r.tokens_per_walk},
                       {"generations_ended", r.ended},
                       {"mask_median_us", r.median_us},
                       {"mask_p99_us", r.p99_us},
                       {"mask_max_us", r.max_us}});
  }
  if (!json_path.empty())
    std::ofstream(json_path) << nlohmann::json{{"walks", walks},
                                               {"max_tokens", max_tokens},
                                               {"seed", seed},
                                               {"results", results}}
                                    .dump(2)
                             << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_grammar_mask: error: %s\n", e.what());
    return 1;
  }
}
