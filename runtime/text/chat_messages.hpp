#pragma once
// The conversation as transformers hands it to a template: keys whose value
// is null are dropped from each message (many templates print "None"
// otherwise), and a message's reasoning, under whichever of
// reasoning_content / thinking / reasoning it came, is copied to
// `reasoning_content` and `thinking` (transformers' _alias_reasoning_fields,
// including its key order).
#include <nlohmann/json.hpp>

#include "runtime/text/jinja/value.hpp"

namespace hive::chat_template {

Value prepare_messages(const nlohmann::ordered_json& messages);

}  // namespace hive::chat_template
