#pragma once
// The one JSON reader of every file and message Hive reads: config.json,
// generation_config.json, tokenizer files, safetensors headers and indexes,
// request bodies, prompt lines. It is nlohmann's parser and one rule more:
// an object that gives a key twice is an error, naming the key and the
// object (RFC 8259 leaves it open; nlohmann keeps the last, Python's json
// the last, Rust's serde the first, so one file would mean different things
// to different tools). Shared by every room, like error.hpp.
//
// Nesting is limited (kMaxJsonDepth) and checked on the bytes before the
// parse: nlohmann's dump() and every walk over a value recurse, so a client's
// 200,000 nested arrays would end the process in whatever touched them next.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.hpp"

namespace hive {

// what() is the detail alone: "not valid JSON: ..." or "key \"a\" given
// twice in the object at /b".
class JsonError : public Error {
 public:
  using Error::Error;
};

// Objects and arrays nested deeper than this are refused (serde_json's
// limit: far beyond any config, tokenizer or request, far below the stack).
inline constexpr int kMaxJsonDepth = 128;

namespace json_detail {

// Throws JsonError when `text` opens more than kMaxJsonDepth objects or
// arrays at once (brackets inside strings do not count).
inline void check_depth(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        throw JsonError(str_cat("nesting deeper than ", kMaxJsonDepth, " levels at byte ", i));
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

// A JSON pointer segment (RFC 6901: '~' as "~0", '/' as "~1").
inline std::string pointer_segment(std::string_view name) {
  std::string out;
  for (const char c : name) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

// The parser's callback: one frame per open object or array, each object's
// keys so far, and the name of each frame for the error's pointer.
template <class Json>
class DuplicateKeys {
 public:
  bool operator()(int /*depth*/, nlohmann::json::parse_event_t event, Json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    switch (event) {
      case Event::object_start:
      case Event::array_start:
        open_.push_back({event == Event::object_start, name_of_next(), {}, {}, 0});
        break;
      case Event::key: {
        Frame& object = open_.back();
        std::string key = parsed.template get<std::string>();
        if (!object.keys.insert(key).second)
          throw JsonError(str_cat("key \"", key, "\" given twice in the object at ", pointer()));
        object.last_key = std::move(key);
        break;
      }
      case Event::object_end:
      case Event::array_end:
        open_.pop_back();
        value_done();
        break;
      case Event::value:
        value_done();
        break;
    }
    return true;
  }

 private:
  struct Frame {
    bool object;
    std::string name;
    std::unordered_set<std::string> keys;
    std::string last_key;
    size_t next_index;
  };

  std::string name_of_next() const {
    if (open_.empty()) return {};
    const Frame& parent = open_.back();
    return parent.object ? parent.last_key : std::to_string(parent.next_index);
  }
  void value_done() {
    if (!open_.empty() && !open_.back().object) ++open_.back().next_index;
  }
  std::string pointer() const {
    if (open_.size() <= 1) return "the top level";
    std::string out;
    for (size_t i = 1; i < open_.size(); ++i) out += "/" + pointer_segment(open_[i].name);
    return out;
  }

  std::vector<Frame> open_;
};

}  // namespace json_detail

// Parses `text`; throws JsonError with the detail alone.
template <class Json = nlohmann::json>
Json parse_json(std::string_view text) {
  json_detail::check_depth(text);
  json_detail::DuplicateKeys<Json> keys;
  try {
    return Json::parse(
        text.begin(), text.end(),
        [&keys](int depth, nlohmann::json::parse_event_t event, Json& parsed) {
          return keys(depth, event, parsed);
        });
  } catch (const nlohmann::json::exception& e) {
    throw JsonError(str_cat("not valid JSON: ", e.what()));
  }
}

// Parses `text`; throws Error "<what>: <detail>".
template <class Json = nlohmann::json>
Json parse_json(std::string_view text, std::string_view what) {
  try {
    return parse_json<Json>(text);
  } catch (const JsonError& e) {
    fail(what, ": ", e.what());
  }
}

// Reads and parses the file at `path`; errors name the path.
template <class Json = nlohmann::json>
Json read_json_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  check(in.good(), path.string(), ": cannot open");
  std::ostringstream content;
  content << in.rdbuf();
  check(!in.bad(), path.string(), ": cannot read");
  return parse_json<Json>(content.str(), path.string());
}

}  // namespace hive
