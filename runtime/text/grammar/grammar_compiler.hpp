#pragma once
// Compiles a request's Constraint against one tokenizer's vocabulary into a
// CompiledGrammar that any number of GrammarMatchers share. xgrammar's C++
// core does the work (docs/design/structured.md says why); this is Hive's
// face on it: Hive's tokenizer in, Hive's errors out, every input bounded
// (limits.hpp), JSON Schema keywords checked first (schema_check.hpp).
//
// Compiling takes milliseconds to seconds: it runs off the engine's step
// path, on whichever thread owns the compiler. Not thread-safe: one owner.
#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "runtime/text/grammar/constraint.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

namespace hive {

// One constraint compiled for one vocabulary; cheap to copy (shared).
class CompiledGrammar {
 public:
  struct Impl;
  explicit CompiledGrammar(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  int32_t vocab_size() const;
  std::size_t memory_bytes() const;
  const Impl& impl() const { return *impl_; }

 private:
  std::shared_ptr<const Impl> impl_;
};

class GrammarCompiler {
 public:
  // vocab_size: the width of the model's logits (at least the tokenizer's;
  // ids past the tokenizer's are never allowed). stop_token_ids end a
  // generation (allowed only where the grammar accepts); empty means the
  // tokenizer's EOS. Special tokens that do not stop are never allowed.
  explicit GrammarCompiler(const Tokenizer& tokenizer, std::vector<int32_t> stop_token_ids = {},
                           int32_t vocab_size = 0);
  ~GrammarCompiler();
  GrammarCompiler(GrammarCompiler&&) noexcept;
  GrammarCompiler& operator=(GrammarCompiler&&) noexcept;

  // Throws ConstraintError. A constraint compiled before is served from the
  // cache, keyed by kind and text.
  CompiledGrammar compile(const Constraint& constraint);

  int32_t vocab_size() const;
  const std::vector<int32_t>& stop_token_ids() const;
  std::size_t num_cached() const { return cache_.size(); }

 private:
  CompiledGrammar compile_uncached(const Constraint& constraint);

  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::map<std::pair<ConstraintKind, std::string>, CompiledGrammar> cache_;
};

}  // namespace hive
