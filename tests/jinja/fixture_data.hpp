#pragma once
// Reading the fixtures tools/make_chat_template_fixtures.py rendered with
// transformers and jinja2 (tests/data/chat_templates/).
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace hive::testing {

inline const std::filesystem::path kChatTemplateData =
    std::filesystem::path(HIVE_TEST_DATA) / "chat_templates";

inline nlohmann::ordered_json read_fixture(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open fixture " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return nlohmann::ordered_json::parse(text.str());
}

}  // namespace hive::testing
