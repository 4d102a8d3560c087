#pragma once
// The Hugging Face tokenizer files a GGUF's tokenizer.ggml.* metadata stands
// for, built in memory as transformers' GGUF integration builds them, so one
// tokenizer (runtime/text) serves both formats:
//
//   tokenizer.ggml.model "gpt2"   model: BPE over byte-level symbols
//   .tokens / .merges             model.vocab (id = position) / model.merges
//   .token_type 3 (control)       added_tokens, special
//   .token_type 4 (user-defined)  added_tokens, not special
//   .pre "gpt-2", "default"       pre_tokenizer: ByteLevel with GPT-2's regex
//   .pre "llama-bpe", "qwen2",    Split on Llama 3's, Qwen2's, Tekken's or
//     "tekken", "gpt-4o", ...     GPT-4o's regex, then ByteLevel; other
//                                 names are refused
//   .add_bos_token/.add_eos_token post_processor: TemplateProcessing around
//                                 the text, else ByteLevel (ids unchanged)
//   .bos/.eos/.unk/.padding_token_id  tokenizer_config's named tokens
//   tokenizer.chat_template       tokenizer_config's chat_template
//
//   tokenizer.ggml.model "llama"  SentencePiece BPE, as transformers'
//                                 LlamaTokenizer: Metaspace "▁" (prepended
//                                 unless .add_space_prefix is false), BPE
//                                 with byte fallback (<0xNN> tokens)
//   .merges, else .scores         the merges, or recovered from the scores
//                                 (transformers' generate_merges)
//   .token_type 2 (unknown)       added_tokens, special
//   .add_bos_token                BOS when absent too
//
// Other models ("t5", ...) are refused by name.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "runtime/loader/gguf_file.hpp"

namespace hive {

struct HfTokenizerFiles {
  nlohmann::json tokenizer;       // tokenizer.json
  nlohmann::ordered_json config;  // tokenizer_config.json
  std::optional<std::string> chat_template;
};

// Throws hive::Error naming the file and the key for a missing key or an
// unsupported tokenizer model or pre-tokenizer.
HfTokenizerFiles gguf_tokenizer_files(const GgufFile& file);

}  // namespace hive
