// Statements of the Jinja subset: if/elif/else, for loops with their `loop`
// variable, filters and else blocks, break/continue, set (and its scoping),
// namespace, macros, set/filter/with blocks.
#include <gtest/gtest.h>

#include "tests/jinja/render_helpers.hpp"

namespace hive {
namespace {

using testing::error_of;
using testing::render;
using Json = nlohmann::ordered_json;

TEST(JinjaStatements, IfElifElse) {
  const std::string source = "{% if n == 1 %}one{% elif n == 2 %}two{% else %}many{% endif %}";
  EXPECT_EQ(render(source, {{"n", 1}}), "one");
  EXPECT_EQ(render(source, {{"n", 2}}), "two");
  EXPECT_EQ(render(source, {{"n", 7}}), "many");
}

TEST(JinjaStatements, LoopVariables) {
  EXPECT_EQ(
      render("{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}"
             "{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }} {% endfor %}"),
      "1032TrueFalse3 2121FalseFalse3 3210FalseTrue3 ");
  EXPECT_EQ(render("{% for x in [1, 2, 3] %}{{ loop.previtem | default('^') }}{{ x }}"
                   "{{ loop.nextitem | default('$') }}{{ loop.cycle('a', 'b') }} {% endfor %}"),
            "^12a 123b 23$a ");
}

TEST(JinjaStatements, ReverseIterationAsQwen3DoesIt) {
  const Json messages =
      Json::parse(R"([{"role": "user"}, {"role": "assistant"}, {"role": "user"}])");
  EXPECT_EQ(render("{% for m in messages[::-1] %}{{ (messages | length - 1) - loop.index0 }}"
                   "{{ m.role[0] }} {% endfor %}",
                   {{"messages", messages}}),
            "2u 1a 0u ");
}

TEST(JinjaStatements, LoopFilterElseAndControl) {
  EXPECT_EQ(render("{% for x in range(6) if x is even %}{{ x }}/{{ loop.length }} {% endfor %}"),
            "0/3 2/3 4/3 ");
  EXPECT_EQ(render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for x in missing %}x{% else %}undefined is empty{% endfor %}"),
            "undefined is empty");
  EXPECT_EQ(render("{% for x in range(9) %}{% if x == 1 %}{% continue %}{% endif %}"
                   "{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
            "023");
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
                   {{"d", {{"z", 1}, {"a", 2}}}}),
            "z=1;a=2;");
}

TEST(JinjaStatements, SetInsideALoopDoesNotLeakButNamespaceDoes) {
  EXPECT_EQ(render("{% set x = 1 %}{% for i in [2] %}{% set x = i %}{% endfor %}{{ x }}"), "1");
  EXPECT_EQ(render("{% set x = 1 %}{% if true %}{% set x = 2 %}{% endif %}{{ x }}"), "2");
  EXPECT_EQ(
      render(
          "{% set ns = namespace(last=-1, found=false) %}{% for i in [3, 5] %}"
          "{% set ns.last = i %}{% set ns.found = true %}{% endfor %}{{ ns.last }} {{ ns.found }}"),
      "5 True");
  // Each iteration starts from the outer value again.
  EXPECT_EQ(
      render("{% set x = 0 %}{% for i in [1, 2] %}{{ x }}{% set x = i %}{{ x }} {% endfor %}"),
      "01 02 ");
}

TEST(JinjaStatements, Macros) {
  const std::string greet =
      "{% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}";
  EXPECT_EQ(render(greet + "{{ greet('Ann') }} {{ greet('Bo', greeting='Hi') }}"),
            "Hello, Ann! Hi, Bo!");
  EXPECT_EQ(render(greet + "[{{ greet() }}]"), "[Hello, !]");  // missing arguments are undefined
  // A macro sees the variables of its scope as they are when it is called.
  EXPECT_EQ(render("{% set x = 1 %}{% macro m() %}{{ x }}{% endmacro %}{% set x = 2 %}{{ m() }}"),
            "2");
  EXPECT_EQ(
      render("{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1) | int }}{% endif %}"
             "{% endmacro %}{{ fact(5) }}"),
      "120");
}

TEST(JinjaStatements, Blocks) {
  EXPECT_EQ(render("{% set body %}[{{ 1 + 1 }}]{% endset %}{{ body ~ body }}"), "[2][2]");
  EXPECT_EQ(render("{% set loud | upper %}quiet{% endset %}{{ loud }}"), "QUIET");
  EXPECT_EQ(render("{% filter trim | upper %}  spaced  {% endfilter %}|"), "SPACED|");
  EXPECT_EQ(render("{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]"), "3[]");
  EXPECT_EQ(render("{% generation %}assistant text{% endgeneration %}"), "assistant text");
  EXPECT_EQ(render("{% set a, b = 'xy' %}{{ b }}{{ a }}"), "yx");
}

TEST(JinjaStatements, RaiseExceptionCarriesTheTemplatesMessage) {
  const auto chat = ChatTemplate::from_string(
      "{% for m in messages %}\n"
      "  {%- if m.role == 'bot' %}{{ raise_exception('bad role at ' ~ loop.index0) }}{% endif %}\n"
      "{%- endfor %}");
  try {
    chat.render(
        Json::parse(R"([{"role": "user", "content": "a"}, {"role": "bot", "content": "b"}])"),
        false);
    FAIL() << "expected raise_exception to throw";
  } catch (const chat_template::TemplateRaised& error) {
    EXPECT_EQ(error.message(), "bad role at 1");
    EXPECT_EQ(std::string(error.what()), "chat_template:2:31: bad role at 1");
  }
}

TEST(JinjaStatements, MacroRecursionIsBounded) {
  EXPECT_NE(
      error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").find("nested deeper than"),
      std::string::npos);
}

}  // namespace
}  // namespace hive
