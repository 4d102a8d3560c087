#pragma once
// The bounds that keep a grammar's compilation short (docs/design/structured.md):
// a constraint over them is refused before any work, so a hostile schema is
// an error, never a stall of the compiler.
#include <cstddef>
#include <cstdint>

namespace hive::grammar_limits {

// Bytes of a schema, regex or grammar, and of a choice list all told.
inline constexpr std::size_t kMaxConstraintBytes = 64 * 1024;
inline constexpr std::size_t kMaxChoices = 1024;
// Any count that becomes a repetition: minItems/maxItems, minLength/
// maxLength, min/maxProperties, and {n,m} in a regex or grammar.
inline constexpr int64_t kMaxRepetition = 1024;
// Whitespace characters allowed between two JSON tokens (indentation of a
// pretty-printed document up to 7 levels deep): bounded, so that a model
// can never loop on whitespace forever.
inline constexpr int kMaxJsonWhitespace = 16;

}  // namespace hive::grammar_limits
