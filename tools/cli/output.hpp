#pragma once
// Output that did not reach its file (a full disk, a closed pipe) is an error
// with a non-zero exit, never a silent success.
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/error.hpp"

namespace hive::cli {

// Throws if a write to stdout failed; called straight after the write, errno
// still holds the reason.
inline void check_stdout() {
  check(!std::ferror(stdout),
        "cannot write the output to stdout: ", errno != 0 ? std::strerror(errno) : "write error");
}

// Flushes stdout; throws with the reason if this or an earlier write failed.
inline void flush_stdout() {
  check_stdout();
  errno = 0;
  std::fflush(stdout);
  check_stdout();
}

}  // namespace hive::cli
