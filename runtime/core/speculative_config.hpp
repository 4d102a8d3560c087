#pragma once
// How an engine speculates: which drafter proposes, and how many tokens a
// sequence verifies per step at most (γ).
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/core/ngram_drafter.hpp"

namespace hive {

enum class SpeculativeMethod : uint8_t {
  none,
  ngram,        // prompt lookup in the sequence's own tokens
  draft_model,  // a smaller model of the same tokenizer
};

struct SpeculativeConfig {
  SpeculativeMethod method = SpeculativeMethod::none;
  int num_speculative_tokens = 0;  // γ; must be >= 1 unless method is none
  NgramConfig ngram;
  std::filesystem::path draft_model;  // the draft model's directory (draft_model)

  bool enabled() const { return method != SpeculativeMethod::none; }
};

// "none", "ngram", "draft_model"; nullopt for anything else.
std::optional<SpeculativeMethod> parse_speculative_method(std::string_view name);
std::string_view to_string(SpeculativeMethod method);

// Throws hive::Error naming the first bad field.
void validate(const SpeculativeConfig& config);

}  // namespace hive
