#pragma once
// Text belongs to the frontend: the engine core stops on token ids only
// (max_tokens, end-of-sequence, stop token ids), and the output processor
// above it turns each sample's ids into text as they arrive:
//
//   ids ── StreamingDetokenizer ── StopStringMatcher ── released text
//          (whole UTF-8 only,       (held back only as far as
//           special tokens skipped)  a stop string could still match)
//
// A stop string ends the sample's text before it; the caller then ends the
// sample in the engine (LLMEngine::abort_request with
// FinishReason::stop_string). The token that stopped a sample by id (an
// end-of-sequence or stop token id) is not text either.
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "runtime/engine/stop_strings.hpp"
#include "runtime/text/tokenizer/streaming_detokenizer.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

namespace hive {

struct TextParams {
  std::vector<std::string> stop;  // stop strings, matched on the text
  // Ids that end a sample without being text: the request's stop token ids,
  // and the model's end-of-sequence ids unless the request ignores them.
  std::vector<int32_t> stop_token_ids;
  bool skip_special_tokens = true;
};

// One sample's text.
class SampleText {
 public:
  // `prompt`: the ids the generated ones continue (context for the first
  // token's leading space; never released).
  SampleText(const Tokenizer& tokenizer, std::span<const int32_t> prompt, TextParams params);

  // The text `id` releases (often empty: held back). After a stop string or
  // a stop id, stopped() is true and later ids release nothing.
  std::string add(int32_t id);
  // The sample ended: whatever is still held back.
  std::string finish();

  bool stopped() const { return stopped_by_id_ || matcher_.stopped(); }
  bool stopped_by_string() const { return matcher_.stopped(); }
  // Everything released so far.
  const std::string& text() const { return text_; }

 private:
  std::string release(std::string piece);

  StreamingDetokenizer detokenizer_;
  StopStringMatcher matcher_;
  std::vector<int32_t> stop_token_ids_;
  bool stopped_by_id_ = false;
  bool finished_ = false;
  std::string text_;
};

// The samples of many requests, by request id and sample index: `hive run`'s
// and the gateway's one table of output text.
class OutputProcessor {
 public:
  explicit OutputProcessor(Tokenizer tokenizer) : tokenizer_(std::move(tokenizer)) {}

  // Throws if the id is in use or a stop string is empty.
  void add_request(const std::string& request_id, int num_samples, std::span<const int32_t> prompt,
                   const TextParams& params);
  // The text a new id of one sample releases; `stopped_by_string` tells the
  // caller to end that sample in the engine.
  struct Delta {
    std::string text;
    bool stopped_by_string = false;
  };
  Delta add_token(const std::string& request_id, int sample_index, int32_t id);
  // The sample ended in the engine: its held-back text and its whole text;
  // the request is forgotten once all its samples ended.
  struct Final {
    std::string text;       // released by this call
    std::string full_text;  // the sample's whole text
    bool stopped_by_string = false;
  };
  Final finish(const std::string& request_id, int sample_index);
  bool has_request(const std::string& request_id) const;
  // Forgets the request's samples not yet finished (its owner went away).
  void abort_request(const std::string& request_id);

 private:
  SampleText& sample(const std::string& request_id, int sample_index);

  Tokenizer tokenizer_;
  std::map<std::pair<std::string, int>, SampleText> samples_;
};

}  // namespace hive
