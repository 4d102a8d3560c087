// A chat template's source of arbitrary bytes: parsed, then rendered for a
// short conversation as the input processor renders chat prompts.
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "runtime/text/chat_template.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const nlohmann::ordered_json messages = nlohmann::ordered_json::parse(R"([
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hello"},
    {"role": "assistant", "content": "Hi."},
    {"role": "user", "content": [{"type": "text", "text": "Again"}]}])");
  static const nlohmann::ordered_json special = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
  try {
    const auto chat = hive::ChatTemplate::from_string(hive::fuzz::text(data, size), special);
    volatile size_t length = chat.render(messages, true).size();
    (void)length;
  } catch (const hive::Error&) {
    // TemplateError (line and column) and the template's own raise_exception.
  }
  return 0;
}
