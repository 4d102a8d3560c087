// Building a Tokenizer from tokenizer.json and tokenizer_config.json.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.hpp"
#include "base/json_reader.hpp"
#include "runtime/text/tokenizer/json_fields.hpp"
#include "runtime/text/tokenizer/tokenizer_config.hpp"
#include "runtime/text/tokenizer/tokenizer_impl.hpp"

namespace hive {

using tokenizer::Json;

namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  check(in.good(), path.string(), ": cannot open");
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

tokenizer::AddedToken added_token(const Json& entry, const std::string& path) {
  tokenizer::AddedToken token;
  token.content = tokenizer::string_field(entry, "content", path);
  token.single_word = tokenizer::bool_field(entry, "single_word", path, false);
  token.lstrip = tokenizer::bool_field(entry, "lstrip", path, false);
  token.rstrip = tokenizer::bool_field(entry, "rstrip", path, false);
  token.normalized = tokenizer::bool_field(entry, "normalized", path, true);
  token.special = tokenizer::bool_field(entry, "special", path, false);
  return token;
}

// The file's ids are not used: like Hugging Face, a token gets its id in the
// model vocabulary, else the next free one.
void add_file_tokens(const Json& root, const std::string& source, Tokenizer::Impl& impl) {
  const auto it = root.find("added_tokens");
  if (it == root.end() || it->is_null()) return;
  const std::string path = tokenizer::child_path(source + ":", "added_tokens");
  tokenizer::expect_array(*it, path);
  for (std::size_t i = 0; i < it->size(); ++i) {
    const tokenizer::AddedToken token = added_token((*it)[i], tokenizer::index_path(path, i));
    if (!token.content.empty()) impl.added.add(token, *impl.model, impl.normalizer.get());
  }
}

void apply_config(const tokenizer::TokenizerConfig& config, Tokenizer::Impl& impl) {
  for (const tokenizer::AddedToken& token : config.added_tokens_decoder)
    if (!token.content.empty()) impl.added.add(token, *impl.model, impl.normalizer.get());
  for (const tokenizer::AddedToken& token : config.special_tokens)
    if (!token.content.empty() && !impl.added.token_to_id(token.content))
      impl.added.add(token, *impl.model, impl.normalizer.get());
  impl.added.set_split_special_tokens(config.split_special_tokens);
  auto lookup = [&](const std::optional<std::string>& content) -> std::optional<int32_t> {
    if (!content) return std::nullopt;
    if (const auto id = impl.added.token_to_id(*content)) return id;
    return impl.model->token_to_id(*content);
  };
  impl.bos_id = lookup(config.bos_token);
  impl.eos_id = lookup(config.eos_token);
}

}  // namespace

Tokenizer Tokenizer::from_json(std::string_view tokenizer_json, std::string_view config_json,
                               const std::string& source) {
  const Json root = parse_json(tokenizer_json, source);
  const std::string file = source + ":";
  tokenizer::expect_object(root, file);
  if (const auto version = tokenizer::optional_string(root, "version", file))
    if (!(*version == "1.0"))
      fail(tokenizer::child_path(file, "version"), ": expected \"1.0\" (got \"", *version, "\")");
  auto impl = std::make_shared<Impl>();
  auto component = [&](const char* key) -> const Json& {
    static const Json null_value;
    const auto it = root.find(key);
    return it == root.end() ? null_value : *it;
  };
  const std::string model_path = tokenizer::child_path(file, "model");
  impl->model =
      tokenizer::BpeModel::from_json(tokenizer::required(root, "model", file), model_path);
  impl->normalizer = tokenizer::make_normalizer(component("normalizer"),
                                                tokenizer::child_path(file, "normalizer"));
  impl->pre_tokenizer = tokenizer::make_pre_tokenizer(component("pre_tokenizer"),
                                                      tokenizer::child_path(file, "pre_tokenizer"));
  impl->post_processor = tokenizer::make_post_processor(
      component("post_processor"), tokenizer::child_path(file, "post_processor"));
  impl->decoder =
      tokenizer::make_decoder(component("decoder"), tokenizer::child_path(file, "decoder"));
  add_file_tokens(root, source, *impl);

  if (!config_json.empty()) {
    const std::string config_name = "tokenizer_config.json";
    const Json config = parse_json(config_json, config_name);
    apply_config(tokenizer::parse_tokenizer_config(config, config_name + ":"), *impl);
  }
  return Tokenizer(std::move(impl));
}

Tokenizer Tokenizer::from_directory(const std::string& dir) {
  const std::filesystem::path root(dir);
  const std::filesystem::path tokenizer_file = root / "tokenizer.json";
  check(std::filesystem::exists(tokenizer_file), tokenizer_file.string(),
        ": not found (Hive reads Hugging Face tokenizer.json files)");
  const std::filesystem::path config_file = root / "tokenizer_config.json";
  const std::string config =
      std::filesystem::exists(config_file) ? read_file(config_file) : std::string();
  return from_json(read_file(tokenizer_file), config, tokenizer_file.string());
}

}  // namespace hive
