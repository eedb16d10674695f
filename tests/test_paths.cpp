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

const char* opmeter_testbin() {
  static const std::string path = [] {
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
      const auto beside = self.parent_path() / "opmeter_testbin";
      if (std::filesystem::is_regular_file(beside, ec)) return beside.string();
    }
    return std::string(kBuiltTestbin);
  }();
  return path.c_str();
}
