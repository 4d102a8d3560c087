#pragma once
// Bounds the counted repetitions ({n}, {n,}, {n,m}) of a regex or an EBNF
// grammar before compiling: each count, and the product along nested
// groups ((a{30}){40} is 1,200), at most grammar_limits::kMaxRepetition.
#include <string_view>

#include "runtime/text/grammar/constraint.hpp"

namespace hive {

// Throws ConstraintError naming the byte offset of the count over the bound.
void check_repetitions(std::string_view text, ConstraintKind kind);

}  // namespace hive
