#include "runtime/text/tokenizer/tokenizer_config.hpp"

#include <array>
#include <map>

#include "base/error.hpp"

namespace hive::tokenizer {
namespace {

constexpr std::array<std::string_view, 7> kNamedTokens = {
    "bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"};

// {"content": ..., "lstrip": ..., ...}, as transformers serializes AddedToken.
AddedToken token_from_object(const Json& object, const std::string& path, bool special_default) {
  AddedToken token;
  token.content = string_field(object, "content", path);
  token.special = bool_field(object, "special", path, special_default);
  token.single_word = bool_field(object, "single_word", path, false);
  token.lstrip = bool_field(object, "lstrip", path, false);
  token.rstrip = bool_field(object, "rstrip", path, false);
  token.normalized = bool_field(object, "normalized", path, !token.special);
  return token;
}

// A named special token: a string (special, not normalized) or an object.
std::optional<AddedToken> special_token(const Json& value, const std::string& path) {
  if (value.is_null()) return std::nullopt;
  if (value.is_string()) {
    AddedToken token;
    token.content = value.get<std::string>();
    token.special = true;
    token.normalized = false;
    return token;
  }
  if (!(value.is_object()))
    fail(path, ": expected a string or {\"content\": ...} (got ", describe(value), ")");
  AddedToken token = token_from_object(value, path, true);
  token.special = true;
  return token;
}

void read_added_tokens_decoder(const Json& config, const std::string& path, TokenizerConfig& out) {
  const auto it = config.find("added_tokens_decoder");
  if (it == config.end() || it->is_null()) return;
  const std::string decoder_path = child_path(path, "added_tokens_decoder");
  expect_object(*it, decoder_path);
  std::map<int64_t, AddedToken> by_id;
  for (const auto& [key, value] : it->items()) {
    const std::string entry_path = str_cat(decoder_path, "[\"", key, "\"]");
    char* end = nullptr;
    const long long id = std::strtoll(key.c_str(), &end, 10);
    check(!key.empty() && *end == '\0' && id >= 0, entry_path, ": expected a token id as key");
    by_id[id] = token_from_object(value, entry_path, false);
  }
  for (auto& [id, token] : by_id) out.added_tokens_decoder.push_back(std::move(token));
}

void read_extra_special_tokens(const Json& config, const std::string& path, TokenizerConfig& out) {
  for (const char* key : {"extra_special_tokens", "additional_special_tokens"}) {
    const auto it = config.find(key);
    if (it == config.end() || it->is_null()) continue;
    const std::string list_path = child_path(path, key);
    if (!(it->is_array() || it->is_object()))
      fail(list_path, ": expected a list (got ", describe(*it), ")");
    std::size_t index = 0;
    for (const Json& value : *it) {
      if (auto token = special_token(value, index_path(list_path, index++)))
        out.special_tokens.push_back(std::move(*token));
    }
    return;  // transformers reads extra_special_tokens, or else the older name
  }
}

}  // namespace

TokenizerConfig parse_tokenizer_config(const Json& config, const std::string& path) {
  expect_object(config, path);
  TokenizerConfig out;
  read_added_tokens_decoder(config, path, out);
  for (const std::string_view name : kNamedTokens) {
    const auto it = config.find(name);
    if (it == config.end()) continue;
    auto token = special_token(*it, child_path(path, name));
    if (!token) continue;
    if (name == "bos_token") out.bos_token = token->content;
    if (name == "eos_token") out.eos_token = token->content;
    out.special_tokens.push_back(std::move(*token));
  }
  read_extra_special_tokens(config, path, out);
  out.split_special_tokens = bool_field(config, "split_special_tokens", path, false);
  return out;
}

}  // namespace hive::tokenizer
