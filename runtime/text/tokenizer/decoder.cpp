#include "runtime/text/tokenizer/decoder.hpp"

#include "base/error.hpp"
#include "runtime/text/tokenizer/byte_level.hpp"
#include "runtime/text/tokenizer/metaspace.hpp"
#include "runtime/text/tokenizer/replace_pattern.hpp"
#include "runtime/text/utf8.hpp"

namespace hive::tokenizer {
namespace {

// All tokens' bytes joined, invalid UTF-8 replaced: one string.
class ByteLevelDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& token : tokens) append_alphabet_bytes(token, bytes);
    tokens.assign(1, utf8::to_valid(bytes));
  }
  void decode_chain_bytes(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& token : tokens) append_alphabet_bytes(token, bytes);
    tokens.assign(1, std::move(bytes));
  }
};

class MetaspaceDecoder final : public Decoder {
 public:
  explicit MetaspaceDecoder(Metaspace metaspace) : metaspace_(std::move(metaspace)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    metaspace_.decode_chain(tokens);
  }

 private:
  Metaspace metaspace_;
};

std::optional<unsigned char> byte_token_value(const std::string& token) {
  if (token.size() != 6 || !token.starts_with("<0x") || token.back() != '>') return std::nullopt;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  const int high = hex(token[3]), low = hex(token[4]);
  if (high < 0 || low < 0) return std::nullopt;
  return static_cast<unsigned char>(high * 16 + low);
}

// Runs of <0xXX> tokens become their bytes when those are valid UTF-8, else
// one U+FFFD per byte token.
class ByteFallbackDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override { run(tokens, true); }
  void decode_chain_bytes(std::vector<std::string>& tokens) const override { run(tokens, false); }

 private:
  static void run(std::vector<std::string>& tokens, bool repair) {
    std::vector<std::string> out;
    std::string pending;
    auto flush = [&] {
      if (pending.empty()) return;
      if (!repair || utf8::is_valid(pending)) {
        out.push_back(pending);
      } else {
        for (std::size_t i = 0; i < pending.size(); ++i) out.emplace_back("\xEF\xBF\xBD");
      }
      pending.clear();
    };
    for (std::string& token : tokens) {
      if (const auto byte = byte_token_value(token)) {
        pending.push_back(static_cast<char>(*byte));
        continue;
      }
      flush();
      out.push_back(std::move(token));
    }
    flush();
    tokens = std::move(out);
  }
};

class FuseDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string joined;
    for (const std::string& token : tokens) joined += token;
    tokens.assign(1, std::move(joined));
  }
};

// Removes up to `start` leading and `stop` trailing `content` characters from each token.
class StripDecoder final : public Decoder {
 public:
  StripDecoder(char32_t content, std::size_t start, std::size_t stop)
      : content_(content), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& token : tokens) {
      std::size_t begin = 0, end = token.size();
      for (std::size_t i = 0; i < start_ && begin < end; ++i) {
        std::size_t next = begin;
        if (utf8::next_code_point(token, next) != content_) break;
        begin = next;
      }
      for (std::size_t i = 0; i < stop_ && end > begin; ++i) {
        std::size_t previous = end;
        if (utf8::previous_code_point(token, previous) != content_) break;
        end = previous;
      }
      token = token.substr(begin, end - begin);
    }
  }

 private:
  char32_t content_;
  std::size_t start_, stop_;
};

class ReplaceDecoder final : public Decoder {
 public:
  explicit ReplaceDecoder(ReplacePattern pattern) : pattern_(std::move(pattern)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& token : tokens)
      if (!token.empty()) token = pattern_.apply(token).text;
  }

 private:
  ReplacePattern pattern_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps)
      : steps_(std::move(steps)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& step : steps_) step->decode_chain(tokens);
  }
  void decode_chain_bytes(std::vector<std::string>& tokens) const override {
    for (const auto& step : steps_) step->decode_chain_bytes(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

std::unique_ptr<Decoder> make_sequence(const Json& spec, const std::string& path) {
  const std::string list_path = child_path(path, "decoders");
  const Json& list = required(spec, "decoders", path);
  expect_array(list, list_path);
  std::vector<std::unique_ptr<Decoder>> steps;
  for (std::size_t i = 0; i < list.size(); ++i) {
    auto step = make_decoder(list[i], index_path(list_path, i));
    if (step) steps.push_back(std::move(step));
  }
  return std::make_unique<SequenceDecoder>(std::move(steps));
}

std::size_t count_field(const Json& spec, std::string_view key, const std::string& path) {
  const int64_t value = int_field(spec, key, path);
  if (!(value >= 0)) fail(child_path(path, key), ": expected a count >= 0 (got ", value, ")");
  return static_cast<std::size_t>(value);
}

}  // namespace

std::unique_ptr<Decoder> make_decoder(const Json& spec, const std::string& path) {
  if (spec.is_null()) return nullptr;
  const std::string type = component_type(spec, path);
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "Metaspace")
    return std::make_unique<MetaspaceDecoder>(Metaspace::from_json(spec, path));
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip")
    return std::make_unique<StripDecoder>(char_field(spec, "content", path),
                                          count_field(spec, "start", path),
                                          count_field(spec, "stop", path));
  if (type == "Replace")
    return std::make_unique<ReplaceDecoder>(ReplacePattern::from_json(spec, path));
  if (type == "Sequence") return make_sequence(spec, path);
  unsupported_component("decoder", type, path,
                        "ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace, Sequence");
}

}  // namespace hive::tokenizer
