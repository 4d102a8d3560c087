#pragma once
// Python's int(text, base), float(text) and round() for the int/float/round
// filters: surrounding whitespace, a sign, underscores between digits,
// "inf"/"nan", and round-half-to-even on the exact binary value.
#include <cstdint>
#include <optional>
#include <string_view>

namespace hive::chat_template {

std::optional<int64_t> parse_python_int(std::string_view text, int64_t base);
std::optional<double> parse_python_float(std::string_view text);
int64_t round_integer(int64_t value, int64_t ndigits);
double round_float(double value, int64_t ndigits);

}  // namespace hive::chat_template
