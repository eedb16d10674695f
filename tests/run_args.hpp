#pragma once
// `opmeter run ARGS...` parsed as the binary parses it, for tests of the run flags.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/commands.hpp"

namespace opmeter::testing {

inline RunArgs parse_run(const std::vector<std::string>& args) {
  CLI::App app;
  RunArgs a;
  add_run_command(app, a);
  std::vector<const char*> argv = {"opmeter", "run"};
  for (auto& arg : args) argv.push_back(arg.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  return a;
}

}  // namespace opmeter::testing
