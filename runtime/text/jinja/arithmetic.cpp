// Python's arithmetic on template values: int (checked for 64-bit
// overflow, where Python would grow), float, and the sequence forms of + and *.
#include <cmath>
#include <limits>

#include "base/error.hpp"
#include "runtime/text/jinja/value_ops.hpp"

namespace hive::chat_template {
namespace {

using Kind = Value::Kind;

std::string_view symbol(BinaryOp op) {
  switch (op) {
    case BinaryOp::add:
      return "+";
    case BinaryOp::subtract:
      return "-";
    case BinaryOp::multiply:
      return "*";
    case BinaryOp::divide:
      return "/";
    case BinaryOp::floor_divide:
      return "//";
    case BinaryOp::modulo:
      return "%";
    case BinaryOp::power:
      return "** or pow()";
  }
  return "?";
}

[[noreturn]] void unsupported(BinaryOp op, const Value& a, const Value& b) {
  fail("unsupported operand type(s) for ", symbol(op), ": '", a.type_name(), "' and '",
       b.type_name(), "'");
}

constexpr const char* kOverflow = "integer overflow: the result does not fit in 64 bits";

int64_t add_checked(int64_t a, int64_t b) {
  int64_t result = 0;
  check(!__builtin_add_overflow(a, b, &result), kOverflow);
  return result;
}

int64_t subtract_checked(int64_t a, int64_t b) {
  int64_t result = 0;
  check(!__builtin_sub_overflow(a, b, &result), kOverflow);
  return result;
}

int64_t multiply_checked(int64_t a, int64_t b) {
  int64_t result = 0;
  check(!__builtin_mul_overflow(a, b, &result), kOverflow);
  return result;
}

// Square-and-multiply, so that 1 ** (10 ** 18) is as quick as 2 ** 10.
int64_t integer_power(int64_t base, int64_t exponent) {
  int64_t result = 1;
  while (exponent > 0) {
    if (exponent & 1) result = multiply_checked(result, base);
    exponent >>= 1;
    if (exponent > 0) base = multiply_checked(base, base);
  }
  return result;
}

Value integer_arithmetic(BinaryOp op, int64_t a, int64_t b) {
  switch (op) {
    case BinaryOp::add:
      return Value::integer(add_checked(a, b));
    case BinaryOp::subtract:
      return Value::integer(subtract_checked(a, b));
    case BinaryOp::multiply:
      return Value::integer(multiply_checked(a, b));
    case BinaryOp::divide:
      check(b != 0, "division by zero");
      return Value::floating(static_cast<double>(a) / static_cast<double>(b));
    case BinaryOp::floor_divide:
    case BinaryOp::modulo: {
      check(b != 0, "integer division or modulo by zero");
      check(!(a == std::numeric_limits<int64_t>::min() && b == -1), kOverflow);
      int64_t quotient = a / b, remainder = a % b;
      if (remainder != 0 && ((remainder < 0) != (b < 0))) --quotient, remainder += b;
      return Value::integer(op == BinaryOp::modulo ? remainder : quotient);
    }
    case BinaryOp::power:
      if (b < 0) return Value::floating(std::pow(static_cast<double>(a), static_cast<double>(b)));
      return Value::integer(integer_power(a, b));
  }
  return {};
}

Value float_arithmetic(BinaryOp op, double a, double b) {
  switch (op) {
    case BinaryOp::add:
      return Value::floating(a + b);
    case BinaryOp::subtract:
      return Value::floating(a - b);
    case BinaryOp::multiply:
      return Value::floating(a * b);
    case BinaryOp::divide:
      check(b != 0.0, "float division by zero");
      return Value::floating(a / b);
    case BinaryOp::floor_divide:
      check(b != 0.0, "float floor division by zero");
      return Value::floating(std::floor(a / b));
    case BinaryOp::modulo: {
      check(b != 0.0, "float modulo");
      double remainder = std::fmod(a, b);
      if (remainder != 0.0 && ((remainder < 0) != (b < 0))) remainder += b;
      return Value::floating(remainder);
    }
    case BinaryOp::power:
      return Value::floating(std::pow(a, b));
  }
  return {};
}

// str * n, list * n (either order): Python repeats, and n <= 0 gives empty.
Value repeat(const Value& sequence, int64_t times) {
  check(times < (1 << 20), "refusing to repeat a sequence ", times, " times");
  if (sequence.is_string()) {
    std::string out;
    for (int64_t i = 0; i < times; ++i) out += sequence.as_string();
    return Value::string(std::move(out));
  }
  ValueList out;
  for (int64_t i = 0; i < times; ++i) {
    out.insert(out.end(), sequence.as_list().begin(), sequence.as_list().end());
  }
  return sequence.kind() == Kind::tuple ? Value::tuple(std::move(out))
                                        : Value::list(std::move(out));
}

}  // namespace

Value arithmetic(BinaryOp op, const Value& a, const Value& b) {
  if (a.is_undefined()) raise_undefined(a);
  if (b.is_undefined()) raise_undefined(b);
  if (a.is_integer() && b.is_integer()) return integer_arithmetic(op, a.as_int(), b.as_int());
  if (a.is_number() && b.is_number()) return float_arithmetic(op, a.as_double(), b.as_double());
  const bool same_kind = a.kind() == b.kind();
  if (op == BinaryOp::add && same_kind && a.is_string())
    return Value::string(a.as_string() + b.as_string());
  if (op == BinaryOp::add && same_kind && a.is_sequence()) {
    ValueList joined = a.as_list();
    joined.insert(joined.end(), b.as_list().begin(), b.as_list().end());
    return a.kind() == Kind::tuple ? Value::tuple(std::move(joined))
                                   : Value::list(std::move(joined));
  }
  if (op == BinaryOp::multiply && (a.is_string() || a.is_sequence()) && b.is_integer()) {
    return repeat(a, b.as_int());
  }
  if (op == BinaryOp::multiply && a.is_integer() && (b.is_string() || b.is_sequence())) {
    return repeat(b, a.as_int());
  }
  check(!(op == BinaryOp::modulo && a.is_string()),
        "unsupported: printf-style string formatting ('...' % values)");
  unsupported(op, a, b);
}

Value negate(const Value& a) {
  if (a.is_undefined()) raise_undefined(a);
  if (a.kind() == Kind::floating) return Value::floating(-a.as_double());
  check(a.is_integer(), "bad operand type for unary -: '", a.type_name(), "'");
  check(a.as_int() != std::numeric_limits<int64_t>::min(), "integer overflow");
  return Value::integer(-a.as_int());
}

Value positive(const Value& a) {
  if (a.is_undefined()) raise_undefined(a);
  check(a.is_number(), "bad operand type for unary +: '", a.type_name(), "'");
  return a.is_boolean() ? Value::integer(a.as_int()) : a;
}

}  // namespace hive::chat_template
