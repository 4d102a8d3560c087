#pragma once
// UTF-8 helpers. Everything past Tokenizer's entry points works on valid
// UTF-8; invalid input bytes become U+FFFD there, one per maximal invalid
// subsequence (Unicode's "maximal subpart" practice: what Rust's
// String::from_utf8_lossy and Python's bytes.decode("utf-8", "replace") do).
#include <cstddef>
#include <string>
#include <string_view>

namespace hive::tokenizer {

inline constexpr char32_t kReplacementChar = 0xFFFD;

// Byte length of the sequence that starts with `lead` (valid UTF-8 only).
inline std::size_t utf8_sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

// The code point at text[pos] (valid UTF-8 only); advances pos past it.
char32_t next_code_point(std::string_view text, std::size_t& pos);

// The code point that ends at text[end] (exclusive; valid UTF-8 only); moves end back.
char32_t previous_code_point(std::string_view text, std::size_t& end);

void append_utf8(std::string& out, char32_t code_point);

// Length of the valid sequence at bytes[pos], or 0 when none starts there.
std::size_t valid_sequence_length(std::string_view bytes, std::size_t pos);

bool is_valid_utf8(std::string_view bytes);

// Replaces every maximal invalid subsequence by U+FFFD.
std::string to_valid_utf8(std::string_view bytes);

std::size_t count_code_points(std::string_view text);

}  // namespace hive::tokenizer
