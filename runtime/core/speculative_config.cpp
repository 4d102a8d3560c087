#include "runtime/core/speculative_config.hpp"

#include "base/error.hpp"

namespace hive {

std::optional<SpeculativeMethod> parse_speculative_method(std::string_view name) {
  if (name == "none") return SpeculativeMethod::none;
  if (name == "ngram") return SpeculativeMethod::ngram;
  if (name == "draft_model") return SpeculativeMethod::draft_model;
  return std::nullopt;
}

std::string_view to_string(SpeculativeMethod method) {
  switch (method) {
    case SpeculativeMethod::none: return "none";
    case SpeculativeMethod::ngram: return "ngram";
    case SpeculativeMethod::draft_model: return "draft_model";
  }
  return "?";
}

void validate(const SpeculativeConfig& config) {
  if (!config.enabled()) return;
  check(config.num_speculative_tokens >= 1 && config.num_speculative_tokens <= kMaxSpeculativeTokens,
        "speculative: num_speculative_tokens must be in [1, ", kMaxSpeculativeTokens, "] (got ",
        config.num_speculative_tokens, ")");
  if (config.method == SpeculativeMethod::ngram) validate(config.ngram);
  if (config.method == SpeculativeMethod::draft_model)
    check(!config.draft_model.empty(), "speculative: draft_model needs the draft model's directory");
}

}  // namespace hive
