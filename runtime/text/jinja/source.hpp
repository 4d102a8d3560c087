#pragma once
// The template text and how an offset into it is named in errors:
// "chat_template:3:14: unsupported filter 'wordwrap'" (line and column are
// 1-based; the column counts characters, not bytes).
#include <string>
#include <utility>

#include "runtime/text/jinja/errors.hpp"

namespace hive::chat_template {

class Source {
 public:
  Source(std::string name, std::string text) : name_(std::move(name)), text_(std::move(text)) {}

  const std::string& name() const { return name_; }
  const std::string& text() const { return text_; }
  std::string location(size_t offset) const;

  template <class... Parts>
  [[noreturn]] void fail_at(size_t offset, const Parts&... parts) const {
    throw TemplateError(str_cat(location(offset), ": ", parts...));
  }

 private:
  std::string name_;
  std::string text_;
};

}  // namespace hive::chat_template
