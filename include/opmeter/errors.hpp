#pragma once
#include <stdexcept>
#include <string>

namespace opmeter {

// Bad input from the user (flag, case string, file): reported as a message, exit code 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A file or directory opmeter cannot write (full disk, read-only, not a directory): exit code 2,
// with the path and the system's reason. What was written before stays.
struct OutputError : UsageError {
  using UsageError::UsageError;
};
// "cannot write PATH: <strerror(errno)>".
OutputError output_error(const std::string& path, int err);

// A config file problem, located at file:line:column.
struct ConfigError : UsageError {
  ConfigError(std::string file, int line, int column, const std::string& message);
  std::string file;
  int line;
  int column;
  std::string detail;
};

// A case that cannot be expressed (missing or malformed parameter).
struct CaseError : UsageError {
  using UsageError::UsageError;
};

}  // namespace opmeter
