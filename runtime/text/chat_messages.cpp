#include "runtime/text/chat_messages.hpp"

#include "base/error.hpp"
#include "runtime/text/jinja/value_json.hpp"

namespace hive::chat_template {
namespace {

Dict prepare_message(const nlohmann::ordered_json& message) {
  Dict kept;
  for (const auto& [key, value] : message.items()) {
    if (!value.is_null()) kept.set(key, from_json(value));
  }
  const Value* reasoning = nullptr;
  for (const char* field : {"reasoning_content", "thinking", "reasoning"}) {
    if ((reasoning = kept.find(field)) != nullptr) break;
  }
  if (reasoning == nullptr) return kept;
  // {"thinking": reasoning, **message, "reasoning_content": reasoning}
  Dict aliased;
  aliased.set("thinking", *reasoning);
  for (const auto& [key, value] : kept.entries()) aliased.set(key, value);
  aliased.set("reasoning_content", *reasoning);
  return aliased;
}

}  // namespace

Value prepare_messages(const nlohmann::ordered_json& messages) {
  check(messages.is_array(), "chat messages must be a JSON array, got ", messages.type_name());
  check(!messages.empty(),
        "Cannot apply chat template to an empty conversation. Provide at least one message.");
  ValueList out;
  for (const auto& message : messages) {
    if (!message.is_object()) fail("Chat messages should be dicts, but got ", message.dump());
    out.push_back(Value::dict(prepare_message(message)));
  }
  return Value::list(std::move(out));
}

}  // namespace hive::chat_template
