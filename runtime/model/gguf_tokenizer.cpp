#include "runtime/model/gguf_tokenizer.hpp"

#include <algorithm>
#include <vector>

#include "kernels/error.hpp"
#include "runtime/model/gguf_metadata.hpp"

namespace hive {

namespace {

using nlohmann::json;

// llama.cpp's token types (llama_token_type).
constexpr int32_t kControl = 3;
constexpr int32_t kUserDefined = 4;

json byte_level(bool add_prefix_space, bool trim_offsets) {
  return {{"type", "ByteLevel"},
          {"add_prefix_space", add_prefix_space},
          {"trim_offsets", trim_offsets},
          {"use_regex", true}};
}

json bpe_model(const GgufFile& file, const std::vector<std::string>& tokens) {
  json vocab = json::object();
  for (size_t id = 0; id < tokens.size(); ++id) vocab[tokens[id]] = id;
  check(vocab.size() == tokens.size(), file.path().string(),
        ": metadata key 'tokenizer.ggml.tokens' lists a token twice");
  json merges = json::array();
  for (const std::string& merge : file.get_array<std::string>("tokenizer.ggml.merges")) {
    const size_t space = merge.find(' ');
    check(space != std::string::npos && space > 0 && space + 1 < merge.size(), file.path().string(),
          ": metadata key 'tokenizer.ggml.merges' holds '", merge,
          "', expected two tokens separated by a space");
    merges.push_back({merge.substr(0, space), merge.substr(space + 1)});
  }
  return {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", nullptr},
          {"continuing_subword_prefix", nullptr},
          {"end_of_word_suffix", nullptr},
          {"fuse_unk", false},
          {"byte_fallback", false},
          {"ignore_merges", false},
          {"vocab", std::move(vocab)},
          {"merges", std::move(merges)}};
}

json added_tokens(const GgufFile& file, const std::vector<std::string>& tokens) {
  json added = json::array();
  if (!file.find("tokenizer.ggml.token_type")) return added;
  const auto types = file.get_array<int32_t>("tokenizer.ggml.token_type");
  check(types.size() == tokens.size(), file.path().string(),
        ": metadata key 'tokenizer.ggml.token_type' has ", types.size(), " entries for ",
        tokens.size(), " tokens");
  for (size_t id = 0; id < types.size(); ++id)
    if (types[id] == kControl || types[id] == kUserDefined)
      added.push_back({{"id", id},
                       {"content", tokens[id]},
                       {"single_word", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"normalized", false},
                       {"special", types[id] == kControl}});
  return added;
}

// The token named by `<key>_token_id`, checked against the vocabulary.
std::optional<std::string> named_token(const GgufFile& file, const std::string& key,
                                       const std::vector<std::string>& tokens) {
  const auto id = gguf_integer(file, "tokenizer.ggml." + key + "_token_id");
  if (!id) return std::nullopt;
  check(*id >= 0 && static_cast<size_t>(*id) < tokens.size(), file.path().string(),
        ": metadata key 'tokenizer.ggml.", key, "_token_id' is ", *id, ", not a token id in [0, ",
        tokens.size(), ")");
  return tokens[static_cast<size_t>(*id)];
}

// BOS and EOS around the text where the file asks for them; none of the
// pair templates Hive never uses.
json post_processor(const GgufFile& file, const std::vector<std::string>& tokens) {
  std::vector<std::string> before, after;
  if (gguf_bool(file, "tokenizer.ggml.add_bos_token").value_or(false))
    before.push_back(named_token(file, "bos", tokens).value_or(""));
  if (gguf_bool(file, "tokenizer.ggml.add_eos_token").value_or(false))
    after.push_back(named_token(file, "eos", tokens).value_or(""));
  for (const std::string& t : before)
    check(!t.empty(), file.path().string(), ": add_bos_token is set but bos_token_id is missing");
  for (const std::string& t : after)
    check(!t.empty(), file.path().string(), ": add_eos_token is set but eos_token_id is missing");
  if (before.empty() && after.empty()) return byte_level(true, false);
  json single = json::array();
  json special = json::object();
  const auto add_special = [&](const std::string& token) {
    const auto id = std::find(tokens.begin(), tokens.end(), token) - tokens.begin();
    single.push_back({{"SpecialToken", {{"id", token}, {"type_id", 0}}}});
    special[token] = {{"id", token}, {"ids", {id}}, {"tokens", {token}}};
  };
  for (const std::string& t : before) add_special(t);
  single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
  for (const std::string& t : after) add_special(t);
  return {{"type", "TemplateProcessing"},
          {"single", single},
          {"pair", single},
          {"special_tokens", special}};
}

}  // namespace

HfTokenizerFiles gguf_tokenizer_files(const GgufFile& file) {
  const std::string where = file.path().string();
  const std::string model = file.get<std::string>("tokenizer.ggml.model");
  check(model == "gpt2", where, ": tokenizer.ggml.model '", model,
        "' is not supported (supported: gpt2, byte-level BPE)");
  const std::string pre = gguf_string(file, "tokenizer.ggml.pre").value_or("default");
  check(pre == "gpt-2" || pre == "default", where, ": tokenizer.ggml.pre '", pre,
        "' is not supported (supported: gpt-2, default)");
  const auto tokens = file.get_array<std::string>("tokenizer.ggml.tokens");
  HfTokenizerFiles files;
  files.tokenizer = {{"version", "1.0"},
                     {"truncation", nullptr},
                     {"padding", nullptr},
                     {"added_tokens", added_tokens(file, tokens)},
                     {"normalizer", nullptr},
                     {"pre_tokenizer", byte_level(false, true)},
                     {"post_processor", post_processor(file, tokens)},
                     {"decoder", byte_level(true, true)},
                     {"model", bpe_model(file, tokens)}};
  nlohmann::ordered_json& config = files.config;
  for (const char* name : {"bos", "eos", "unk"}) {
    const auto token = named_token(file, name, tokens);
    config[std::string(name) + "_token"] = token ? nlohmann::ordered_json(*token) : nullptr;
  }
  if (const auto pad = named_token(file, "padding", tokens)) config["pad_token"] = *pad;
  files.chat_template = gguf_string(file, "tokenizer.chat_template");
  if (files.chat_template) config["chat_template"] = *files.chat_template;
  return files;
}

}  // namespace hive
