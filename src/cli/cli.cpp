#include "cli/cli.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "context/build_info.hpp"
#include "opmeter/errors.hpp"
#include "plugins/c_plugin.hpp"
#include "util/did_you_mean.hpp"
#include "util/interrupt.hpp"

namespace opmeter {

int cli_main(int argc, char** argv) {
  CLI::App app{"opmeter: how fast and how efficiently this machine runs ML operators"};
  app.require_subcommand(1);
  // The version `opmeter info` reports as opmeter.version, with the build's git SHA.
  app.set_version_flag("--version", fmt::format("opmeter {} (git {})", build_info::version, build_info::git_sha),
                       "print opmeter's version and stop");
  // Checks a command line and stops: the docs' commands are checked this way where they cannot
  // run here (tests/docs/check_docs.py). Hidden: it is for tests, not users.
  bool parse_only = false;
  app.add_flag("--parse-only", parse_only, "parse the command line, then stop")->group("");
  RunArgs run_args;
  add_run_command(app, run_args);
  CheckArgs check_args;
  add_check_command(app, check_args);
  CalibrateArgs calibrate_args;
  add_calibrate_command(app, calibrate_args);
  ReportArgs report_args;
  add_report_command(app, report_args);
  CompareArgs compare_args;
  add_compare_command(app, compare_args);
  MergeArgs merge_args;
  add_merge_command(app, merge_args);
  PredictArgs predict_args;
  add_predict_command(app, predict_args);
  auto* list = app.add_subcommand("list", "ops, impls, dtypes, suites and built-in pipelines, and which are available here");
  std::vector<std::string> list_plugins;
  list->add_option("--plugin", list_plugins, "also list the impls of this C plugin; repeatable")->allow_extra_args(false);
  std::string list_format = "text";
  list->add_option("--format", list_format, "text (default: with what runs here) or md (the guide's reference page, from the registry alone)")
      ->check(CLI::IsMember({"text", "md"}));
  auto* info = app.add_subcommand("info", "this machine: CPU, ISA, caches, memory, libraries, build");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // `opmeter bogus`: CLI11 says only that a subcommand is required; name the word it got.
    if (argc > 1 && argv[1][0] != '-' && app.get_subcommands().empty()) {
      std::vector<std::string> names;
      for (auto* sub : app.get_subcommands({})) names.push_back(sub->get_name());
      fmt::print(stderr, "opmeter: {}\nRun 'opmeter --help' for usage.\n", unknown_name("command", argv[1], names));
      return 2;
    }
    fmt::print(stderr, "opmeter: {}\nRun 'opmeter --help' for usage.\n", e.what());
    return 2;
  }
  if (parse_only) return 0;
  try {
    if (list->parsed()) {
      for (auto& path : list_plugins) load_plugin(path);
      return list_format == "md" ? list_markdown_command() : list_command();
    }
    if (info->parsed()) return info_command();
    if (app.got_subcommand("check")) return check_command(check_args, argv[0]);
    if (app.got_subcommand("calibrate")) return calibrate_command(calibrate_args);
    if (app.got_subcommand("report")) return report_command(report_args);
    if (app.got_subcommand("compare")) return compare_command(compare_args);
    if (app.got_subcommand("merge")) return merge_command(merge_args);
    if (app.got_subcommand("predict")) return predict_command(predict_args);
    return run_command(run_args, argv[0]);
  } catch (const Interrupted&) {  // a long wait noticed Ctrl-C or SIGTERM; what it started is stopped
    fmt::print(stderr, "opmeter: interrupted\n");
    return 128 + interrupt_signal();
  } catch (const UsageError& e) {
    fmt::print(stderr, "opmeter: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "opmeter: internal error: {}\n", e.what());
    return 3;
  }
}

}  // namespace opmeter
