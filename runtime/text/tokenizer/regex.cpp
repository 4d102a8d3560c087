#define PCRE2_CODE_UNIT_WIDTH 8
#include "runtime/text/tokenizer/regex.hpp"

#include <pcre2.h>

#include "base/error.hpp"

namespace hive::tokenizer {

struct Regex::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

namespace {

std::string pcre2_message(int error_code) {
  PCRE2_UCHAR buffer[256];
  const int length = pcre2_get_error_message(error_code, buffer, sizeof(buffer));
  return length < 0 ? "unknown PCRE2 error" : std::string(reinterpret_cast<char*>(buffer));
}

// Long inputs with backtracking patterns can need more than PCRE2's default
// 32 KiB JIT stack; one per thread, because a JIT stack is not shareable.
struct MatchResources {
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  MatchResources() { pcre2_jit_stack_assign(context, nullptr, stack); }
  ~MatchResources() {
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(stack);
  }
  MatchResources(const MatchResources&) = delete;
  MatchResources& operator=(const MatchResources&) = delete;
};

pcre2_match_context* thread_match_context() {
  thread_local MatchResources resources;
  return resources.context;
}

std::size_t next_char_end(std::string_view text, std::size_t pos) {
  ++pos;
  while (pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) ++pos;
  return pos;
}

}  // namespace

Regex::Regex(std::string_view pattern, const std::string& where) : pattern_(pattern) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
  check(code != nullptr, where, ": invalid regex \"", pattern_, "\" at offset ", error_offset, ": ",
        code ? std::string() : pcre2_message(error_code));
  auto owned = std::make_shared<Code>();
  owned->code = code;
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // without JIT support, matching still works
  code_ = std::move(owned);
}

std::vector<MatchRange> Regex::find_all(std::string_view text) const {
  std::vector<MatchRange> matches;
  const std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> data(
      pcre2_match_data_create_from_pattern(code_->code, nullptr), &pcre2_match_data_free);
  pcre2_match_context* context = thread_match_context();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t search_from = 0;
  bool have_previous = false;
  std::size_t previous_end = 0;
  while (search_from <= text.size()) {
    const int rc = pcre2_match(code_->code, subject, text.size(), search_from, PCRE2_NO_UTF_CHECK,
                               data.get(), context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    check(rc >= 0, "regex \"", pattern_, "\": matching failed: ", pcre2_message(rc));
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data.get());
    const MatchRange match{ovector[0], ovector[1]};
    if (match.start == match.end && have_previous && previous_end == match.end) {
      if (search_from >= text.size()) break;
      search_from = next_char_end(text, search_from);
      continue;
    }
    matches.push_back(match);
    have_previous = true;
    previous_end = match.end;
    search_from = match.end;
  }
  return matches;
}

std::string Regex::escape(std::string_view literal) {
  // Escaping a non-alphanumeric character always means "this character" in PCRE2.
  std::string out;
  for (const char c : literal) {
    if (std::string_view("\\^$.|?*+()[]{}-#&~/").find(c) != std::string_view::npos)
      out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

}  // namespace hive::tokenizer
