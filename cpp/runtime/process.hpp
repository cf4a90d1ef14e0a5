// Running a child process (the C++ compiler) without a shell: posix_spawnp with stdout and
// stderr captured, stdin optionally redirected from a file.
#pragma once

#include <string>
#include <vector>

namespace raptor::runtime {

struct ProcessResult {
  int exit_status = -1;  // the exit code, or 128 + signal when killed by a signal
  std::string out;       // captured stdout
  std::string err;       // captured stderr
};

// Runs argv[0] (searched in PATH) with arguments argv[1..], environment = ours with LC_ALL=C
// (so diagnostics are parseable). Throws std::runtime_error when the program cannot be started
// (naming it, and `what_to_do`).
ProcessResult run_process(const std::vector<std::string>& argv, const std::string& what_to_do);

// Splits a flags string on whitespace (no quoting).
std::vector<std::string> split_flags(const std::string& flags);

}  // namespace raptor::runtime
