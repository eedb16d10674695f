#pragma once
// What an impl may do in the untimed profiling pass after a case's measurement (run --profile,
// --memory-profile; engine/profile_pass.hpp): write files of its own, such as a worker's PyTorch
// profiler trace or a CUDA memory snapshot. An impl that has some derives from ProfiledImpl too.
#include <map>
#include <string>

namespace opmeter {

struct ProfileRequest {
  std::string dir;      // where the files go: a private folder of the run's (never a link)
  std::string stem;     // the case's name, safe as a file name: files are STEM.<kind>
  bool trace = false;   // a profiler trace of a few calls
  bool memory = false;  // the case's peak memory, and a memory snapshot where the impl has one
};

class ProfiledImpl {
 public:
  virtual ~ProfiledImpl() = default;
  // The pass, after the measurement and its checks: details to record (the files written, what
  // was measured). Throws when it cannot; the case keeps its result.
  virtual std::map<std::string, std::string> profile(const ProfileRequest& request) = 0;
};

}  // namespace opmeter
