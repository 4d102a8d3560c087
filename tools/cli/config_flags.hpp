#pragma once
// The command-line flags that set keys of the config tree (HiveConfig), for
// the commands that start the actor runtime (run, serve). A flag's value is
// read as the launch file's key would be, and recorded as its source; flags
// are applied after the launch file, so they override it.
#include <set>
#include <string>

#include "actors/hive_config.hpp"
#include "tools/cli/args.hpp"

namespace hive::cli {

// The valued flags and switches that set keys.
// with_server: also the server: section's (serve has a server, run none).
std::set<std::string> config_value_flags(bool with_server);
std::set<std::string> config_switches();

// The launch file (--config) when given, then every config flag over it;
// without --config, `fallback` is the tree the flags go on (its model from
// --model or the bundled one).
HiveConfig config_from_args(const Args& args, const HiveConfig& fallback);

// --print-config: the tree resolved against the model's config.json (not its
// weights), printed to stdout as a launch file with each value's source.
void print_resolved_config(HiveConfig config);

}  // namespace hive::cli
