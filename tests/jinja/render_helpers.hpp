#pragma once
// Rendering a template string with given variables, for the unit tests.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "runtime/text/chat_template.hpp"

namespace hive::testing {

inline std::string render(std::string_view source, const nlohmann::ordered_json& variables =
                                                       nlohmann::ordered_json::object()) {
  return ChatTemplate::from_string(source).render_context(variables);
}

// what() of the TemplateError that loading or rendering raises.
inline std::string error_of(std::string_view source, const nlohmann::ordered_json& variables =
                                                         nlohmann::ordered_json::object()) {
  try {
    render(source, variables);
  } catch (const chat_template::TemplateError& error) {
    return error.what();
  }
  return "(rendered without error)";
}

}  // namespace hive::testing
