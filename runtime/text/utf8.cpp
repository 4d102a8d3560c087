#include "runtime/text/utf8.hpp"

namespace hive::utf8 {
namespace {

// decode() turns a malformed byte b into kEscapedByte + b (U+DC80..U+DCFF).
constexpr char32_t kEscapedByte = 0xDC00;

// How many bytes of a well-formed sequence start at bytes[pos] (Unicode Table
// 3-7), counting a truncated but so-far-valid prefix as `partial`.
struct SequenceCheck {
  std::size_t valid = 0;    // length when complete, else 0
  std::size_t partial = 0;  // bytes that form a valid prefix (>= 1): the maximal subpart
};

SequenceCheck check_sequence(std::string_view bytes, std::size_t pos) {
  const auto lead = static_cast<unsigned char>(bytes[pos]);
  if (lead < 0x80) return {1, 1};
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return {0, 1};
  }
  std::size_t i = 1;
  for (; i < length && pos + i < bytes.size(); ++i) {
    const auto byte = static_cast<unsigned char>(bytes[pos + i]);
    const unsigned char lo = i == 1 ? low : 0x80, hi = i == 1 ? high : 0xBF;
    if (byte < lo || byte > hi) return {0, i};
  }
  return {i == length ? length : 0, i};
}

}  // namespace

char32_t next_code_point(std::string_view text, std::size_t& pos) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  const std::size_t length = sequence_length(lead);
  char32_t code_point = length == 1 ? lead : lead & (0x7F >> length);
  for (std::size_t i = 1; i < length; ++i)
    code_point = (code_point << 6) | (static_cast<unsigned char>(text[pos + i]) & 0x3F);
  pos += length;
  return code_point;
}

char32_t previous_code_point(std::string_view text, std::size_t& end) {
  std::size_t start = end - 1;
  while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
  std::size_t pos = start;
  const char32_t code_point = next_code_point(text, pos);
  end = start;
  return code_point;
}

void append(std::string& out, char32_t code_point) {
  if (code_point >= kEscapedByte + 0x80 && code_point <= kEscapedByte + 0xFF) {
    out.push_back(static_cast<char>(code_point - kEscapedByte));
  } else if (code_point < 0x80) {
    out.push_back(static_cast<char>(code_point));
  } else if (code_point < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (code_point >> 6)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else if (code_point < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (code_point >> 12)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (code_point >> 18)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  }
}


std::size_t valid_sequence_length(std::string_view bytes, std::size_t pos) {
  return check_sequence(bytes, pos).valid;
}

std::optional<std::size_t> first_invalid_byte(std::string_view bytes) {
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    if (static_cast<unsigned char>(bytes[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const std::size_t length = check_sequence(bytes, pos).valid;
    if (length == 0) return pos;
    pos += length;
  }
  return std::nullopt;
}

bool is_valid(std::string_view bytes) {
  return !first_invalid_byte(bytes);
}

std::string to_valid(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() + 8);
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    const SequenceCheck check = check_sequence(bytes, pos);
    if (check.valid > 0) {
      out.append(bytes.substr(pos, check.valid));
      pos += check.valid;
    } else {
      append(out, kReplacementChar);
      pos += check.partial;
    }
  }
  return out;
}

char32_t decode(std::string_view s, std::size_t& pos) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = byte(pos);
  int extra = 0;
  char32_t code_point = lead;
  if ((lead & 0xE0) == 0xC0) {
    extra = 1, code_point = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    extra = 2, code_point = lead & 0x0F;
  } else if ((lead & 0xF8) == 0xF0) {
    extra = 3, code_point = lead & 0x07;
  }
  const char32_t escaped = kEscapedByte + lead;
  if (lead >= 0x80 && (extra == 0 || pos + extra >= s.size())) {
    ++pos;
    return escaped;
  }
  for (int i = 1; i <= extra; ++i) {
    if ((byte(pos + i) & 0xC0) != 0x80) {
      ++pos;
      return escaped;
    }
    code_point = (code_point << 6) | (byte(pos + i) & 0x3F);
  }
  pos += 1 + extra;
  return code_point;
}

std::u32string to_u32(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) out += decode(s, pos);
  return out;
}

std::string from_u32(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) append(out, c);
  return out;
}

std::size_t length(std::string_view s) {
  std::size_t count = 0;
  for (std::size_t pos = 0; pos < s.size(); ++count) decode(s, pos);
  return count;
}

}  // namespace hive::utf8
