#pragma once
// The errors a template raises. Both are hive::Error, and what() starts with
// the place in the template: "chat_template:3:14: unsupported filter
// 'wordwrap'".
#include <string>
#include <utility>

#include "base/error.hpp"

namespace hive::chat_template {

// Anything wrong in a template, found while parsing or while rendering.
class TemplateError : public Error {
 public:
  using Error::Error;
};

// The template itself called raise_exception(message), as chat templates do
// to reject conversations they cannot format. message() is the template's
// text, verbatim, as jinja2 raises it.
class TemplateRaised : public TemplateError {
 public:
  TemplateRaised(const std::string& location, std::string message)
      : TemplateError(location.empty() ? message : location + ": " + message),
        location_(location),
        message_(std::move(message)) {}

  const std::string& location() const { return location_; }
  const std::string& message() const { return message_; }

 private:
  std::string location_;
  std::string message_;
};

// The render ran past its bounds (Renderer::kMaxStatements statements run,
// or Renderer::kMaxOutputBytes written): the conversation is too large for
// the template, which is not wrong.
class TemplateTooLarge : public TemplateError {
 public:
  using TemplateError::TemplateError;
};

}  // namespace hive::chat_template
