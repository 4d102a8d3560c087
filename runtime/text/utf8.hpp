#pragma once
// The one UTF-8 codec of the text room, for the tokenizer and the chat
// templates. Two views of bytes:
//
//   valid text      next_code_point / previous_code_point assume well-formed
//                   UTF-8 (the tokenizer repairs its input with to_valid
//                   first: each maximal invalid subsequence becomes U+FFFD,
//                   as Rust's String::from_utf8_lossy and Python's
//                   bytes.decode("utf-8", "replace") do).
//   any bytes       decode never fails: a malformed byte decodes to a lone
//                   surrogate U+DC80..U+DCFF that append turns back into the
//                   same byte (Python's "surrogateescape"), so templates can
//                   count, index and slice by code point as Python does and
//                   still round-trip every byte.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace hive::utf8 {

inline constexpr char32_t kReplacementChar = 0xFFFD;

// Byte length of the sequence that starts with `lead` (valid UTF-8 only).
inline std::size_t sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

// The code point at text[pos] (valid UTF-8 only); advances pos past it.
char32_t next_code_point(std::string_view text, std::size_t& pos);

// The code point that ends at text[end] (exclusive; valid UTF-8 only); moves end back.
char32_t previous_code_point(std::string_view text, std::size_t& end);

// The code point at s[pos], any bytes; advances pos past it.
char32_t decode(std::string_view s, std::size_t& pos);

// Appends a code point's bytes; an escaped byte from decode() appends that byte.
void append(std::string& out, char32_t code_point);

// Length of the valid sequence at bytes[pos], or 0 when none starts there.
std::size_t valid_sequence_length(std::string_view bytes, std::size_t pos);

bool is_valid(std::string_view bytes);

// The offset of the first byte that starts no valid sequence, if any.
std::optional<std::size_t> first_invalid_byte(std::string_view bytes);

// Replaces every maximal invalid subsequence by U+FFFD.
std::string to_valid(std::string_view bytes);

// Code points, as decode() counts them.
std::size_t length(std::string_view s);

std::u32string to_u32(std::string_view s);
std::string from_u32(std::u32string_view s);

}  // namespace hive::utf8
