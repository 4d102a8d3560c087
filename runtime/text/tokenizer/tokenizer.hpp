#pragma once
// A Hugging Face tokenizer (tokenizer.json with a BPE model, plus
// tokenizer_config.json), producing the same ids and text as the Python
// `tokenizers` / transformers pair.
//
//   text ─▶ added tokens (raw) ─▶ normalizer ─▶ added tokens (normalized)
//        ─▶ pre-tokenizer ─▶ BPE per word ─▶ post-processor ─▶ ids
//   ids  ─▶ token strings (added, else model) ─▶ decoder chain ─▶ text
//
// Input text is bytes: invalid UTF-8 is replaced, per maximal invalid
// subsequence, by U+FFFD before anything else (Rust's from_utf8_lossy;
// Python's bytes.decode("utf-8", "replace")). Hugging Face itself only takes
// Python str and rejects strings holding lone surrogates.
//
// Immutable once built; copies share the tables, and encode/decode may run
// on many threads at once.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hive {

class Tokenizer {
 public:
  // Reads dir/tokenizer.json and, when present, dir/tokenizer_config.json.
  static Tokenizer from_directory(const std::string& dir);
  // The two files' contents (config may be empty); `source` names them in errors.
  static Tokenizer from_json(std::string_view tokenizer_json, std::string_view config_json,
                             const std::string& source = "tokenizer.json");

  // add_special_tokens applies the post-processor's special tokens (BOS/EOS),
  // as transformers' tokenizer(text) does by default.
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const;
  // Unknown ids are skipped, as Hugging Face does.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  std::optional<std::string> id_to_token(int32_t id) const;
  bool is_special(int32_t id) const;
  // The bytes token `id` adds to a decoded text in the middle of a sequence
  // (no leading-space removal), not repaired to UTF-8: a byte-level token may
  // hold part of a character. Empty for an unknown id. What a grammar
  // matcher walks (runtime/text/grammar).
  std::string token_bytes(int32_t id) const;
  std::optional<int32_t> bos_token_id() const;
  std::optional<int32_t> eos_token_id() const;
  // Model vocabulary plus added tokens.
  std::size_t vocab_size() const;

  struct Impl;

 private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace hive
