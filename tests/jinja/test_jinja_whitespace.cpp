// Whitespace as transformers' jinja2 environment handles it: trim_blocks and
// lstrip_blocks are on, `-` strips and `+` keeps, `{{ }}` is never trimmed,
// and one trailing newline of the template is dropped.
#include <gtest/gtest.h>

#include "tests/jinja/render_helpers.hpp"

namespace hive {
namespace {

using testing::render;

TEST(JinjaWhitespace, TrimBlocksDropsTheNewlineAfterABlockTag) {
  EXPECT_EQ(render("a\n{% if true %}\nb\n{% endif %}\nc"), "a\nb\nc");
  EXPECT_EQ(render("{% for i in [1, 2] %}\n{{ i }}\n{% endfor %}\n"), "1\n2\n");
  EXPECT_EQ(render("{# note #}\nx"), "x");    // comments too
  EXPECT_EQ(render("{{ 'v' }}\nx"), "v\nx");  // but not expressions
}

TEST(JinjaWhitespace, LstripBlocksDropsIndentationBeforeABlockTag) {
  EXPECT_EQ(render("  {% if true %}\n    x\n  {% endif %}\ny"), "    x\ny");
  EXPECT_EQ(render("  {{ 'v' }}"), "  v");                    // not before expressions
  EXPECT_EQ(render("a  {% if true %}b{% endif %}"), "a  b");  // only at the start of a line
}

TEST(JinjaWhitespace, MinusStripsAllWhitespaceAndPlusKeepsIt) {
  EXPECT_EQ(render("a \n\t {{- 'b' -}} \n c"), "abc");
  EXPECT_EQ(render("{% for i in [1, 2] -%}\n  {{ i }}\n{%- endfor %}"), "12");
  EXPECT_EQ(render("  {%+ if true %}x{% endif %}"), "  x");  // + keeps the indentation
  EXPECT_EQ(render("{% if true +%}\nx{% endif %}"), "\nx");  // +%} keeps the newline
  EXPECT_EQ(render("a {#- gone -#}   b"), "ab");
}

TEST(JinjaWhitespace, RawBlocksAreLiteral) {
  EXPECT_EQ(render("{% raw %}{{ x }}{% if %}{% endraw %}"), "{{ x }}{% if %}");
  // jinja2 applies no trim_blocks after {% raw %}, but does after {% endraw %}.
  EXPECT_EQ(render("{% raw %}\nbody\n{% endraw %}\nafter"), "\nbody\nafter");
}

TEST(JinjaWhitespace, NewlinesAreNormalisedAndOneTrailingNewlineDropped) {
  EXPECT_EQ(render("a\r\nb\rc\n"), "a\nb\nc");
  EXPECT_EQ(render("a\n\n"), "a\n");
}

TEST(JinjaWhitespace, TypicalChatTemplateLayout) {
  // The shape of real templates: every tag indented and stripped with `-`.
  const std::string source =
      "{%- for message in messages %}\n"
      "    {%- if message.role == 'user' %}\n"
      "        {{- '<|user|>\\n' + message.content }}\n"
      "    {%- else %}\n"
      "        {{- '<|bot|>\\n' + message.content }}\n"
      "    {%- endif %}\n"
      "{%- endfor %}\n";
  const nlohmann::ordered_json messages = nlohmann::ordered_json::parse(
      R"([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}])");
  EXPECT_EQ(render(source, {{"messages", messages}}), "<|user|>\nhi<|bot|>\nyo");
}

}  // namespace
}  // namespace hive
