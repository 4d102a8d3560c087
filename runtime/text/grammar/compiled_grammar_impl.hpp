#pragma once
// CompiledGrammar's insides, shared by the compiler and the matcher only.
#include <xgrammar/compiler.h>

#include "runtime/text/grammar/grammar_compiler.hpp"

namespace hive {

struct CompiledGrammar::Impl {
  xgrammar::CompiledGrammar compiled;
  std::vector<int32_t> stop_token_ids;
  int32_t vocab_size;
};

}  // namespace hive
