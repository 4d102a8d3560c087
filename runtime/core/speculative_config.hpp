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
  int num_speculative_tokens = 4;  // γ, when a method is on
  NgramConfig ngram;
  std::filesystem::path draft_model;  // the draft model's directory (draft_model)
  // Load-aware control (spec_cost.hpp): per-sequence γ from its acceptance,
  // and no drafts in a step where they would not pay, by step costs the
  // engine measures at start. Off: γ drafts whenever there are any (the
  // step costs, measured, make the choice machine-dependent; a sampled
  // request's draws then follow it, a greedy one's tokens never do).
  bool adaptive = true;

  bool enabled() const { return method != SpeculativeMethod::none; }
};

// "none", "ngram", "draft_model"; nullopt for anything else.
std::optional<SpeculativeMethod> parse_speculative_method(std::string_view name);
std::string_view to_string(SpeculativeMethod method);

// Throws hive::Error naming the first bad field.
void validate(const SpeculativeConfig& config);

}  // namespace hive
