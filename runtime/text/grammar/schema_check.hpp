#pragma once
// The JSON Schema keywords Hive enforces, checked before compiling: a
// validation keyword that the matcher would not enforce is refused by name
// and JSON pointer, never dropped; annotations (title, description, default,
// examples, $schema, ...) are accepted, so Pydantic's schemas pass.
#include <nlohmann/json.hpp>

namespace hive {

// Throws ConstraintError (kind json_schema) naming the keyword and where.
void check_json_schema(const nlohmann::json& schema);

}  // namespace hive
