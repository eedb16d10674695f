#pragma once
// A results directory held by one run at a time.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace opmeter {

inline constexpr const char* kLockFile = ".opmeter.lock";
inline constexpr const char* kRunFile = "run.json";  // the run's settings and machine context

class RunDirectory {
 public:
  // Creates `dir` (or opens it, resuming) and takes its lock (flock on .opmeter.lock, released
  // when the process ends however it ends). UsageError when another run holds it, when a new run
  // finds files there (results must not mix), or OutputError when it cannot be written.
  RunDirectory(const std::string& dir, bool resume);
  ~RunDirectory();
  RunDirectory(const RunDirectory&) = delete;
  RunDirectory& operator=(const RunDirectory&) = delete;
  std::string file(const std::string& name) const;

 private:
  std::string dir_;
  int lock_fd_ = -1;
};

// The run settings stored in a results directory: run.json's "run", else results.json's
// context.run (results of older versions). nullopt when there are none; UsageError when one of
// those files is not a file (a directory). `file`, when given, is set to the file they came from.
std::optional<nlohmann::json> stored_run_settings(const std::string& dir, std::string* file = nullptr);

}  // namespace opmeter
