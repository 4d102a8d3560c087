// What each kind of constraint lets through (random walks checked by an
// independent validator), and what it refuses (errors naming the place).
#include <gtest/gtest.h>

#include <regex>

#include <nlohmann/json.hpp>

#include "tests/grammar/grammar_fixture.hpp"

namespace hive {
namespace {

using Json = nlohmann::json;

// A validator for the subset of JSON Schema the tests' schemas use.
bool valid(const Json& value, const Json& schema, const Json& root) {
  if (schema.contains("$ref")) {
    const std::string ref = schema["$ref"].get<std::string>().substr(1);
    return valid(value, root.at(Json::json_pointer(ref)), root);
  }
  if (schema.contains("anyOf")) {
    for (const Json& branch : schema["anyOf"])
      if (valid(value, branch, root)) return true;
    return false;
  }
  if (schema.contains("enum")) {
    for (const Json& option : schema["enum"])
      if (value == option) return true;
    return false;
  }
  const std::string type = schema.value("type", "");
  if (type == "string") {
    if (!value.is_string()) return false;
    std::size_t length = 0;  // code points
    for (const char c : value.get<std::string>()) length += (c & 0xC0) != 0x80;
    return length <= schema.value("maxLength", 1u << 30) && length >= schema.value("minLength", 0u);
  }
  if (type == "integer") {
    if (!value.is_number_integer()) return false;
    const int64_t n = value.get<int64_t>();
    return n >= schema.value("minimum", INT64_MIN) && n <= schema.value("maximum", INT64_MAX) &&
           (!schema.contains("exclusiveMaximum") || n < schema["exclusiveMaximum"].get<int64_t>());
  }
  if (type == "boolean") return value.is_boolean();
  if (type == "null") return value.is_null();
  if (type == "array") {
    if (!value.is_array()) return false;
    if (value.size() < schema.value("minItems", 0u) ||
        value.size() > schema.value("maxItems", 1u << 30))
      return false;
    for (const Json& item : value)
      if (schema.contains("items") && !valid(item, schema["items"], root)) return false;
    return true;
  }
  if (type == "object") {
    if (!value.is_object()) return false;
    for (const Json& name : schema.value("required", Json::array()))
      if (!value.contains(name.get<std::string>())) return false;
    const Json properties = schema.value("properties", Json::object());
    for (const auto& [key, item] : value.items()) {
      if (properties.contains(key)) {
        if (!valid(item, properties[key], root)) return false;
      } else if (schema.value("additionalProperties", true) == false) {
        return false;
      }
    }
    return true;
  }
  return true;
}

// A Pydantic v2 model's schema: titles, descriptions, defaults, $defs.
const char* const kPydanticSchema = R"({
  "$defs": {"Address": {"properties": {"city": {"title": "City", "type": "string",
      "maxLength": 10}, "zip": {"anyOf": [{"type": "string", "maxLength": 5}, {"type": "null"}],
      "default": null, "title": "Zip"}}, "required": ["city"], "title": "Address",
      "type": "object", "additionalProperties": false}},
  "description": "A person.", "title": "Person", "type": "object",
  "properties": {"name": {"description": "Full name", "title": "Name", "type": "string",
      "maxLength": 16, "examples": ["Ada"]},
    "age": {"title": "Age", "type": "integer", "minimum": 0, "exclusiveMaximum": 130},
    "kind": {"enum": ["a", "b"], "title": "Kind", "type": "string", "default": "a"},
    "home": {"$ref": "#/$defs/Address"},
    "pets": {"items": {"type": "string", "maxLength": 6}, "maxItems": 2, "title": "Pets",
      "type": "array"}},
  "required": ["name", "age", "home"], "additionalProperties": false,
  "$schema": "https://json-schema.org/draft/2020-12/schema"})";

TEST(GrammarConstraints, RandomWalksOfSchemasValidate) {
  const uint64_t seed = test::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const Json schema = Json::parse(kPydanticSchema);
  const CompiledGrammar grammar =
      test::bundled_compiler().compile({ConstraintKind::json_schema, kPydanticSchema, {}});
  int ended = 0;
  for (int i = 0; i < 12; ++i) {
    GrammarMatcher matcher(grammar);
    const test::Walk walk = test::random_walk(matcher, test::bundled_tokenizer(),
                                              test::bundled_compiler().stop_token_ids(), rng, 400);
    if (!walk.ended) continue;
    ++ended;
    Json value;
    try {
      value = Json::parse(walk.text);
    } catch (const Json::exception& e) {
      std::string tokens;
      for (const int32_t t : walk.tokens)
        tokens += " " + std::to_string(t) + ":" +
                  Json(test::bundled_tokenizer().token_bytes(t))
                      .dump(-1, ' ', false, Json::error_handler_t::replace);
      ADD_FAILURE() << e.what() << "\n" << tokens;
      continue;
    }
    EXPECT_TRUE(valid(value, schema, schema)) << walk.text;
  }
  EXPECT_GE(ended, 6);
}

// tools/setup's two fixes to xgrammar 0.2.9: JSON strings admit neither
// raw control characters nor UTF-16 surrogates (not valid UTF-8).
TEST(GrammarConstraints, StringsAreValidJsonAndUtf8) {
  for (const char* schema : {R"({"type": "string"})", R"({"type": "string", "maxLength": 5})",
                             R"({"type": "object", "additionalProperties": {"type": "string"}})"}) {
    const CompiledGrammar grammar =
        test::bundled_compiler().compile({ConstraintKind::json_schema, schema, {}});
    const std::string open = schema[10] == 'o' ? "{\"k\": \"" : "\"";
    for (const char* bad : {"\x0e", "\x1f", "\xed\xa0\x80", "\xed\xbf\xbf"}) {
      GrammarMatcher matcher(grammar);
      ASSERT_TRUE(matcher.accept_bytes(open + "a\xed\x9f\xbf")) << schema;  // U+D7FF
      EXPECT_FALSE(matcher.accept_bytes(bad))
          << schema << ": " << Json(bad).dump(-1, ' ', false, Json::error_handler_t::replace);
    }
  }
}

TEST(GrammarConstraints, RegexChoiceAndGrammarOutputs) {
  std::mt19937_64 rng(test::test_seed());
  auto walk = [&](const Constraint& constraint) {
    GrammarMatcher matcher(test::bundled_compiler().compile(constraint));
    return test::random_walk(matcher, test::bundled_tokenizer(),
                             test::bundled_compiler().stop_token_ids(), rng, 200);
  };
  const std::regex pattern(R"([a-c]{2,5}-\d{1,4})");
  for (int i = 0; i < 8; ++i) {
    const test::Walk w = walk({ConstraintKind::regex, R"([a-c]{2,5}-\d{1,4})", {}});
    ASSERT_TRUE(w.ended);
    EXPECT_TRUE(std::regex_match(w.text, pattern)) << w.text;
    const test::Walk c = walk({ConstraintKind::choice, "", {"red", "green", "blue \"x\"\n"}});
    ASSERT_TRUE(c.ended);
    EXPECT_TRUE(c.text == "red" || c.text == "green" || c.text == "blue \"x\"\n") << c.text;
  }
  const test::Walk g = walk({ConstraintKind::grammar, "root ::= \"<\" [a-z]{0,8} \">\"", {}});
  ASSERT_TRUE(g.ended);
  EXPECT_TRUE(std::regex_match(g.text, std::regex("<[a-z]{0,8}>"))) << g.text;
}

TEST(GrammarConstraints, CompiledGrammarsAreCached) {
  GrammarCompiler compiler(test::bundled_tokenizer());
  const Constraint constraint{ConstraintKind::regex, "[0-9]+", {}};
  const CompiledGrammar first = compiler.compile(constraint);
  const CompiledGrammar second = compiler.compile(constraint);
  EXPECT_EQ(&first.impl(), &second.impl());
  compiler.compile({ConstraintKind::grammar, "root ::= [0-9]+", {}});
  EXPECT_EQ(compiler.num_cached(), 2u);
}

// The ConstraintError that compiling `constraint` throws.
ConstraintError error_of(const Constraint& constraint) {
  try {
    test::bundled_compiler().compile(constraint);
  } catch (const ConstraintError& e) {
    return e;
  }
  ADD_FAILURE() << "compiled: " << constraint.text;
  return ConstraintError(constraint.kind, "", "");
}

TEST(GrammarConstraints, UnsupportedKeywordsAreRefusedByName) {
  struct Case {
    const char* schema;
    const char* where;
    const char* keyword;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"type": "object", "properties": {"a": {"not": {"type": "null"}}}})",
            "/properties/a/not", "not"},
           {R"({"type": "array", "uniqueItems": true})", "/uniqueItems", "uniqueItems"},
           {R"({"type": "number", "multipleOf": 0.5})", "/multipleOf", "multipleOf"},
           {R"({"minimum": 3})", "/minimum", "minimum"},
           {R"({"type": "string", "format": "binary"})", "/format", "binary"},
           {R"({"$ref": "#/$defs/A", "type": "object", "$defs": {"A": {}}})", "/type", "type"},
           {R"({"anyOf": [{"type": "string", "contentEncoding": "base64"}]})",
            "/anyOf/0/contentEncoding", "contentEncoding"},
           {R"({"type": "object", "if": {}, "then": {}})", "/if", "if"},
           {R"({"type": "array", "maxItems": 100000})", "/maxItems", "maxItems"},
       }) {
    const ConstraintError e = error_of({ConstraintKind::json_schema, c.schema, {}});
    EXPECT_EQ(e.where, c.where) << c.schema << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(c.keyword), std::string::npos) << e.what();
  }
}

TEST(GrammarConstraints, InvalidInputsNameThePosition) {
  const ConstraintError json =
      error_of({ConstraintKind::json_schema, "{\"type\": \"object\",, }", {}});
  EXPECT_NE(json.where.find("line 1, column 19"), std::string::npos) << json.what();
  const ConstraintError grammar = error_of({ConstraintKind::grammar, "root ::= \"a\" |\n", {}});
  EXPECT_NE(std::string(grammar.what()).find("line"), std::string::npos) << grammar.what();
  const ConstraintError regex = error_of({ConstraintKind::regex, "ab(c", {}});
  EXPECT_EQ(regex.kind, ConstraintKind::regex);
  EXPECT_FALSE(std::string(regex.what()).empty());
  const ConstraintError repeat = error_of({ConstraintKind::regex, "(a{40}){40}", {}});
  EXPECT_EQ(repeat.where, "byte 7") << repeat.what();
  const ConstraintError big = error_of({ConstraintKind::regex, std::string(70000, 'a'), {}});
  EXPECT_NE(std::string(big.what()).find("longer than"), std::string::npos);
  const ConstraintError empty = error_of({ConstraintKind::choice, "", {}});
  EXPECT_NE(std::string(empty.what()).find("empty"), std::string::npos) << empty.what();
}

}  // namespace
}  // namespace hive
