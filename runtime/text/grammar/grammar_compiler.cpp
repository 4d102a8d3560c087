#include "runtime/text/grammar/grammar_compiler.hpp"

#include <regex>
#include <thread>

#include <xgrammar/compiler.h>

#include "base/json_reader.hpp"
#include "runtime/text/grammar/compiled_grammar_impl.hpp"
#include "runtime/text/grammar/limits.hpp"
#include "runtime/text/grammar/repetition_check.hpp"
#include "runtime/text/grammar/schema_check.hpp"

namespace hive {
namespace {

// Grammars kept by the compiler's cache; past this one entry makes room.
constexpr std::size_t kMaxCachedGrammars = 256;
// "{}" with any members: json_object, with the same bounded whitespace.
constexpr const char* kAnyObjectSchema = R"({"type": "object", "additionalProperties": true})";

// Byte strings per token id, what the matcher walks: a special token that
// does not stop generation is empty, which xgrammar never allows.
std::vector<std::string> vocabulary_bytes(const Tokenizer& tokenizer,
                                          const std::vector<int32_t>& stop_token_ids) {
  std::vector<std::string> vocabulary(tokenizer.vocab_size());
  for (int32_t id = 0; id < static_cast<int32_t>(vocabulary.size()); ++id) {
    const bool stops =
        std::find(stop_token_ids.begin(), stop_token_ids.end(), id) != stop_token_ids.end();
    if (stops || !tokenizer.is_special(id)) vocabulary[id] = tokenizer.token_bytes(id);
  }
  return vocabulary;
}

// "line 3, column 7" (or "at byte 12") when the library's message has it.
std::string position_in(const std::string& message) {
  static const std::regex position(R"((line \d+,? column \d+)|(position \d+)|(at byte \d+))",
                                   std::regex::icase);
  std::smatch match;
  if (std::regex_search(message, match, position)) return match.str();
  return {};
}

std::string ebnf_literal(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20 || byte == 0x7f) {
      out += str_cat("\\x", "0123456789abcdef"[byte >> 4], "0123456789abcdef"[byte & 15]);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string choice_grammar(const std::vector<std::string>& choices) {
  if (choices.empty()) throw ConstraintError(ConstraintKind::choice, "", "the list is empty");
  if (choices.size() > grammar_limits::kMaxChoices)
    throw ConstraintError(
        ConstraintKind::choice, "",
        str_cat("more than ", grammar_limits::kMaxChoices, " choices (got ", choices.size(), ")"));
  std::string grammar = "root ::= ";
  for (std::size_t i = 0; i < choices.size(); ++i)
    grammar += (i ? " | " : "") + ebnf_literal(choices[i]);
  return grammar;
}

std::string cache_text(const Constraint& constraint) {
  if (constraint.kind != ConstraintKind::choice) return constraint.text;
  std::string key;
  for (const std::string& choice : constraint.choices) key += str_cat(choice.size(), ':', choice);
  return key;
}

}  // namespace

struct GrammarCompiler::Impl {
  Impl(const Tokenizer& tokenizer, std::vector<int32_t> stops, int32_t size)
      : stop_token_ids(std::move(stops)),
        vocab_size(std::max<int32_t>(size, static_cast<int32_t>(tokenizer.vocab_size()))),
        info(vocabulary_bytes(tokenizer, stop_token_ids), xgrammar::VocabType::RAW, vocab_size,
             stop_token_ids),
        // One thread (compiling shares the machine with the engine's steps);
        // Hive keeps its own cache, keyed by the constraint.
        compiler(info, /*max_threads=*/1, /*cache_enabled=*/false) {}
  std::vector<int32_t> stop_token_ids;
  int32_t vocab_size;
  xgrammar::TokenizerInfo info;
  xgrammar::GrammarCompiler compiler;
};

int32_t CompiledGrammar::vocab_size() const {
  return impl_->vocab_size;
}
std::size_t CompiledGrammar::memory_bytes() const {
  return impl_->compiled.MemorySizeBytes();
}

GrammarCompiler::GrammarCompiler(const Tokenizer& tokenizer, std::vector<int32_t> stop_token_ids,
                                 int32_t vocab_size) {
  if (stop_token_ids.empty() && tokenizer.eos_token_id())
    stop_token_ids.push_back(*tokenizer.eos_token_id());
  check(!stop_token_ids.empty(), "grammar: the tokenizer has no EOS token; name the stop tokens");
  impl_ = std::make_unique<Impl>(tokenizer, std::move(stop_token_ids), vocab_size);
}

GrammarCompiler::~GrammarCompiler() = default;
GrammarCompiler::GrammarCompiler(GrammarCompiler&&) noexcept = default;
GrammarCompiler& GrammarCompiler::operator=(GrammarCompiler&&) noexcept = default;

int32_t GrammarCompiler::vocab_size() const {
  return impl_->vocab_size;
}
const std::vector<int32_t>& GrammarCompiler::stop_token_ids() const {
  return impl_->stop_token_ids;
}

CompiledGrammar GrammarCompiler::compile(const Constraint& constraint) {
  auto key = std::make_pair(constraint.kind, cache_text(constraint));
  if (const auto hit = cache_.find(key); hit != cache_.end()) return hit->second;
  CompiledGrammar compiled = compile_uncached(constraint);
  if (cache_.size() >= kMaxCachedGrammars) cache_.erase(cache_.begin());
  cache_.emplace(std::move(key), compiled);
  return compiled;
}

CompiledGrammar GrammarCompiler::compile_uncached(const Constraint& constraint) {
  const ConstraintKind kind = constraint.kind;
  std::size_t bytes = constraint.text.size();
  for (const std::string& choice : constraint.choices) bytes += choice.size();
  if (bytes > grammar_limits::kMaxConstraintBytes)
    throw ConstraintError(
        kind, "",
        str_cat("longer than ", grammar_limits::kMaxConstraintBytes, " bytes (got ", bytes, ")"));
  std::string schema = kAnyObjectSchema;
  if (kind == ConstraintKind::json_schema) {
    nlohmann::json parsed;
    try {
      parsed = parse_json(constraint.text);
    } catch (const JsonError& e) {
      throw ConstraintError(kind, position_in(e.what()), e.what());
    }
    check_json_schema(parsed);
    schema = constraint.text;
  } else if (kind == ConstraintKind::regex || kind == ConstraintKind::grammar) {
    check_repetitions(constraint.text, kind);
  }
  xgrammar::GrammarCompiler& compiler = impl_->compiler;
  try {
    auto result = [&] {
      switch (kind) {
        case ConstraintKind::json_schema:
        case ConstraintKind::json_object:
          return compiler.CompileJSONSchema(schema, /*any_whitespace=*/true, std::nullopt,
                                            std::nullopt, /*strict_mode=*/false,
                                            grammar_limits::kMaxJsonWhitespace);
        case ConstraintKind::regex:
          return compiler.CompileRegex(constraint.text);
        case ConstraintKind::choice:
          return compiler.CompileGrammar(choice_grammar(constraint.choices), "root");
        case ConstraintKind::grammar:
          return compiler.CompileGrammar(constraint.text, "root");
      }
      fail("grammar: unknown constraint kind");
    }();
    return CompiledGrammar(std::make_shared<const CompiledGrammar::Impl>(
        CompiledGrammar::Impl{std::move(result), impl_->stop_token_ids, impl_->vocab_size}));
  } catch (const ConstraintError&) {
    throw;
  } catch (const std::exception& e) {
    throw ConstraintError(kind, position_in(e.what()), e.what());
  }
}

const char* constraint_kind_name(ConstraintKind kind) {
  switch (kind) {
    case ConstraintKind::json_schema:
      return "json_schema";
    case ConstraintKind::json_object:
      return "json_object";
    case ConstraintKind::regex:
      return "regex";
    case ConstraintKind::choice:
      return "choice";
    case ConstraintKind::grammar:
      return "grammar";
  }
  return "constraint";
}

ConstraintError::ConstraintError(ConstraintKind constraint_kind, std::string position,
                                 const std::string& detail)
    : Error(str_cat(constraint_kind_name(constraint_kind), position.empty() ? "" : " at ", position,
                    ": ", detail)),
      kind(constraint_kind),
      where(std::move(position)) {}

}  // namespace hive
