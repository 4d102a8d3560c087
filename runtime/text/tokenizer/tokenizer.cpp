#include "runtime/text/tokenizer/tokenizer.hpp"

#include "base/error.hpp"
#include "runtime/text/tokenizer/tokenizer_impl.hpp"
#include "runtime/text/utf8.hpp"

namespace hive {

using tokenizer::Piece;

const std::string* Tokenizer::Impl::token_string(int32_t id) const {
  if (const std::string* form = added.decode_form(id)) return form;
  return model->id_to_token(id);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  const Impl& impl = *impl_;
  std::string repaired;
  if (!utf8::is_valid(text)) {
    repaired = utf8::to_valid(text);
    text = repaired;
  }
  std::vector<int32_t> ids;
  std::vector<Piece> raw_pieces;
  if (!text.empty()) raw_pieces.push_back(Piece{std::string(text), std::nullopt, true});
  impl.added.split_raw(raw_pieces);
  std::vector<Piece> words;
  for (Piece& raw : raw_pieces) {
    if (raw.token_id) {
      ids.push_back(*raw.token_id);
      continue;
    }
    if (impl.normalizer) impl.normalizer->normalize(raw);
    words.clear();
    if (!raw.text.empty()) words.push_back(std::move(raw));
    impl.added.split_normalized(words);
    if (impl.pre_tokenizer) impl.pre_tokenizer->pre_tokenize(words);
    for (const Piece& word : words) {
      if (word.token_id)
        ids.push_back(*word.token_id);
      else
        impl.model->tokenize(word.text, ids);
    }
  }
  if (impl.post_processor) impl.post_processor->process(ids, add_special_tokens);
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  const Impl& impl = *impl_;
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (const int32_t id : ids) {
    const std::string* token = impl.token_string(id);
    if (token == nullptr) continue;
    if (skip_special_tokens && impl.added.is_special_content(*token)) continue;
    tokens.push_back(*token);
  }
  if (!impl.decoder) {
    std::string joined;
    for (std::size_t i = 0; i < tokens.size(); ++i) joined += (i ? " " : "") + tokens[i];
    return joined;
  }
  impl.decoder->decode_chain(tokens);
  std::string text;
  for (const std::string& token : tokens) text += token;
  return text;
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (const auto id = impl_->added.token_to_id(token)) return id;
  return impl_->model->token_to_id(token);
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  const std::string* token = impl_->token_string(id);
  if (token == nullptr) return std::nullopt;
  return *token;
}

bool Tokenizer::is_special(int32_t id) const {
  const tokenizer::AddedToken* token = impl_->added.find(id);
  return token != nullptr && impl_->added.is_special_content(token->content);
}

std::string Tokenizer::token_bytes(int32_t id) const {
  const std::string* token = impl_->token_string(id);
  if (token == nullptr) return {};
  if (!impl_->decoder) return *token;
  // Decoded after a plain "a", so that the decoders' first-token rules
  // (Metaspace dropping the leading space, Strip) do not apply to it.
  std::vector<std::string> tokens{"a", *token};
  impl_->decoder->decode_chain_bytes(tokens);
  std::string bytes;
  for (const std::string& piece : tokens) bytes += piece;
  check(bytes.starts_with('a'), "tokenizer: the decoder changed the text before token ", id);
  return bytes.substr(1);
}

std::optional<int32_t> Tokenizer::bos_token_id() const {
  return impl_->bos_id;
}
std::optional<int32_t> Tokenizer::eos_token_id() const {
  return impl_->eos_id;
}

std::size_t Tokenizer::vocab_size() const {
  return impl_->model->vocab_size() + impl_->added.count_outside(*impl_->model);
}

}  // namespace hive
