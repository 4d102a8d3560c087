#pragma once
// Fixture access for the tokenizer tests: tests/data/tokenizers/, written by
// tools/make_tokenizer_fixtures.py from Hugging Face `tokenizers`.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/text/tokenizer/tokenizer.hpp"

namespace hive::test {

using Json = nlohmann::json;

inline const std::filesystem::path kTokenizerData =
    std::filesystem::path(HIVE_TEST_DATA) / "tokenizers";

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

inline Json read_json(const std::filesystem::path& path) {
  return Json::parse(read_text(path));
}

// Loaded once per test process: the Qwen3 tokenizer.json is 11 MB.
inline const Tokenizer& fixture_tokenizer(const std::string& name) {
  static std::map<std::string, Tokenizer> loaded;
  auto it = loaded.find(name);
  if (it == loaded.end())
    it = loaded.emplace(name, Tokenizer::from_directory((kTokenizerData / name).string())).first;
  return it->second;
}

inline const Json& corpus() {
  static const Json data = read_json(kTokenizerData / "corpus.json");
  return data;
}

inline std::vector<int32_t> ids_of(const Json& array) {
  return array.get<std::vector<int32_t>>();
}

inline std::string from_hex(const std::string& hex) {
  std::string bytes;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return bytes;
}

// Printable form of a string for failure messages.
inline std::string quoted(const std::string& text) {
  return Json(text).dump(-1, ' ', true, Json::error_handler_t::replace).substr(0, 200);
}

}  // namespace hive::test
