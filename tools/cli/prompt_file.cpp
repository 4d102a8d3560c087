// The JSON-lines prompts file of hive run and hive agree (prompt_file.hpp).
#include "tools/cli/prompt_file.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/json_reader.hpp"
#include "base/json_writer.hpp"

namespace hive::cli {

const PromptKeys kRunPromptKeys = {
    "hive run",
    {"id", "prompt", "prompt_ids", "chat", "max_tokens", "temperature", "top_k", "top_p", "min_p",
     "presence_penalty", "frequency_penalty", "repetition_penalty", "logprobs", "seed",
     "ignore_eos", "stop_token_ids", "stop", "priority"}};

namespace {

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

// One prompt line's fields, type- and range-checked; errors name the line.
class PromptLine {
 public:
  PromptLine(const nlohmann::json& j, std::string where, const PromptKeys& keys)
      : j_(j), where_(std::move(where)) {
    check(j.is_object(), where_, ": expected a JSON object (got ", json_text(j), ")");
    for (const auto& [key, value] : j.items()) {
      if (std::find(keys.names.begin(), keys.names.end(), key) != keys.names.end()) continue;
      const bool known = std::find(kRunPromptKeys.names.begin(), kRunPromptKeys.names.end(), key) !=
                         kRunPromptKeys.names.end();
      fail(where_, known ? ": \"" : ": unknown key \"", key,
           known ? str_cat("\" does not apply to ", keys.command) : std::string("\""),
           " (expected ", join(keys.names), ")");
    }
  }
  bool has(const char* key) const { return j_.contains(key); }
  int64_t integer(const char* key, int64_t fallback, int64_t min, int64_t max) const {
    if (!has(key)) return fallback;
    const nlohmann::json& v = j_.at(key);
    const bool fits = v.is_number_integer() &&
                      (!v.is_number_unsigned() || v.get<uint64_t>() <= uint64_t(INT64_MAX));
    check(fits && v.get<int64_t>() >= min && v.get<int64_t>() <= max, where_, ": \"", key,
          "\" must be an integer in [", min, ", ", max, "] (got ", json_text(v), ")");
    return v.get<int64_t>();
  }
  double number(const char* key, double fallback, double min, double max) const {
    if (!has(key)) return fallback;
    const nlohmann::json& v = j_.at(key);
    check(v.is_number() && v.get<double>() >= min && v.get<double>() <= max, where_, ": \"", key,
          "\" must be a number in [", min, ", ", max, "] (got ", json_text(v), ")");
    return v.get<double>();
  }
  bool boolean(const char* key) const {
    if (!has(key)) return false;
    check(j_.at(key).is_boolean(), where_, ": \"", key, "\" must be true or false (got ",
          json_text(j_.at(key)), ")");
    return j_.at(key).get<bool>();
  }
  std::string string(const char* key, std::string fallback) const {
    if (!has(key)) return fallback;
    check(j_.at(key).is_string(), where_, ": \"", key, "\" must be a string (got ",
          json_text(j_.at(key)), ")");
    return j_.at(key).get<std::string>();
  }
  std::vector<std::string> strings(const char* key) const {
    std::vector<std::string> out;
    if (!has(key)) return out;
    const nlohmann::json& v = j_.at(key);
    check(v.is_array(), where_, ": \"", key, "\" must be an array of strings (got ", json_text(v), ")");
    for (const nlohmann::json& s : v) {
      check(s.is_string() && !s.get<std::string>().empty(), where_, ": \"", key, "\" holds ",
            json_text(s), ", not a non-empty string");
      out.push_back(s.get<std::string>());
    }
    return out;
  }
  std::vector<int32_t> ids(const char* key) const {
    std::vector<int32_t> ids;
    if (!has(key)) return ids;
    const nlohmann::json& v = j_.at(key);
    check(v.is_array(), where_, ": \"", key, "\" must be an array of token ids (got ", json_text(v),
          ")");
    for (const nlohmann::json& id : v) {
      check(id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() <= INT32_MAX,
            where_, ": \"", key, "\" holds ", json_text(id),
            ", not a token id (a non-negative integer)");
      ids.push_back(id.get<int32_t>());
    }
    return ids;
  }

 private:
  const nlohmann::json& j_;
  std::string where_;
};

}  // namespace

std::vector<PromptInput> read_prompt_file(const std::string& path, const PromptKeys& keys) {
  std::ifstream in(path);
  check(in.good(), "--prompts: cannot open ", path);
  return parse_prompt_lines(in, path, keys);
}

std::vector<PromptInput> parse_prompt_lines(std::istream& in, const std::string& path,
                                            const PromptKeys& keys) {
  std::vector<PromptInput> prompts;
  std::map<std::string, int> id_lines;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = str_cat(path, ":", number);
    const nlohmann::json j = parse_json(line, where);
    const PromptLine p(j, where, keys);
    RequestInput r;
    r.id = p.string("id", "prompt-" + std::to_string(number));
    check(!r.id.empty(), where, ": \"id\" must not be empty");
    const auto [seen, fresh] = id_lines.emplace(r.id, number);
    check(fresh, where, ": id '", r.id, "' is already used on line ", seen->second);
    check(p.has("prompt") != p.has("prompt_ids"), where,
          ": give \"prompt\" (text) or \"prompt_ids\", not both or neither");
    check(p.has("prompt") || !p.has("chat"), where, ": \"chat\" applies to a text \"prompt\"");
    check(p.has("prompt") || !p.has("stop"), where,
          ": \"stop\" applies to a text \"prompt\" (stop strings are matched on the text)");
    if (!p.has("prompt"))
      r.prompt = p.ids("prompt_ids");
    else if (p.boolean("chat"))
      r.prompt = std::vector<ChatMessage>{{"user", p.string("prompt", "")}};
    else
      r.prompt = p.string("prompt", "");
    if (p.has("max_tokens")) r.max_tokens = p.integer("max_tokens", 0, 1, INT32_MAX);
    if (p.has("temperature")) r.temperature = p.number("temperature", 0, 0.0, 1e6);
    if (p.has("top_k")) r.top_k = p.integer("top_k", 0, 0, INT32_MAX);
    if (p.has("top_p")) r.top_p = p.number("top_p", 1, 0.0, 1.0);
    if (p.has("min_p")) r.min_p = p.number("min_p", 0, 0.0, 1.0);
    if (p.has("presence_penalty")) r.presence_penalty = p.number("presence_penalty", 0, -2.0, 2.0);
    if (p.has("frequency_penalty"))
      r.frequency_penalty = p.number("frequency_penalty", 0, -2.0, 2.0);
    // Its lower bound is open: the input processor says "> 0".
    if (p.has("repetition_penalty"))
      r.repetition_penalty = p.number("repetition_penalty", 1, 0.0, 1e6);
    if (p.has("logprobs")) r.logprobs = p.integer("logprobs", 0, 0, kMaxLogprobs);
    if (p.has("seed")) r.seed = static_cast<uint64_t>(p.integer("seed", 0, 0, INT64_MAX));
    r.ignore_eos = p.boolean("ignore_eos");
    r.stop_token_ids = p.ids("stop_token_ids");
    r.stop = p.strings("stop");
    r.priority = static_cast<int>(p.integer("priority", 0, INT32_MIN, INT32_MAX));
    prompts.push_back({std::move(r), where});
  }
  check(!prompts.empty(), path, ": no prompts");
  return prompts;
}

}  // namespace hive::cli
