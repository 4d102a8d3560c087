#include "runtime/text/tokenizer/byte_level.hpp"

#include <array>

#include "runtime/text/utf8.hpp"

namespace hive::tokenizer {
namespace {

struct Alphabet {
  std::array<std::string, 256> byte_to_text;
  std::array<int16_t, 512> char_to_byte;  // alphabet characters are all below U+0200

  Alphabet() {
    char_to_byte.fill(-1);
    int next_extra = 0;
    for (int byte = 0; byte < 256; ++byte) {
      const bool printable = (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) ||
                             (byte >= 0xAE && byte <= 0xFF);
      const char32_t c = printable ? static_cast<char32_t>(byte) : 256 + next_extra++;
      utf8::append(byte_to_text[byte], c);
      char_to_byte[c] = static_cast<int16_t>(byte);
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet table;
  return table;
}

}  // namespace

std::string_view byte_to_alphabet(uint8_t byte) {
  return alphabet().byte_to_text[byte];
}

std::string bytes_to_alphabet(std::string_view bytes) {
  const Alphabet& table = alphabet();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) out.append(table.byte_to_text[static_cast<unsigned char>(c)]);
  return out;
}

void append_alphabet_bytes(std::string_view token, std::string& out) {
  const Alphabet& table = alphabet();
  const std::size_t mark = out.size();
  std::size_t pos = 0;
  while (pos < token.size()) {
    const char32_t c = utf8::next_code_point(token, pos);
    if (c >= table.char_to_byte.size() || table.char_to_byte[c] < 0) {
      out.resize(mark);
      out.append(token);
      return;
    }
    out.push_back(static_cast<char>(table.char_to_byte[c]));
  }
}

}  // namespace hive::tokenizer
