// Expressions of the Jinja subset: precedence as jinja2's parser groups it,
// Python's semantics for values and operators, attribute and item lookup,
// string methods and filters. (snippets.json checks many more against
// jinja2 itself; these spell out the rules that matter most.)
#include <gtest/gtest.h>

#include "tests/jinja/render_helpers.hpp"

namespace hive {
namespace {

using testing::error_of;
using testing::render;
using Json = nlohmann::ordered_json;

TEST(JinjaExpressions, PrecedenceFollowsJinja2) {
  EXPECT_EQ(render("{{ 'a' + 'b' | upper }}"), "aB");  // a filter binds to its operand only
  EXPECT_EQ(render("{{ -2 | abs }}"), "2");            // (-2) | abs
  EXPECT_EQ(render("{{ 10 // 3 * 3 + 10 % 3 }}"), "10");
  EXPECT_EQ(render("{{ 2 ** 3 ** 2 }}"), "64");  // left-associative in jinja2
  EXPECT_EQ(render("{{ not 1 in [1] }}"), "False");
  EXPECT_EQ(render("{{ 1 < 2 > 1.5 }}"), "True");  // chained comparison
  EXPECT_EQ(render("{{ 'x' ~ (1 + 2) }}"), "x3");
  EXPECT_EQ(render("{{ 1 if false else 2 if false else 3 }}"), "3");
}

TEST(JinjaExpressions, ValuesPrintLikePythonStr) {
  EXPECT_EQ(render("{{ none }}|{{ true }}|{{ 1.0 }}|{{ 3 / 2 }}|{{ 1e-5 }}|{{ 1e16 }}"),
            "None|True|1.0|1.5|1e-05|1e+16");
  EXPECT_EQ(render("{{ [1, 'a', none] }}|{{ ('x',) }}|{{ {'k': 'v'} }}"),
            "[1, 'a', None]|('x',)|{'k': 'v'}");
  EXPECT_EQ(render("{{ [\"it's\"] }}"), "[\"it's\"]");
  EXPECT_EQ(render("[{{ missing }}]"), "[]");  // undefined prints as nothing
}

TEST(JinjaExpressions, PythonOperatorSemantics) {
  EXPECT_EQ(render("{{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 7 }} {{ true + 1 }}"), "-4 2 1.0 2");
  EXPECT_EQ(render("{{ 'ab' * 2 }} {{ [1] + [2] }} {{ 1 == 1.0 }} {{ (1, 2) == [1, 2] }}"),
            "abab [1, 2] True False");
  EXPECT_EQ(render("{{ 0 or 'x' }}|{{ 'a' and 'b' }}|{{ [] or none }}"), "x|b|None");
  EXPECT_EQ(render("{{ 'b' in 'abc' }} {{ 'k' in {'k': 1} }} {{ 3 not in [1, 2] }}"),
            "True True True");
}

TEST(JinjaExpressions, AttributesItemsAndSlices) {
  const Json vars = {{"d", {{"a", 1}, {"items", 2}}}, {"l", {10, 20, 30}}, {"s", "h\u00e9llo"}};
  EXPECT_EQ(render("{{ d.a }} {{ d['a'] }} {{ l[-1] }} {{ l.0 }} {{ d['items'] }}", vars),
            "1 1 30 10 2");
  // `.items` is the dict method, as in Python; the key is reached with [].
  EXPECT_EQ(render("{{ d.items() | list }}", vars), "[('a', 1), ('items', 2)]");
  EXPECT_EQ(render("{{ l[::-1] }} {{ l[1:] }} {{ s[1] }} {{ s[::-1] }} {{ s[-3:] }}", vars),
            "[30, 20, 10] [20, 30] \u00e9 oll\u00e9h llo");
  EXPECT_EQ(render("{{ d.missing is defined }} {{ l[7] is defined }}", vars), "False False");
}

TEST(JinjaExpressions, StringMethods) {
  const Json vars = {{"c", "<think>\nplan\n</think>\n\nanswer"}};
  EXPECT_EQ(render("{{ c.split('</think>')[-1].lstrip('\\n') }}", vars), "answer");
  EXPECT_EQ(
      render("{{ c.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') }}", vars),
      "plan");
  EXPECT_EQ(render("{{ c.startswith('<think>') }} {{ c.endswith(('x', 'er')) }}", vars),
            "True True");
  EXPECT_EQ(render("[{{ '  a b  '.strip() }}] {{ 'a b  c'.split() }} {{ 'a,b,c'.rsplit(',', 1) }}"),
            "[a b] ['a', 'b', 'c'] ['a,b', 'c']");
  EXPECT_EQ(render("{{ 'Hello'.upper() }} {{ 'x-y z'.title() }} {{ 'aaa'.replace('a', 'b', 2) }}"),
            "HELLO X-Y Z bba");
}

TEST(JinjaExpressions, Filters) {
  EXPECT_EQ(
      render(
          "[{{ '  x \\n' | trim }}] {{ [3, 1, 2] | sort | join(',') }} {{ 'h\u00e9' | length }}"),
      "[x] 1,2,3 2");
  EXPECT_EQ(
      render(
          "{{ missing | default('d') }} {{ '' | default('d', true) }} {{ none | default('d') }}"),
      "d d None");
  EXPECT_EQ(render("{{ users | selectattr('admin') | map(attribute='name') | join(', ') }}",
                   {{"users",
                     {{{"name", "ann"}, {"admin", true}}, {{"name", "bob"}, {"admin", false}}}}}),
            "ann");
  EXPECT_EQ(
      render("{{ [1, 2, 3, 4] | select('even') | list }} {{ ['a', 'B'] | map('upper') | list }}"),
      "[2, 4] ['A', 'B']");
  EXPECT_EQ(render("{{ {'b': 1, 'a': 2} | dictsort }} {{ '42.9' | int }} {{ 2.5 | round }}"),
            "[('a', 2), ('b', 1)] 42 2.0");
}

TEST(JinjaExpressions, TojsonIsTransformersJsonDumps) {
  const Json vars = {{"v", {{"b", "caf\u00e9 <tag> \"q\""}, {"a", {1, 2.5, nullptr, true}}}}};
  // Keys keep their order, non-ASCII stays, nothing is HTML-escaped.
  EXPECT_EQ(render("{{ v | tojson }}", vars),
            "{\"b\": \"caf\u00e9 <tag> \\\"q\\\"\", \"a\": [1, 2.5, null, true]}");
  EXPECT_EQ(render("{{ v.a | tojson(indent=2) }}", vars), "[\n  1,\n  2.5,\n  null,\n  true\n]");
  EXPECT_EQ(render("{{ v.b | tojson(ensure_ascii=true) }}", vars),
            "\"caf\\u00e9 <tag> \\\"q\\\"\"");
  EXPECT_EQ(render("{{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }}"), "{\"a\": 2, \"b\": 1}");
}

TEST(JinjaExpressions, Tests) {
  EXPECT_EQ(render("{{ x is defined }} {{ y is defined }} {{ x is string }} {{ x is not none }}",
                   {{"x", "s"}}),
            "True False True True");
  EXPECT_EQ(
      render("{{ 3 is odd }} {{ 9 is divisibleby 3 }} {{ {} is mapping }} {{ 'a' is iterable }}"),
      "True True True True");
  EXPECT_EQ(
      render("{{ true is boolean }} {{ true is integer }} {{ 1.0 is float }} {{ none is none }}"),
      "True False True True");
  EXPECT_EQ(render("{% set a = {'x': 1} %}{{ a is sameas a }} {{ a is sameas {'x': 1} }}"),
            "True False");
}

TEST(JinjaExpressions, GlobalFunctions) {
  EXPECT_EQ(render("{{ range(3) | list }} {{ range(5, 0, -2) | list }}"), "[0, 1, 2] [5, 3, 1]");
  EXPECT_EQ(render("{{ dict(a=1, b='x') }}"), "{'a': 1, 'b': 'x'}");
  const std::string today = render("{{ strftime_now('%Y-%m-%d') }}");
  ASSERT_EQ(today.size(), 10u);  // e.g. 2025-01-31
  EXPECT_EQ(today[4], '-');
  EXPECT_EQ(today[7], '-');
}

TEST(JinjaExpressions, UndefinedValuesFailWhenUsed) {
  // The position is the operation that used the undefined value.
  EXPECT_EQ(error_of("{{ x + 1 }}"), "chat_template:1:6: 'x' is undefined");
  EXPECT_EQ(error_of("\n{{ msg.role }}", {{"msg", Json::object()}}), "(rendered without error)");
  EXPECT_EQ(error_of("\n  {{ msg.role.upper() }}", {{"msg", Json::object()}}),
            "chat_template:2:14: 'dict object' has no attribute 'role'");
  // Filters fail on undefined (and on None) as jinja2 does, instead of
  // rendering a default: an assistant message with only tool calls has no
  // content, and `message.content | indent(2)` must not silently render "".
  // Messages checked against jinja2 3.1.6.
  for (const char* source :
       {"{{ x | int }}", "{{ x | float }}", "{{ x | int(5) }}", "{{ x | indent }}"})
    EXPECT_NE(error_of(source).find("'x' is undefined"), std::string::npos) << source;
  EXPECT_NE(error_of("{{ none | indent }}")
                .find("unsupported operand type(s) for +=: 'NoneType' and 'str'"),
            std::string::npos);
  EXPECT_NE(error_of("{{ none | truncate }}").find("object of type 'NoneType' has no len()"),
            std::string::npos);
  EXPECT_EQ(render("[{{ x | truncate }}]"), "[]");  // Undefined has length 0
}

}  // namespace
}  // namespace hive
