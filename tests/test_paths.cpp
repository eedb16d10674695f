// Where the tests find the source tree and the test CLI at run time (tests/test_paths.hpp).
#include "tests/test_paths.hpp"

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

const char* opmeter_source_dir() {
  static const std::string dir = [] {
    const char* env = std::getenv("OPMETER_TEST_SOURCE_DIR");
    return std::string(env && *env ? env : kBuiltSourceDir);
  }();
  return dir.c_str();
}

namespace {
// `built`'s file name beside the running test binary where it is there (a bundle carries the
// binaries into one folder), else `built` itself.
std::string beside_self_or(const std::string& built) {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && !built.empty()) {
    const auto beside = self.parent_path() / std::filesystem::path(built).filename();
    if (std::filesystem::is_regular_file(beside, ec)) return beside.string();
  }
  return built;
}
}  // namespace

const char* opmeter_testbin() {
  static const std::string path = beside_self_or(kBuiltTestbin);
  return path.c_str();
}

const char* opmeter_cudnn_module() {
  static const std::string path = beside_self_or(kBuiltCudnnModule);
  return path.c_str();
}
