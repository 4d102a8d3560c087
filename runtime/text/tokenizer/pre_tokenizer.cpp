#include "runtime/text/tokenizer/pre_tokenizer.hpp"

#include "base/error.hpp"
#include "runtime/text/tokenizer/byte_level.hpp"
#include "runtime/text/tokenizer/metaspace.hpp"
#include "runtime/text/tokenizer/regex.hpp"
#include "runtime/text/tokenizer/replace_pattern.hpp"
#include "runtime/text/tokenizer/split_behavior.hpp"
#include "runtime/text/tokenizer/unicode.hpp"

namespace hive::tokenizer {
namespace {

class Split final : public PreTokenizer {
 public:
  Split(Regex regex, SplitBehavior behavior, bool invert)
      : regex_(std::move(regex)), behavior_(behavior), invert_(invert) {}

  void pre_tokenize(std::vector<Piece>& pieces) const override {
    split_pieces(pieces, [&](Piece& piece, std::vector<Piece>& out) {
      std::vector<Span> spans = regex_spans(regex_, piece.text);
      if (invert_)
        for (Span& span : spans) span.is_match = !span.is_match;
      append_ranges(piece, apply_split_behavior(spans, behavior_), out);
    });
  }

 private:
  Regex regex_;
  SplitBehavior behavior_;
  bool invert_;
};

// Splits (optionally, on GPT-2's pattern) and rewrites every byte as its
// alphabet character, so the model sees text made of its vocabulary's characters.
class ByteLevel final : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex, const std::string& path)
      : add_prefix_space_(add_prefix_space),
        use_regex_(use_regex),
        regex_(kGpt2SplitPattern, path) {}

  void pre_tokenize(std::vector<Piece>& pieces) const override {
    split_pieces(pieces, [&](Piece& piece, std::vector<Piece>& out) {
      if (add_prefix_space_ && piece.text.front() != ' ')
        piece.text.insert(piece.text.begin(), ' ');
      if (!use_regex_) {
        out.push_back(std::move(piece));
        return;
      }
      append_ranges(piece,
                    apply_split_behavior(regex_spans(regex_, piece.text), SplitBehavior::Isolated),
                    out);
    });
    for (Piece& piece : pieces)
      if (!piece.token_id) piece.text = bytes_to_alphabet(piece.text);
  }

 private:
  bool add_prefix_space_;
  bool use_regex_;
  Regex regex_;
};

class Digits final : public PreTokenizer {
 public:
  explicit Digits(bool individual) : individual_(individual) {}

  void pre_tokenize(std::vector<Piece>& pieces) const override {
    const SplitBehavior behavior =
        individual_ ? SplitBehavior::Isolated : SplitBehavior::Contiguous;
    split_pieces(pieces, [&](Piece& piece, std::vector<Piece>& out) {
      append_ranges(piece, apply_split_behavior(char_spans(piece.text, is_numeric), behavior), out);
    });
  }

 private:
  bool individual_;
};

class MetaspacePreTokenizer final : public PreTokenizer {
 public:
  explicit MetaspacePreTokenizer(Metaspace metaspace) : metaspace_(std::move(metaspace)) {}

  void pre_tokenize(std::vector<Piece>& pieces) const override {
    split_pieces(pieces, [&](Piece& piece, std::vector<Piece>& out) {
      metaspace_.pre_tokenize(piece, out);
    });
  }

 private:
  Metaspace metaspace_;
};

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps)
      : steps_(std::move(steps)) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    for (const auto& step : steps_) step->pre_tokenize(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

std::unique_ptr<PreTokenizer> make_split(const Json& spec, const std::string& path) {
  const std::string pattern_path = child_path(path, "pattern");
  return std::make_unique<Split>(
      pattern_regex(required(spec, "pattern", path), pattern_path),
      parse_split_behavior(string_field(spec, "behavior", path), child_path(path, "behavior")),
      bool_field(spec, "invert", path, false));
}

std::unique_ptr<PreTokenizer> make_sequence(const Json& spec, const std::string& path) {
  const std::string list_path = child_path(path, "pretokenizers");
  const Json& list = required(spec, "pretokenizers", path);
  expect_array(list, list_path);
  std::vector<std::unique_ptr<PreTokenizer>> steps;
  for (std::size_t i = 0; i < list.size(); ++i) {
    auto step = make_pre_tokenizer(list[i], index_path(list_path, i));
    if (step) steps.push_back(std::move(step));
  }
  return std::make_unique<SequencePreTokenizer>(std::move(steps));
}

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const Json& spec, const std::string& path) {
  if (spec.is_null()) return nullptr;
  const std::string type = component_type(spec, path);
  if (type == "Split") return make_split(spec, path);
  if (type == "ByteLevel")
    return std::make_unique<ByteLevel>(bool_field(spec, "add_prefix_space", path, true),
                                       bool_field(spec, "use_regex", path, true), path);
  if (type == "Metaspace")
    return std::make_unique<MetaspacePreTokenizer>(Metaspace::from_json(spec, path));
  if (type == "Digits")
    return std::make_unique<Digits>(bool_field(spec, "individual_digits", path, false));
  if (type == "Sequence") return make_sequence(spec, path);
  unsupported_component("pre-tokenizer", type, path,
                        "Split, ByteLevel, Metaspace, Digits, Sequence");
}

}  // namespace hive::tokenizer
