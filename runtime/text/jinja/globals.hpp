#pragma once
// The functions a chat template can call by name, as transformers sets them
// up: jinja2's range, dict, namespace (cycler, joiner and lipsum fail as
// unsupported), plus transformers' raise_exception and strftime_now.
#include "runtime/text/jinja/scope.hpp"

namespace hive::chat_template {

ScopePtr make_global_scope();

}  // namespace hive::chat_template
