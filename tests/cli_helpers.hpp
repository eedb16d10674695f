#pragma once
// Running the CLI (the test binary, with test impls linked in) from tests.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;

namespace {
struct Output {
  int code;
  std::string text;  // stdout and stderr
};

inline Output cli(const std::string& args) {
  std::string cmd = std::string(OPMETER_TESTBIN) + " " + args + " 2>&1";
  Output out{-1, ""};
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), p)) out.text += buf.data();
  int status = pclose(p);
  out.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

inline fs::path temp_dir(const std::string& name) {
  auto d = fs::temp_directory_path() / ("opmeter_cli_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

inline fs::path write(const fs::path& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir / name) << text;
  return dir / name;
}

}  // namespace
