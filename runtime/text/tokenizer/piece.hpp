#pragma once
// A piece of the text on its way to the model. Encoding starts with one
// piece, the whole input; added-token matching, normalizers and
// pre-tokenizers cut and rewrite pieces, and the model turns each remaining
// piece into ids. A piece that matched an added token carries its id and is
// left alone by every later stage.
//
//   "Hi <|im_end|> there"  --added tokens-->  ["Hi ", <|im_end|>=151645, " there"]
//                          --pre-tokenizer--> ["Hi", " ", <151645>, " there"]
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hive::tokenizer {

struct Piece {
  std::string text;
  std::optional<int32_t> token_id;  // set when the piece is a matched added token
  // The piece begins at the start of the input (Hugging Face: its original
  // offset is 0). Only Metaspace's prepend_scheme "first" reads it. Hugging
  // Face derives it from per-byte alignments; here cuts keep it for the
  // leading part only, and the normalizers that can drop or merge leading
  // characters (Strip, StripAccents, Replace) clear it. The two agree on every
  // tested pipeline; they could differ for a Replace whose leading match
  // covers characters another normalizer inserted.
  bool at_input_start = false;
};

// One piece of text cut from a parent piece: [start, end) in the parent.
struct PieceRange {
  std::size_t start = 0;
  std::size_t end = 0;
};

// Appends the non-empty sub-ranges of `parent` to out, as pieces.
inline void append_ranges(const Piece& parent, const std::vector<PieceRange>& ranges,
                          std::vector<Piece>& out) {
  for (const PieceRange& range : ranges) {
    if (range.end <= range.start) continue;
    out.push_back(Piece{parent.text.substr(range.start, range.end - range.start), std::nullopt,
                        parent.at_input_start && range.start == 0});
  }
}

// Replaces each piece without a token by what split(piece, out) appends;
// empty pieces are dropped (as Hugging Face's PreTokenizedString::split does).
template <class SplitFn>
void split_pieces(std::vector<Piece>& pieces, SplitFn&& split) {
  std::vector<Piece> result;
  result.reserve(pieces.size());
  for (Piece& piece : pieces) {
    if (piece.token_id) {
      result.push_back(std::move(piece));
      continue;
    }
    const std::size_t first = result.size();
    split(piece, result);
    std::size_t kept = first;
    for (std::size_t i = first; i < result.size(); ++i) {
      if (result[i].text.empty() && !result[i].token_id) continue;
      if (kept != i) result[kept] = std::move(result[i]);
      ++kept;
    }
    result.resize(kept);
  }
  pieces = std::move(result);
}

}  // namespace hive::tokenizer
