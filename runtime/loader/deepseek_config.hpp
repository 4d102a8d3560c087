#pragma once
// The DeepSeek-V2/V3 keys of config.json: MLA sizes, routed and shared
// experts, grouped routing (V3's noaux_tc, V2's greedy and
// group_limited_greedy), dense first layers.
#include <string>

#include "runtime/loader/model_config.hpp"

namespace hive {

namespace config_reader {
class Reader;
}

// Fills c.mla, the experts and c.grouped_routing; errors name `source`.
void parse_deepseek(const config_reader::Reader& config, const std::string& source, ModelConfig& c);

}  // namespace hive
