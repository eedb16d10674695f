#pragma once
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

namespace opmeter {

struct RunArgs {
  std::string config;
  std::string suite;
  std::string filter;
  std::string case_string;
  std::optional<int> threads;
  std::string out;
  std::string resume;
  std::optional<std::size_t> samples;
  std::optional<double> max_noise_pct;
  std::optional<double> timeout_s;
  std::optional<std::size_t> min_samples;
  std::optional<double> min_time_s;
  std::optional<std::size_t> warmup;
  std::optional<double> warmup_s;
  std::optional<double> case_deadline_s;
  std::uint64_t seed = 20261122;
  bool hot = false;
  bool isolate = false;
  bool dry_run = false;
  std::string child_result;  // internal: isolated child writes its one result here
};

void add_run_command(CLI::App& app, RunArgs& args);
int run_command(const RunArgs& args, const char* argv0);
int list_command();
int info_command();

}  // namespace opmeter
