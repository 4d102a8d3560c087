#include "tools/cli/args.hpp"

#include <charconv>

#include "base/error.hpp"

namespace hive::cli {

Args::Args(const std::vector<std::string>& argv, const std::set<std::string>& valued,
           const std::set<std::string>& switches, Positional positional) {
  bool flags_end = false;  // after "--", everything is positional
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& item = argv[i];
    if (!flags_end && item == "--") {
      flags_end = true;
      continue;
    }
    // "-" alone (standard input) and "-5" (a number) are values; "-x" is a
    // flag this command does not have, not a prompt.
    const bool flag = !flags_end && item.size() > 1 && item[0] == '-' &&
                      !(item[1] >= '0' && item[1] <= '9') && item[1] != '.';
    if (!flag) {
      check(positional == Positional::allowed, "unexpected argument '", item,
            "' (this command takes only flags)");
      positional_.push_back(item);
      continue;
    }
    check(item.rfind("--", 0) == 0, "unknown flag ", item, " (flags are spelled --name)");
    // --name=value is --name value.
    const size_t equals = item.find('=');
    const std::string arg = item.substr(0, equals);
    check(!has(arg), arg, " given twice");
    if (switches.count(arg)) {
      check(equals == std::string::npos, arg, " takes no value (got '", item, "')");
      switches_.insert(arg);
    } else if (valued.count(arg)) {
      if (equals != std::string::npos) {
        values_[arg] = item.substr(equals + 1);
      } else {
        check(i + 1 < argv.size(), arg, " needs a value");
        values_[arg] = argv[++i];
      }
    } else {
      fail("unknown flag ", arg);
    }
  }
}

std::string Args::get(const std::string& flag, const std::string& fallback) const {
  const auto it = values_.find(flag);
  return it == values_.end() ? fallback : it->second;
}

std::string Args::require(const std::string& flag) const {
  const auto it = values_.find(flag);
  check(it != values_.end(), "missing required flag ", flag);
  return it->second;
}

int64_t Args::get_int(const std::string& flag, int64_t fallback, int64_t min, int64_t max) const {
  const auto it = values_.find(flag);
  if (it == values_.end()) return fallback;
  int64_t value = 0;
  const std::string& s = it->second;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  check(ec != std::errc::result_out_of_range, flag, " is out of range (got '", s, "')");
  check(ec == std::errc() && end == s.data() + s.size(), flag, " must be an integer (got '", s,
        "')");
  check(value >= min && value <= max, flag, " must be in [", min, ", ", max, "] (got ", value, ")");
  return value;
}

double Args::get_double(const std::string& flag, double fallback) const {
  const auto it = values_.find(flag);
  if (it == values_.end()) return fallback;
  const std::string& s = it->second;
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  check(used == s.size() && !s.empty(), flag, " must be a number (got '", s, "')");
  return value;
}

std::vector<int32_t> parse_id_list(const std::string& text, const std::string& flag) {
  std::vector<int32_t> ids;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    int32_t id = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), id);
    check(!item.empty() && ec == std::errc() && end == item.data() + item.size() && id >= 0, flag,
          ": '", item, "' is not a token id (expected non-negative integers separated by commas)");
    ids.push_back(id);
    start = comma + 1;
  }
  return ids;
}

}  // namespace hive::cli
