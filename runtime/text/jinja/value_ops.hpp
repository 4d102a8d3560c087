#pragma once
// Python's operators on template values: ==, ordering, + - * / // % **, unary
// minus, `in`, len() and iteration. Each throws hive::Error with Python's
// complaint ("unsupported operand type(s) for -: 'str' and 'int'") where
// Python would raise; using an undefined value raises its own message.
#include <string_view>

#include "runtime/text/jinja/value.hpp"

namespace hive::chat_template {

enum class BinaryOp { add, subtract, multiply, divide, floor_divide, modulo, power };

bool equals(const Value& a, const Value& b);
// <0, 0, >0 like a three-way compare; op is named in the error when the two
// values have no order ('<' not supported between 'str' and 'int').
int compare(const Value& a, const Value& b, std::string_view op);
Value arithmetic(BinaryOp op, const Value& a, const Value& b);
Value negate(const Value& a);
Value positive(const Value& a);
bool contains(const Value& container, const Value& item);
int64_t length(const Value& value);
// What a for loop visits: items, dict keys, characters; undefined is empty.
ValueList iterate(const Value& value);
// Throws the undefined value's error; used wherever Python would touch it.
[[noreturn]] void raise_undefined(const Value& undefined);

}  // namespace hive::chat_template
