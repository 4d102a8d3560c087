// The Jinja subset expression by expression: every snippet in
// snippets.json must render exactly as transformers' jinja2 environment
// rendered it, or fail where jinja2 failed.
#include <gtest/gtest.h>

#include "runtime/text/chat_template.hpp"
#include "tests/jinja/fixture_data.hpp"

namespace hive {
namespace {

using chat_template::TemplateError;
using chat_template::TemplateRaised;

TEST(ChatTemplateSnippets, RenderLikeJinja2) {
  const auto fixture = testing::read_fixture(testing::kChatTemplateData / "snippets.json");
  const auto& snippets = fixture["snippets"];
  ASSERT_GE(snippets.size(), 100u);
  for (const auto& snippet : snippets) {
    const std::string source = snippet["template"];
    SCOPED_TRACE(source);
    if (snippet.contains("expected")) {
      try {
        EXPECT_EQ(ChatTemplate::from_string(source).render_context(snippet["context"]),
                  snippet["expected"].get<std::string>());
      } catch (const std::exception& error) {
        ADD_FAILURE() << "raised: " << error.what();
      }
      continue;
    }
    const std::string type = snippet["error"]["type"];
    const std::string message = snippet["error"]["message"];
    try {
      ChatTemplate::from_string(source).render_context(snippet["context"]);
      ADD_FAILURE() << "rendered, but jinja2 raised " << type << ": " << message;
    } catch (const TemplateRaised& error) {
      EXPECT_EQ(type, "TemplateError") << error.what();
      EXPECT_EQ(error.message(), message);
    } catch (const TemplateError& error) {
      EXPECT_NE(type, "TemplateError")
          << "expected raise_exception('" << message << "'), got " << error.what();
    }
  }
}

}  // namespace
}  // namespace hive
