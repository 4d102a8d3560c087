#include "actors/error_text.hpp"

#include <caf/message.hpp>
#include <caf/sec.hpp>

namespace hive {

std::string error_text(const caf::error& err) {
  const caf::message& context = err.context();
  if (context.size() == 1 && context.match_element<std::string>(0))
    return context.get_as<std::string>(0);
  return to_string(err);
}

}  // namespace hive
