#pragma once
// The human-readable text of a CAF error: the message a worker attached to
// it, else CAF's rendering of the code.
#include <string>

#include <caf/error.hpp>

namespace hive {

std::string error_text(const caf::error& err);

}  // namespace hive
