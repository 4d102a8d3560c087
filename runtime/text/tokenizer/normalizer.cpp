#include "runtime/text/tokenizer/normalizer.hpp"

#include <vector>

#include "base/error.hpp"
#include "runtime/text/tokenizer/regex.hpp"
#include "runtime/text/tokenizer/replace_pattern.hpp"
#include "runtime/text/tokenizer/unicode.hpp"
#include "runtime/text/utf8.hpp"

namespace hive::tokenizer {
namespace {

class UnicodeNormalizer final : public Normalizer {
 public:
  explicit UnicodeNormalizer(NormalForm form) : form_(form) {}
  void normalize(Piece& piece) const override {
    piece.text = tokenizer::normalize(piece.text, form_);
  }

 private:
  NormalForm form_;
};

class Lowercase final : public Normalizer {
 public:
  void normalize(Piece& piece) const override { piece.text = to_lowercase(piece.text); }
};

// Prepended characters take the alignment of the first character, so the
// piece still starts where it started.
class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(Piece& piece) const override {
    if (!piece.text.empty()) piece.text.insert(0, prefix_);
  }

 private:
  std::string prefix_;
};

class Replace final : public Normalizer {
 public:
  explicit Replace(ReplacePattern pattern) : pattern_(std::move(pattern)) {}
  void normalize(Piece& piece) const override {
    ReplaceResult result = pattern_.apply(piece.text);
    // Hugging Face aligns replacement text with the last replaced character:
    // replacing more than one leading character, or deleting the first one,
    // moves the piece's start off the input's start.
    if (result.first_match_at_start && result.first_match_shifts_start)
      piece.at_input_start = false;
    piece.text = std::move(result.text);
  }

 private:
  ReplacePattern pattern_;
};

class Strip final : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  void normalize(Piece& piece) const override {
    const std::string& text = piece.text;
    std::size_t start = 0, end = text.size();
    if (left_) {
      std::size_t pos = 0;
      while (pos < end) {
        const std::size_t before = pos;
        if (!is_whitespace(utf8::next_code_point(text, pos))) {
          pos = before;
          break;
        }
      }
      start = pos;
      if (start > 0) piece.at_input_start = false;
    }
    if (right_) {
      std::size_t pos = end;
      while (pos > start) {
        std::size_t before = pos;
        if (!is_whitespace(utf8::previous_code_point(text, before))) break;
        pos = before;
      }
      end = pos;
    }
    piece.text = text.substr(start, end - start);
  }

 private:
  bool left_, right_;
};

class StripAccents final : public Normalizer {
 public:
  void normalize(Piece& piece) const override {
    std::string out;
    std::size_t pos = 0;
    while (pos < piece.text.size()) {
      const std::size_t start = pos;
      if (!is_combining_mark(utf8::next_code_point(piece.text, pos)))
        out.append(piece.text, start, pos - start);
      else if (start == 0)
        piece.at_input_start = false;
    }
    piece.text = std::move(out);
  }
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps)
      : steps_(std::move(steps)) {}
  void normalize(Piece& piece) const override {
    for (const auto& step : steps_) step->normalize(piece);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

std::unique_ptr<Normalizer> make_sequence(const Json& spec, const std::string& path) {
  const std::string list_path = child_path(path, "normalizers");
  const Json& list = required(spec, "normalizers", path);
  expect_array(list, list_path);
  std::vector<std::unique_ptr<Normalizer>> steps;
  for (std::size_t i = 0; i < list.size(); ++i) {
    auto step = make_normalizer(list[i], index_path(list_path, i));
    if (step) steps.push_back(std::move(step));
  }
  return std::make_unique<SequenceNormalizer>(std::move(steps));
}

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const Json& spec, const std::string& path) {
  if (spec.is_null()) return nullptr;
  const std::string type = component_type(spec, path);
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(NormalForm::NFC);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>(NormalForm::NFD);
  if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(NormalForm::NFKC);
  if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(NormalForm::NFKD);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "Prepend") return std::make_unique<Prepend>(string_field(spec, "prepend", path));
  if (type == "Replace") return std::make_unique<Replace>(ReplacePattern::from_json(spec, path));
  if (type == "Strip")
    return std::make_unique<Strip>(bool_field(spec, "strip_left", path, true),
                                   bool_field(spec, "strip_right", path, true));
  if (type == "StripAccents") return std::make_unique<StripAccents>();
  if (type == "Sequence") return make_sequence(spec, path);
  unsupported_component("normalizer", type, path,
                        "NFC, NFD, NFKC, NFKD, Lowercase, Prepend, Replace, Strip, StripAccents, "
                        "Sequence");
}

}  // namespace hive::tokenizer
