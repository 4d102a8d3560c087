#pragma once
// Command-line flags: "--name value" pairs and "--switch" booleans, checked
// against what each command accepts, with errors that name the flag. A flag
// given twice is an error (a later value silently replacing an earlier one
// loses input); so is a positional argument where the command takes none.
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace hive::cli {

class Args {
 public:
  // valued: flags that take a value; switches: flags that do not.
  enum class Positional : bool { rejected, allowed };
  Args(const std::vector<std::string>& argv, const std::set<std::string>& valued,
       const std::set<std::string>& switches, Positional positional = Positional::rejected);

  bool has(const std::string& flag) const { return values_.count(flag) || switches_.count(flag); }
  std::string get(const std::string& flag, const std::string& fallback) const;
  std::string require(const std::string& flag) const;
  // Errors name the flag, the range and the text given.
  int64_t get_int(const std::string& flag, int64_t fallback,
                  int64_t min = std::numeric_limits<int64_t>::min(),
                  int64_t max = std::numeric_limits<int64_t>::max()) const;
  double get_double(const std::string& flag, double fallback) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::string> values_;
  std::set<std::string> switches_;
  std::vector<std::string> positional_;
};

// "1,2,3" -> {1, 2, 3}; errors name the flag and the bad item.
std::vector<int32_t> parse_id_list(const std::string& text, const std::string& flag);

}  // namespace hive::cli
