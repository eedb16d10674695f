// `opmeter check`: every impl x dtype x its op's check shapes on one device, each case set up
// once, verified once against the op's fp64 reference, untimed. Prints the matrix and the cases
// that did not pass, writes check.json; exit 0 when nothing failed, 1 otherwise, 2 on bad input.
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "cli/check_plan.hpp"
#include "cli/check_report.hpp"
#include "cli/commands.hpp"
#include "cli/shard_run.hpp"
#include "opmeter/backend.hpp"
#include "opmeter/context.hpp"
#include "opmeter/errors.hpp"
#include "plugins/c_plugin.hpp"
#include "report/reporters.hpp"

namespace opmeter {
namespace {

// The riskiest CUDA code, for `check --sanitize`: our kernels with shared memory, warp reductions,
// tile tails and packed weights, and cuDNN's graphs, each on the ops' tiny check shapes.
// racecheck looks for shared-memory races, which only our own kernels can have.
struct SanitizeTarget {
  const char* what;
  const char* filter;
  bool racecheck;
};
constexpr SanitizeTarget kSanitize[] = {
    {"flash and unfused attention", "^attention/(cuda|cuda_unfused)/", true},
    {"layernorm, rmsnorm and softmax reductions", "^(layernorm|rmsnorm|softmax)/cuda/", true},
    {"quantized linear (int8/int4/fp8 weights, split-K decode)", "^linear/cuda_quant/bf16/", true},
    {"convolution: ours and cuDNN's, NCHW and NHWC", "^conv2d/(cuda|cudnn|cudnn_nhwc|cudnn_unfused)/", false},
    {"transformer_block", "^transformer_block/cuda/", true},
    {"cuDNN attention and norms", "^(attention|layernorm|rmsnorm|batchnorm)/cudnn/", false},
};

int print_sanitize_commands(const std::string& exe) {
  fmt::print("# compute-sanitizer over the riskiest CUDA kernels on tiny cases (for a GPU session; exit 99: the\n"
             "# sanitizer found an error, 1: a case failed its check). Each writes its check.json under sanitize/.\n");
  int n = 0;
  for (auto& t : kSanitize) {
    fmt::print("# {}\n", t.what);
    for (const char* tool : {"memcheck", "racecheck"}) {
      if (std::string(tool) == "racecheck" && !t.racecheck) continue;
      fmt::print("compute-sanitizer --tool {} --error-exitcode 99 {} check --device cuda:0 --filter '{}' -o sanitize/{}-{}\n",
                 tool, exe, t.filter, tool, ++n);
    }
  }
  return 0;
}

nlohmann::json settings_json(const CheckArgs& a, const RunOptions& o) {
  return {{"device", a.device}, {"filter", a.filter},   {"ops", a.ops},         {"impls", a.impls},
          {"dtypes", a.dtypes}, {"quick", a.quick},     {"isolate", a.isolate}, {"seed", o.seed},
          {"kernels", o.kernels}, {"plugins", o.plugins}};
}

}  // namespace

void add_check_command(CLI::App& app, CheckArgs& a) {
  auto* check = app.add_subcommand(
      "check", "correctness only: every impl x dtype x each op's edge shapes against the fp64 reference, untimed");
  check->add_option("--device", a.device, "where cases run: cpu (default) or cuda:N; every impl of that backend");
  check->add_option("--filter", a.filter, "only cases whose case string matches this regular expression");
  check->add_option("--op", a.ops, "only this op; repeatable, or comma-separated")->delimiter(',');
  check->add_option("--impl", a.impls, "only this impl (also one that runs when named, e.g. torch); repeatable")->delimiter(',');
  check->add_option("--dtype", a.dtypes, "only this dtype; repeatable, or comma-separated")->delimiter(',');
  check->add_flag("--quick", a.quick, "the first shape each impl runs, per dtype");
  check->add_flag("--isolate", a.isolate, "check each case in a child process: a crash or a hang becomes that case's status");
  check->add_option("--case-deadline", a.case_deadline_s, "with --isolate: seconds before a case is killed (default 60)")
      ->check(CLI::Range(0.1, 86400.0));
  check->add_flag("--sanitize", a.sanitize,
                  "print the compute-sanitizer (memcheck, racecheck) command lines for the riskiest CUDA kernels, and stop");
  add_user_impl_options(check, a.kernels, a.plugins);
  check->add_flag("--dry-run", a.dry_run, "print the cases and stop");
  check->add_option("-o,--out", a.out, "directory of check.json (default: the current directory)");
  check->add_option("--shard", a.shard,
                    "I/N or auto: check part I of N (0-based), as run --shard; automatic under mpirun or srun. "
                    "Each rank writes OUT/rankNNN-of-N-HOST-DEVICE/check.json; opmeter merge OUT -o DIR joins them");
}

int check_command(const CheckArgs& a, const char* argv0) {
  const std::string exe = self_path(argv0);
  if (a.sanitize) return print_sanitize_commands(exe);

  RunOptions options;
  options.check_only = true;
  options.isolate = a.isolate;
  options.self_exe = exe;
  options.case_deadline_s = a.case_deadline_s.value_or(0);
  auto user = load_user_impls(a.kernels, a.plugins);  // before any case names them
  options.kernels = user.kernel_specs;
  options.plugins = loaded_plugins();
  auto cases = check_cases({.device = a.device, .ops = a.ops, .impls = a.impls, .dtypes = a.dtypes,
                            .filter = a.filter, .quick = a.quick, .user_impls = user.names});
  // Under a launcher every rank would write the same check.json: each checks its share (the
  // collectives on every rank) and writes its own directory, named as run's.
  std::optional<scale::Shard> shard = shard_of(a.shard);
  std::string out_dir = a.out, device = a.device;
  if (shard) {
    const std::size_t planned = cases.size();
    // As run's: local rank k checks on GPU k, unless --device names another GPU than the first.
    const bool pinned = device_pins_ranks(a.device);
    if (!pinned) device = scale::device_for_local_rank(a.device, shard->local_rank);
    cases = cases_of_shard(cases, *shard, Stopping{}, "", pinned);
    out_dir = shard_results_dir({.root = a.out}, *shard, cases);
    fmt::print(stderr, "opmeter check: rank {} of {} ({}): {} of the {} cases -> {}\n", shard->rank, shard->size,
               shard->source, cases.size(), planned, out_dir);
  }
  if (a.dry_run) {
    for (auto& c : cases) fmt::print("{}\n", c.to_string());
    return 0;
  }
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (!std::filesystem::is_directory(out_dir, ec)) throw UsageError(fmt::format("-o {}: cannot create the directory", out_dir));

  auto context = machine_context();
  // A device's context (its model, driver, clocks); the host backend's is its energy counters,
  // which a check does not use.
  if (device != kHostDevice) context.update(backend_of(device).context({device}));
  fmt::print(stderr, "opmeter check: {} cases on {}{}\n", cases.size(), device, a.isolate ? ", each in a child process" : "");
  std::vector<Result> results;
  for (auto& c : cases) {
    if (results.empty() || results.back().kase.op != c.op)
      fmt::print(stderr, "opmeter check: {}\n", c.op);
    results.push_back(runs_in_child(c, options) ? run_in_child(c, options) : check_case(c, options));
  }
  fmt::print("{}", check_text(results));
  std::fflush(stdout);  // the matrix whole, before what follows on stderr
  const auto file = (std::filesystem::path(out_dir) / "check.json").string();
  auto settings = settings_json(a, options);
  if (shard) settings["shard"] = shard_json(*shard);
  write_atomically(file, dump_json(check_json(results, settings, context), 1) + "\n");
  fmt::print(stderr, "opmeter check: every case in {}\n", file);
  return check_exit_code(results);
}

}  // namespace opmeter
