// base/json_reader.hpp: nlohmann's parser, and a key given twice in one
// object is an error that names the key and the object.
#include "base/json_reader.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace hive {
namespace {

std::string error_of(std::string_view text) {
  try {
    parse_json(text);
  } catch (const JsonError& e) {
    return e.what();
  }
  return "";
}

TEST(JsonReader, ReadsWhatNlohmannReads) {
  const char* text = R"({"a": [1, {"b": null}], "c": {"a": 2}, "d": "x"})";
  EXPECT_EQ(parse_json(text), nlohmann::json::parse(text));
  const auto ordered = parse_json<nlohmann::ordered_json>(R"({"z": 1, "a": 2})");
  EXPECT_EQ(ordered.begin().key(), "z");
}

TEST(JsonReader, TheSameKeyInDifferentObjectsIsFine) {
  EXPECT_EQ(error_of(R"({"a": {"a": 1}, "b": {"a": 2}, "c": [{"a": 1}, {"a": 2}]})"), "");
}

TEST(JsonReader, AKeyGivenTwiceNamesTheKeyAndTheObject) {
  EXPECT_EQ(error_of(R"({"a": 1, "b": 2, "a": 3})"),
            "key \"a\" given twice in the object at the top level");
  EXPECT_EQ(error_of(R"({"x": {"y": [0, {"k": 1, "k": 2}]}})"),
            "key \"k\" given twice in the object at /x/y/1");
  // After a nested object closes, its parent's keys are still counted.
  EXPECT_EQ(error_of(R"({"a": {"b": {}}, "c": [], "a": 1})"),
            "key \"a\" given twice in the object at the top level");
  // Pointer segments escape '~' and '/' (RFC 6901).
  EXPECT_EQ(error_of(R"({"a/b~": {"k": 1, "k": 1}})"),
            "key \"k\" given twice in the object at /a~1b~0");
  // Keys compare as decoded strings: an escape spells the same key.
  EXPECT_EQ(error_of(R"({"\u0061": 1, "a": 2})"),
            "key \"a\" given twice in the object at the top level");
}

TEST(JsonReader, SyntaxErrorsAreJsonErrors) {
  EXPECT_EQ(error_of("{\"a\": ").rfind("not valid JSON: ", 0), 0u);
  EXPECT_EQ(error_of("[1, 2] 3").rfind("not valid JSON: ", 0), 0u);
}

// Nesting is counted on the bytes before the parse: nothing recursive ever
// sees a value deeper than kMaxJsonDepth.
TEST(JsonReader, NestingIsLimitedBeforeTheParse) {
  const auto nested = [](int depth, const std::string& inside = "") {
    return std::string(static_cast<size_t>(depth), '[') + inside +
           std::string(static_cast<size_t>(depth), ']');
  };
  EXPECT_NO_THROW(parse_json(nested(kMaxJsonDepth)));
  EXPECT_EQ(error_of(nested(kMaxJsonDepth + 1)), "nesting deeper than 128 levels at byte 128");
  EXPECT_EQ(error_of(nested(200000)), "nesting deeper than 128 levels at byte 128");
  EXPECT_EQ(error_of(R"({"a": )" + nested(kMaxJsonDepth) + "}"),
            "nesting deeper than 128 levels at byte 133");
  // Brackets inside strings, escaped quotes included, are text.
  EXPECT_NO_THROW(parse_json(nested(kMaxJsonDepth - 1, R"("[[[[\"[[[[{{{{")")));
}

TEST(JsonReader, TheNamedFormsPrefixTheSource) {
  try {
    parse_json(R"({"a": 1, "a": 2})", "config.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "config.json: key \"a\" given twice in the object at the top level");
  }
  const auto path = std::filesystem::temp_directory_path() /
                    ("hive_json_reader_" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << R"({"w": {"t": "a.safetensors", "t": "b.safetensors"}})";
  try {
    read_json_file(path);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path.string() + ": key \"t\" given twice in the object at /w");
  }
  std::filesystem::remove(path);
  EXPECT_THROW(read_json_file(path), Error);  // cannot open
}

}  // namespace
}  // namespace hive
