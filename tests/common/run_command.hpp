#pragma once
// Runs a shell command as a user would (the hive binary in the CLI tests) and
// collects its exit status and output.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace hive::test {

struct CommandResult {
  int status = -1;  // the exit code; -1 if the command did not exit normally
  std::string out;  // stdout, followed in arrival order by stderr when merged
};

// with_stderr: merge stderr into `out`; otherwise it is discarded.
inline CommandResult run_command(const std::string& command, bool with_stderr = true) {
  CommandResult result;
  FILE* pipe = ::popen((command + (with_stderr ? " 2>&1" : " 2>/dev/null")).c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.out.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// The hive binary of the build tree the tests belong to.
inline std::string hive_binary() {
  return std::string(HIVE_BINARY_DIR) + "/bin/hive";
}

}  // namespace hive::test
