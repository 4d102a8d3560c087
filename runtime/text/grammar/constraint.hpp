#pragma once
// What a request may constrain its output to, and the error a constraint
// that Hive cannot compile is answered with (a 400 naming the field).
#include <cstdint>
#include <string>
#include <vector>

#include "base/error.hpp"

namespace hive {

enum class ConstraintKind : uint8_t {
  json_schema,  // `text` is a JSON Schema
  json_object,  // any JSON object; `text` is empty
  regex,        // `text` is a regular expression the whole output must match
  choice,       // the output is one of `choices`, exactly
  grammar,      // `text` is an EBNF (GBNF) grammar with a rule named root
};

struct Constraint {
  ConstraintKind kind = ConstraintKind::json_object;
  std::string text;
  std::vector<std::string> choices;
};

const char* constraint_kind_name(ConstraintKind kind);

// A constraint Hive refuses: invalid, unsupported, or over a limit. `where`
// says where in it: a JSON pointer into a schema ("/properties/age/not"), or
// a position in the text ("line 1, column 7"); empty when it is the whole
// constraint. what() is the full sentence, naming the kind and `where`.
class ConstraintError : public Error {
 public:
  ConstraintError(ConstraintKind constraint_kind, std::string position, const std::string& detail);
  ConstraintKind kind;
  std::string where;
};

}  // namespace hive
