#pragma once
// GPT-2's byte-level alphabet: each of the 256 byte values maps to a
// printable character (printable Latin-1 bytes to themselves, the others to
// U+0100 and up; the space becomes "Ġ"), so a byte-level BPE vocabulary is
// plain text.
#include <cstdint>
#include <string>
#include <string_view>

namespace hive::tokenizer {

// The UTF-8 of the character that stands for `byte`.
std::string_view byte_to_alphabet(uint8_t byte);

// Every byte of `bytes` replaced by its alphabet character.
std::string bytes_to_alphabet(std::string_view bytes);

// The decoder's inverse for one token: the bytes its characters stand for
// when all of them are alphabet characters, else the token's own bytes (an
// added token such as "<|im_end|>" written in plain text).
void append_alphabet_bytes(std::string_view token, std::string& out);

// The pattern GPT-2's ByteLevel pre-tokenizer splits on (use_regex: true).
inline constexpr std::string_view kGpt2SplitPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

}  // namespace hive::tokenizer
