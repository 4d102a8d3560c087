#include "tools/cli/text_prompt.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "runtime/engine/input_processor.hpp"
#include "runtime/engine/model_text.hpp"

#ifndef HIVE_SOURCE_DIR
#error "HIVE_SOURCE_DIR must name the source tree (a compile definition)"
#endif

namespace hive::cli {

namespace fs = std::filesystem;

namespace {

// An installed hive keeps the bundled models in <prefix>/share/hive/models;
// a build tree's hive uses the source tree's.
fs::path bundled_models_dir() {
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);
  if (!error) {
    const fs::path installed = exe.parent_path().parent_path() / "share" / "hive" / "models";
    if (fs::is_directory(installed, error)) return installed;
  }
  return fs::path(HIVE_SOURCE_DIR) / "models";
}

}  // namespace

fs::path default_model_dir() {
  const char* env = std::getenv("HIVE_MODEL");
  const bool from_env = env && *env;
  const fs::path dir = from_env ? fs::path(env) : bundled_models_dir() / "hive-moe-target";
  check(fs::is_regular_file(dir / "config.json"), "the default model ",
        from_env ? "($HIVE_MODEL) " : "", dir.string(),
        " has no config.json; pass --model DIR or set HIVE_MODEL");
  return dir;
}

std::string model_dir_or_default(const Args& args) {
  if (!args.has("--model")) return default_model_dir().string();
  const std::string dir = args.get("--model", "");
  check(!dir.empty(), "--model is empty (leave it out for the bundled model)");
  // A .gguf that is not a file would otherwise be read as a directory.
  check(fs::path(dir).extension() != ".gguf" || fs::is_regular_file(dir), "--model ", dir,
        ": no such GGUF file");
  return dir;
}

std::vector<int32_t> encode_prompt(const Tokenizer& tokenizer, const fs::path& model_dir,
                                   const std::string& text, bool chat) {
  if (!chat) return hive::encode_prompt(text, tokenizer, nullptr);
  check(has_chat_template(model_dir), "--chat needs a chat template, but ",
        chat_template_source(model_dir), " does not exist");
  const ChatTemplate chat_template = load_chat_template(model_dir);
  return hive::encode_prompt(std::vector<ChatMessage>{{"user", text}}, tokenizer, &chat_template);
}

TextStream::TextStream(const Tokenizer& tokenizer, std::span<const int32_t> prompt, std::FILE* out,
                       TextParams params)
    : sample_(tokenizer, prompt, std::move(params)), out_(out) {}

bool TextStream::write(int32_t id) {
  emit(sample_.add(id));
  return !sample_.stopped_by_string();
}

void TextStream::finish() {
  emit(sample_.finish() + "\n");
}

void TextStream::emit(const std::string& piece) {
  if (piece.empty()) return;
  text_ += piece;
  if (!out_) return;
  std::fwrite(piece.data(), 1, piece.size(), out_);
  // A full disk stops the generation here, with the reason.
  check(std::fflush(out_) == 0 && !std::ferror(out_),
        "cannot write the output: ", std::strerror(errno));
}

}  // namespace hive::cli
