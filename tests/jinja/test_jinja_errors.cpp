// What the Jinja subset refuses: every unsupported or unknown construct
// fails with a TemplateError naming line, column and the construct, at load
// time where the parser can tell, never by rendering something else.
#include <gtest/gtest.h>

#include "tests/jinja/render_helpers.hpp"

namespace hive {
namespace {

using testing::error_of;

TEST(JinjaErrors, UnsupportedFiltersTestsAndTagsFailAtLoad) {
  EXPECT_EQ(error_of("line one\n{% set x = 1 %}\n{{ 'text' | wordwrap(5) }}"),
            "chat_template:3:13: unsupported filter 'wordwrap'");
  EXPECT_EQ(error_of("{{ x | no_such_filter }}"),
            "chat_template:1:8: unknown filter 'no_such_filter'");
  EXPECT_EQ(error_of("{{ x is escaped }}"), "chat_template:1:9: unsupported test 'escaped'");
  EXPECT_EQ(error_of("{{ x is shiny }}"), "chat_template:1:9: unknown test 'shiny'");
  EXPECT_EQ(error_of("{% include 'other.jinja' %}"),
            "chat_template:1:4: unsupported tag 'include'");
  EXPECT_EQ(error_of("{% call m() %}x{% endcall %}"), "chat_template:1:4: unsupported tag 'call'");
  EXPECT_EQ(error_of("{% extends 'base' %}"), "chat_template:1:4: unsupported tag 'extends'");
  EXPECT_EQ(error_of("{% do x.append(1) %}"), "chat_template:1:4: unsupported tag 'do'");
  EXPECT_EQ(error_of("{% frobnicate %}"), "chat_template:1:4: unknown tag 'frobnicate'");
  EXPECT_EQ(error_of("{% for x in y recursive %}{% endfor %}"),
            "chat_template:1:15: unsupported: recursive for loops");
  EXPECT_EQ(error_of("{{ f(*args) }}"),
            "chat_template:1:6: unsupported: *args and **kwargs in calls");
  EXPECT_EQ(error_of("{{ x[1, 2] }}"),
            "chat_template:1:7: unsupported: tuple subscripts (x[a, b])");
  EXPECT_EQ(error_of("{{ '\\N{BULLET}' }}"),
            "chat_template:1:5: unsupported escape \\N{...} in a string literal");
}

TEST(JinjaErrors, UnsupportedRunTimeFeaturesFailWhereUsed) {
  EXPECT_EQ(error_of("{{ 'ab'.zfill(4) }}"), "chat_template:1:8: unsupported str method 'zfill'");
  EXPECT_EQ(error_of("{{ cycler('a', 'b') }}"),
            "chat_template:1:4: unsupported global function 'cycler'");
  EXPECT_EQ(error_of("{{ '%s!' % name }}", {{"name", "x"}}),
            "chat_template:1:10: unsupported: printf-style string formatting ('...' % values)");
}

TEST(JinjaErrors, SyntaxErrorsNameThePlace) {
  EXPECT_EQ(error_of("{% for x in y %}\nbody"),
            "chat_template:2:5: unexpected end of template, expected 'endfor' or 'else'");
  EXPECT_EQ(error_of("{% if x %}{% endfor %}"),
            "chat_template:1:14: unexpected tag 'endfor', expected 'elif' or 'else' or 'endif'");
  EXPECT_EQ(error_of("{{ x "),
            "chat_template:1:1: unexpected end of template, the tag is not closed");
  EXPECT_EQ(error_of("{{ (1 }}"), "chat_template:1:7: unexpected '}', expected ')'");
  EXPECT_EQ(error_of("{{ 'open }}"), "chat_template:1:4: unterminated string literal");
  EXPECT_EQ(error_of("{# never closed"), "chat_template:1:1: missing end of comment tag");
  EXPECT_EQ(error_of("{% break %}"), "chat_template:1:4: 'break' outside of a loop");
  EXPECT_EQ(error_of("{{ 1 + }}"), "chat_template:1:8: unexpected end of print statement '}}'");
  EXPECT_EQ(error_of("{{ a $ b }}"), "chat_template:1:6: unexpected character '$'");
}

TEST(JinjaErrors, RunTimeErrorsNameThePlace) {
  EXPECT_EQ(error_of("{{ 1 // 0 }}"), "chat_template:1:6: integer division or modulo by zero");
  EXPECT_EQ(error_of("{{ 1 < 'a' }}"),
            "chat_template:1:4: '<' not supported between instances of 'int' and 'str'");
  EXPECT_EQ(error_of("\n{% for x in 3 %}{% endfor %}"),
            "chat_template:2:4: 'int' object is not iterable");
  EXPECT_EQ(error_of("{% set x = 1 %}{% set x.y = 2 %}"),
            "chat_template:1:19: cannot assign attribute on non-namespace object 'x'");
  EXPECT_EQ(error_of("{{ {[1]: 'list key'} }}"), "chat_template:1:4: unhashable type: 'list'");
  EXPECT_EQ(error_of("{{ [1].append(2) }}"),
            "chat_template:1:7: access to attribute 'append' of 'list' object is unsafe.");
  EXPECT_EQ(error_of("{{ missing | tojson }}"),
            "chat_template:1:14: Object of type Undefined is not JSON serializable");
}

TEST(JinjaErrors, DeepNestingIsRefusedNotACrash) {
  const std::string deep = "{{ " + std::string(400, '(') + "1" + std::string(400, ')') + " }}";
  EXPECT_NE(error_of(deep).find("nested too deeply"), std::string::npos);
}

// Messages come from clients: a value nested 20000 deep (40 KB of JSON) used
// to overflow the stack while it was converted, whether or not the template
// read it; the JSON reader refuses it (kMaxJsonDepth), as the converter
// refuses a value built that deep in code. A wide object converts in one pass (it was quadratic in its keys).
TEST(JinjaErrors, DeeplyNestedMessagesAreRefusedNotACrash) {
  const auto chat = ChatTemplate::from_string("{{ messages | length }}");
  const std::string deep =
      R"([{"role": "user", "content": )" + std::string(20000, '[') + std::string(20000, ']') + "}]";
  try {
    chat.render_json(deep, false);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("deeper than 128 levels"), std::string::npos)
        << e.what();
  }
  nlohmann::ordered_json wide = nlohmann::ordered_json::object();
  for (int i = 0; i < 20000; ++i) wide["k" + std::to_string(i)] = i;
  const auto keys = ChatTemplate::from_string(
      "{{ messages[0].extra | length }} {{ (messages[0].extra | list)[19999] }}");
  EXPECT_EQ(keys.render(nlohmann::ordered_json::array(
                            {{{"role", "user"}, {"content", "x"}, {"extra", wide}}}),
                        false),
            "20000 k19999");
}

// A render's work is bounded whatever the messages hold: statements run
// and bytes written, each a TemplateTooLarge, not a stall.
TEST(JinjaErrors, ARendersWorkIsBounded) {
  const auto messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", "x"}}});
  const auto loops = ChatTemplate::from_string(
      "{% for i in range(2000) %}{% for j in range(1000) %}{{ '' }}{% endfor %}{% endfor %}");
  EXPECT_THROW(loops.render(messages, false), chat_template::TemplateTooLarge);
  const auto writes = ChatTemplate::from_string(
      "{% for i in range(300) %}{{ 'x' * 100000 }}{% endfor %}");
  EXPECT_THROW(writes.render(messages, false), chat_template::TemplateTooLarge);
  // Within the bounds: 200,000 statements and 2 MB.
  const auto fits = ChatTemplate::from_string(
      "{% for i in range(2000) %}{% for j in range(100) %}{{ '' }}{% endfor %}{{ 'x' * 1000 }}"
      "{% endfor %}");
  EXPECT_EQ(fits.render(messages, false).size(), 2000u * 1000u);
}

TEST(JinjaErrors, ChatInputsAreChecked) {
  const auto chat = ChatTemplate::from_string("{{ messages | length }}");
  EXPECT_THROW(chat.render(nlohmann::ordered_json::array(), false), Error);
  EXPECT_THROW(chat.render(nlohmann::ordered_json::parse("[1]"), false), Error);
  EXPECT_THROW(chat.render(nlohmann::ordered_json::parse(R"([{"role": "user"}])"), false,
                           {{"messages", "clash"}}),
               Error);
}

}  // namespace
}  // namespace hive
