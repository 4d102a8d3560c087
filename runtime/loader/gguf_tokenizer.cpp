#include "runtime/loader/gguf_tokenizer.hpp"

#include <algorithm>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "runtime/loader/gguf_metadata.hpp"

namespace hive {

namespace {

using nlohmann::json;

// llama.cpp's token types (llama_token_type).
constexpr int32_t kUnknown = 2;
constexpr int32_t kControl = 3;
constexpr int32_t kUserDefined = 4;

json byte_level(bool add_prefix_space, bool trim_offsets) {
  return {{"type", "ByteLevel"},
          {"add_prefix_space", add_prefix_space},
          {"trim_offsets", trim_offsets},
          {"use_regex", true}};
}

// The split patterns of llama.cpp's BPE pre-tokenizers (tokenizer.ggml.pre)
// that Hugging Face's tokenizer.json files for the same vocabularies carry
// (llama.cpp quotes them beside its own rewrites), as transformers' GGUF
// integration maps the names: Llama 3's (digits in threes), Qwen2's (single
// digits), Mistral's Tekken and GPT-4o's (Llama 4: letter case classes).
constexpr const char* kLlama3Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kTekkenSplit =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)"
    R"(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kGpt4oSplit =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)"
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)"
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct PreTokenizerName {
  const char* name;
  const char* split;  // null: GPT-2's, ByteLevel's own regex
};

constexpr PreTokenizerName kPreTokenizers[] = {
    {"default", nullptr},           {"gpt-2", nullptr},
    {"llama3", kLlama3Split},       {"llama-v3", kLlama3Split},
    {"llama-bpe", kLlama3Split},    {"falcon3", kLlama3Split},
    {"falcon-h1", kLlama3Split},    {"pixtral", kLlama3Split},
    {"midm-2.0", kLlama3Split},     {"lfm2", kLlama3Split},
    {"dbrx", kLlama3Split},         {"smaug-bpe", kLlama3Split},
    {"qwen2", kQwen2Split},         {"deepseek-r1-qwen", kQwen2Split},
    {"megrez", kQwen2Split},        {"tekken", kTekkenSplit},
    {"gpt-4o", kGpt4oSplit},        {"llama4", kGpt4oSplit},
    {"minimax-m2", kGpt4oSplit},
};

// The pre_tokenizer of a byte-level BPE whose tokenizer.ggml.pre is `pre`.
json byte_level_pre_tokenizer(const std::string& pre, const std::string& where) {
  for (const PreTokenizerName& known : kPreTokenizers) {
    if (pre != known.name) continue;
    if (!known.split) return byte_level(false, true);
    json split = {{"type", "Split"},
                  {"pattern", {{"Regex", known.split}}},
                  {"behavior", "Isolated"},
                  {"invert", false}};
    json bytes = byte_level(false, true);
    bytes["use_regex"] = false;
    return {{"type", "Sequence"}, {"pretokenizers", {split, bytes}}};
  }
  std::string names;
  for (const PreTokenizerName& known : kPreTokenizers)
    names += std::string(names.empty() ? "" : ", ") + known.name;
  fail(where, ": tokenizer.ggml.pre '", pre, "' is not supported (supported: ", names, ")");
}

json vocab_of(const GgufFile& file, const std::vector<std::string>& tokens) {
  json vocab = json::object();
  for (size_t id = 0; id < tokens.size(); ++id) vocab[tokens[id]] = id;
  check(vocab.size() == tokens.size(), file.path().string(),
        ": metadata key 'tokenizer.ggml.tokens' lists a token twice");
  return vocab;
}

json file_merges(const GgufFile& file) {
  json merges = json::array();
  for (const std::string& merge : file.get_array<std::string>("tokenizer.ggml.merges")) {
    const size_t space = merge.find(' ');
    check(space != std::string::npos && space > 0 && space + 1 < merge.size(), file.path().string(),
          ": metadata key 'tokenizer.ggml.merges' holds '", merge,
          "', expected two tokens separated by a space");
    merges.push_back({merge.substr(0, space), merge.substr(space + 1)});
  }
  return merges;
}

json bpe_json(json vocab, json merges, bool byte_fallback) {
  return {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", nullptr},
          {"continuing_subword_prefix", nullptr},
          {"end_of_word_suffix", nullptr},
          {"fuse_unk", byte_fallback},
          {"byte_fallback", byte_fallback},
          {"ignore_merges", false},
          {"vocab", std::move(vocab)},
          {"merges", std::move(merges)}};
}

json bpe_model(const GgufFile& file, const std::vector<std::string>& tokens) {
  return bpe_json(vocab_of(file, tokens), file_merges(file), false);
}

// Characters (code points) in UTF-8 text.
size_t code_points(std::string_view text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  }));
}

// A SentencePiece vocabulary's merges, which its file does not list: as
// transformers' generate_merges recovers them, every split of a token into
// two tokens, ranked by the token's score (higher first), then by the
// lengths of the left and the right part (longer first), then by the
// parts' ids. Splits fall between characters.
json merges_from_scores(const GgufFile& file, const std::vector<std::string>& tokens) {
  const auto scores = file.get_array<float>("tokenizer.ggml.scores");
  check(scores.size() == tokens.size(), file.path().string(),
        ": metadata key 'tokenizer.ggml.scores' has ", scores.size(), " entries for ",
        tokens.size(), " tokens");
  std::unordered_map<std::string_view, int64_t> ids;
  for (size_t id = 0; id < tokens.size(); ++id) ids.emplace(tokens[id], static_cast<int64_t>(id));
  struct Merge {
    int64_t left, right;
    float score;
    size_t left_length, right_length;
  };
  std::vector<Merge> merges;
  for (size_t id = 0; id < tokens.size(); ++id) {
    const std::string_view token = tokens[id];
    const size_t first = merges.size();
    for (size_t at = 1; at < token.size(); ++at) {
      if ((static_cast<unsigned char>(token[at]) & 0xc0) == 0x80) continue;
      const auto left = ids.find(token.substr(0, at)), right = ids.find(token.substr(at));
      if (left == ids.end() || right == ids.end()) continue;
      merges.push_back({left->second, right->second, scores[id], code_points(left->first),
                        code_points(right->first)});
    }
    std::sort(merges.begin() + static_cast<std::ptrdiff_t>(first), merges.end(),
              [](const Merge& a, const Merge& b) {
                return std::pair(a.left, a.right) < std::pair(b.left, b.right);
              });
  }
  std::stable_sort(merges.begin(), merges.end(), [](const Merge& a, const Merge& b) {
    return std::tuple(a.score, a.left_length, a.right_length) >
           std::tuple(b.score, b.left_length, b.right_length);
  });
  json out = json::array();
  for (const Merge& m : merges)
    out.push_back({tokens[static_cast<size_t>(m.left)], tokens[static_cast<size_t>(m.right)]});
  return out;
}

// "llama" (SentencePiece BPE), as transformers' LlamaTokenizer: "▁" for
// spaces, one before the text (tokenizer.ggml.add_space_prefix, true when
// absent), byte-fallback tokens <0xNN> for what the vocabulary lacks.
json metaspace_pre_tokenizer(const GgufFile& file) {
  const bool prefix = gguf_bool(file, "tokenizer.ggml.add_space_prefix").value_or(true);
  return {{"type", "Metaspace"},
          {"replacement", "\u2581"},
          {"prepend_scheme", prefix ? "first" : "never"},
          {"split", false}};
}

json metaspace_decoder() {
  return {{"type", "Sequence"},
          {"decoders",
           {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
            {{"type", "ByteFallback"}},
            {{"type", "Fuse"}},
            {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
}

// Control tokens (and for SentencePiece the unknown token) are special.
json added_tokens(const GgufFile& file, const std::vector<std::string>& tokens,
                  bool unknown_is_special) {
  json added = json::array();
  if (!file.find("tokenizer.ggml.token_type")) return added;
  const auto types = file.get_array<int32_t>("tokenizer.ggml.token_type");
  check(types.size() == tokens.size(), file.path().string(),
        ": metadata key 'tokenizer.ggml.token_type' has ", types.size(), " entries for ",
        tokens.size(), " tokens");
  for (size_t id = 0; id < types.size(); ++id) {
    const bool special = types[id] == kControl || (unknown_is_special && types[id] == kUnknown);
    if (special || types[id] == kUserDefined)
      added.push_back({{"id", id},
                       {"content", tokens[id]},
                       {"single_word", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"normalized", false},
                       {"special", special}});
  }
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

// BOS and EOS around the text where the file asks for them (BOS by default
// for SentencePiece, as llama.cpp and transformers), else `none`; none of
// the pair templates Hive never uses.
json post_processor(const GgufFile& file, const std::vector<std::string>& tokens,
                    bool bos_by_default, json none) {
  std::vector<std::string> before, after;
  if (gguf_bool(file, "tokenizer.ggml.add_bos_token").value_or(bos_by_default))
    before.push_back(named_token(file, "bos", tokens).value_or(""));
  if (gguf_bool(file, "tokenizer.ggml.add_eos_token").value_or(false))
    after.push_back(named_token(file, "eos", tokens).value_or(""));
  for (const std::string& t : before)
    check(!t.empty(), file.path().string(), ": add_bos_token is set but bos_token_id is missing");
  for (const std::string& t : after)
    check(!t.empty(), file.path().string(), ": add_eos_token is set but eos_token_id is missing");
  if (before.empty() && after.empty()) return none;
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
  check(model == "gpt2" || model == "llama", where, ": tokenizer.ggml.model '", model,
        "' is not supported (supported: gpt2, byte-level BPE; llama, SentencePiece BPE)");
  const auto tokens = file.get_array<std::string>("tokenizer.ggml.tokens");
  HfTokenizerFiles files;
  if (model == "gpt2") {
    const std::string pre = gguf_string(file, "tokenizer.ggml.pre").value_or("default");
    files.tokenizer = {{"version", "1.0"},
                       {"truncation", nullptr},
                       {"padding", nullptr},
                       {"added_tokens", added_tokens(file, tokens, false)},
                       {"normalizer", nullptr},
                       {"pre_tokenizer", byte_level_pre_tokenizer(pre, where)},
                       {"post_processor",
                        post_processor(file, tokens, false, byte_level(true, false))},
                       {"decoder", byte_level(true, true)},
                       {"model", bpe_model(file, tokens)}};
  } else {
    // A file converted from a tokenizer.json lists its merges; one from a
    // SentencePiece model gives scores instead.
    json merges = file.find("tokenizer.ggml.merges") ? file_merges(file)
                                                     : merges_from_scores(file, tokens);
    files.tokenizer = {{"version", "1.0"},
                       {"truncation", nullptr},
                       {"padding", nullptr},
                       {"added_tokens", added_tokens(file, tokens, true)},
                       {"normalizer", nullptr},
                       {"pre_tokenizer", metaspace_pre_tokenizer(file)},
                       {"post_processor", post_processor(file, tokens, true, nullptr)},
                       {"decoder", metaspace_decoder()},
                       {"model", bpe_json(vocab_of(file, tokens), std::move(merges), true)}};
  }
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
