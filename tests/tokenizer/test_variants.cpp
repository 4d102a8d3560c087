// Every normalizer, pre-tokenizer, decoder and post-processor behaviour,
// rebuilt on the trained fixture vocabularies (tools/tokenizer_variants.py),
// against what Hugging Face produced with the same tokenizer.json.
#include <gtest/gtest.h>

#include "tests/tokenizer/fixtures.hpp"

namespace hive::test {
namespace {

const Json& variants() {
  static const Json data = read_json(kTokenizerData / "variants.json");
  return data;
}

// The base tokenizer.json / tokenizer_config.json with the variant's fields
// replaced (a null config value removes the key).
Tokenizer build_variant(const Json& variant) {
  const auto base = kTokenizerData / variant["base"].get<std::string>();
  Json tokenizer_json = read_json(base / "tokenizer.json");
  Json config = read_json(base / "tokenizer_config.json");
  if (variant.contains("tokenizer"))
    for (const auto& [key, value] : variant["tokenizer"].items()) tokenizer_json[key] = value;
  if (variant.contains("config"))
    for (const auto& [key, value] : variant["config"].items()) {
      if (value.is_null())
        config.erase(key);
      else
        config[key] = value;
    }
  return Tokenizer::from_json(tokenizer_json.dump(), config.dump(),
                              variant["name"].get<std::string>() + "/tokenizer.json");
}

std::vector<std::string> variant_names() {
  std::vector<std::string> names;
  for (const Json& variant : variants()["variants"]) names.push_back(variant["name"]);
  return names;
}

class Variant : public ::testing::TestWithParam<std::string> {};

TEST_P(Variant, EncodeAndDecodeMatchHuggingFace) {
  const Json* variant = nullptr;
  for (const Json& candidate : variants()["variants"])
    if (candidate["name"] == GetParam()) variant = &candidate;
  ASSERT_NE(variant, nullptr);
  const Tokenizer tokenizer = build_variant(*variant);
  const Json& strings = corpus()["strings"];
  const Json& rows = (*variant)["expected"];
  const Json& indices = variants()["corpus_indices"];
  ASSERT_EQ(indices.size(), rows.size());
  for (std::size_t row = 0; row < rows.size(); ++row) {
    const std::size_t i = indices[row].get<std::size_t>();
    const std::string text = strings[i].get<std::string>();
    const Json& want = rows[row];
    EXPECT_EQ(tokenizer.encode(text, false), ids_of(want["ids"])) << i << ": " << quoted(text);
    const auto special = ids_of(want["ids_special"]);
    EXPECT_EQ(tokenizer.encode(text, true), special) << i << " with special tokens";
    EXPECT_EQ(tokenizer.decode(special, false), want["decode"].get<std::string>()) << i;
    EXPECT_EQ(tokenizer.decode(special, true), want["decode_skip"].get<std::string>()) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Pipelines, Variant, ::testing::ValuesIn(variant_names()),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace hive::test
