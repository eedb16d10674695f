// `opmeter check`: every impl x dtype x its op's check shapes on one device, each case set up
// once, verified once against the op's fp64 reference, untimed. Prints the matrix and the cases
// that did not pass, writes check.json (as it goes, so an interrupted check keeps what it
// finished); exit 0 when nothing failed, 1 otherwise, 2 on bad input, 128 + the signal when
// interrupted (130 SIGINT, 143 SIGTERM), as run.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "cli/check_plan.hpp"
#include "cli/check_report.hpp"
#include "cli/check_resume.hpp"
#include "cli/commands.hpp"
#include "cli/shard_run.hpp"
#include "cli/validators.hpp"
#include "engine/runner.hpp"
#include "opmeter/backend.hpp"
#include "opmeter/context.hpp"
#include "opmeter/errors.hpp"
#include "plugins/c_plugin.hpp"
#include "report/reporters.hpp"
#include "util/interrupt.hpp"
#include "util/text.hpp"
#include "worker/shared_worker.hpp"

namespace opmeter {
namespace fs = std::filesystem;
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
    {"cuDNN attention and norms", "^(attention|layernorm|rmsnorm|batchnorm)/cudnn/", false},
    // Last: racecheck on the block's fused kernels took 45 s of triage's budget on an H200.
    {"transformer_block", "^transformer_block/cuda/", true},
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
  nlohmann::json j = {{"device", a.device}, {"filter", a.filter},   {"exclude", a.exclude}, {"ops", a.ops},
                      {"impls", a.impls},   {"dtypes", a.dtypes},   {"quick", a.quick},     {"isolate", a.isolate},
                      {"seed", o.seed},     {"kernels", o.kernels}, {"plugins", o.plugins}};
  if (a.case_deadline_s) j["case_deadline_s"] = *a.case_deadline_s;
  return j;
}

// --op, --impl and --dtype as given (repeatable, each a comma-separated list that kCommaList
// checked), one name an item.
std::vector<std::string> split_lists(const std::vector<std::string>& given) {
  std::vector<std::string> out;
  for (auto& list : given)
    for (auto& name : split(list, ',')) out.push_back(name);
  return out;
}

// A killed check (SIGKILL after a timeout's grace) loses at most this much work.
constexpr double kSaveEverySeconds = 5;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The stderr line of each op as it ends: where the time goes.
struct OpProgress {
  std::string op;
  std::size_t cases = 0;
  std::chrono::steady_clock::time_point start;

  void next_case(const std::string& next_op) {
    if (next_op != op) {
      end("");
      op = next_op;
      cases = 0;
      start = std::chrono::steady_clock::now();
    }
  }
  void end(const char* note) {
    if (!op.empty())
      fmt::print(stderr, "opmeter check: {} ({} case{}, {:.1f} s{})\n", op, cases, cases == 1 ? "" : "s",
                 seconds_since(start), note);
    op.clear();
  }
};

}  // namespace

void add_check_command(CLI::App& app, CheckArgs& a) {
  auto* check = app.add_subcommand(
      "check", "correctness only: every impl x dtype x each op's edge shapes against the fp64 reference, untimed");
  check
      ->add_option("--device", a.device,
                   "where cases run: cpu (default; with --resume the file's) or cuda:N; every impl of that backend")
      ->check(kNonEmpty);
  add_filter_options(check, a.filter, a.exclude);
  check->add_option("--op", a.ops, "only this op; repeatable, or comma-separated")->check(kCommaList);
  check->add_option("--impl", a.impls, "only this impl (also one that runs when named, e.g. torch); repeatable")
      ->check(kCommaList);
  check->add_option("--dtype", a.dtypes, "only this dtype; repeatable, or comma-separated")->check(kCommaList);
  check->add_flag("--quick", a.quick, "the first shape each impl runs, per dtype");
  check->add_flag("--isolate", a.isolate, "check each case in a child process: a crash or a hang becomes that case's status");
  check->add_option("--case-deadline", a.case_deadline_s, kCaseDeadlineHelp + " (default 60)")
      ->check(CLI::Range(kMinCaseDeadline, kMaxCaseDeadline));
  check->add_flag("--sanitize", a.sanitize,
                  "print the compute-sanitizer (memcheck, racecheck) command lines for the riskiest CUDA kernels, and stop");
  add_user_impl_options(check, a.kernels, a.plugins);
  check->add_flag("--dry-run", a.dry_run, "print the cases and stop");
  check->add_option("-o,--out", a.out, "directory of check.json (default: the current directory)")->check(kNonEmpty);
  check->add_option("--resume", a.resume,
                    "continue the check whose check.json is in DIR: its selection (flags given now win), only the "
                    "cases it lacks, the union written there; the plugins and kernels it used are loaded again "
                    "(resume only checks you trust)");
  check->add_option("--shard", a.shard,
                    "I/N or auto: check part I of N (0-based), as run --shard; automatic under mpirun or srun. "
                    "Each rank writes OUT/rankNNN-of-N-HOST-DEVICE/check.json; opmeter merge OUT -o DIR joins them");
}

int check_command(const CheckArgs& given, const char* argv0) {
  const std::string exe = self_path(argv0);
  if (given.sanitize) return print_sanitize_commands(exe);

  CheckArgs a = given;
  for (auto* list : {&a.ops, &a.impls, &a.dtypes}) *list = split_lists(*list);
  std::optional<StoredCheck> stored;
  if (!a.resume.empty()) {
    stored = read_stored_check(a.resume);
    take_stored_selection(a, *stored);
    std::error_code ec;
    if (!a.out.empty() && fs::weakly_canonical(a.out, ec) != fs::weakly_canonical(a.resume, ec))
      throw UsageError(fmt::format("--resume {} writes the union to {}: give no -o {} with it", a.resume, a.resume, a.out));
    a.out = a.resume;
  }
  if (a.device.empty()) a.device = "cpu";
  if (a.out.empty()) a.out = ".";
  // From here on Ctrl-C and SIGTERM stop the check at the next case, keeping what it finished.
  // (Isolated children run `opmeter run`, which keeps the default: the parent kills them.)
  if (!a.dry_run) catch_interrupts();

  RunOptions options;
  options.check_only = true;
  options.isolate = a.isolate;
  options.self_exe = exe;
  options.case_deadline_s = a.case_deadline_s.value_or(0);
  auto user = load_user_impls(a.kernels, a.plugins);  // before any case names them
  options.kernels = user.kernel_specs;
  options.plugins = loaded_plugins();
  check_case_deadline(given.case_deadline_s, a.isolate, !options.plugins.empty());
  auto cases = check_cases({.device = a.device,
                            .ops = a.ops,
                            .impls = a.impls,
                            .dtypes = a.dtypes,
                            .filter = a.filter,
                            .exclude = a.exclude,
                            .quick = a.quick,
                            .user_impls = user.names});
  // Under a launcher every rank would write the same check.json: each checks its share (the
  // collectives on every rank) and writes its own directory, named as run's.
  std::optional<scale::Shard> shard = shard_of(a.shard);
  if (shard && stored)
    throw UsageError(fmt::format("--resume {}: a sharded check (--shard, mpirun, srun) cannot resume one check.json; "
                                 "resume each rank's directory on its own, without --shard",
                                 a.resume));
  std::string out_dir = a.out, device = a.device, split;
  if (shard) {
    const std::size_t planned = cases.size();
    // As run's: local rank k checks on GPU k, unless --device names another GPU than the first.
    const bool pinned = device_pins_ranks(a.device);
    if (!pinned) device = scale::device_for_local_rank(a.device, shard->local_rank);
    cases = cases_of_shard(cases, *shard, Stopping{}, "", pinned, &split);
    out_dir = shard_results_dir({.root = a.out}, *shard, cases);
    fmt::print(stderr, "opmeter check: rank {} of {} ({}): {} of the {} cases -> {}\n", shard->rank, shard->size,
               shard->source, cases.size(), planned, out_dir);
  }
  // Resumed: the stored results first, in their order, then the cases they lack.
  std::vector<Result> results = stored ? stored->results : std::vector<Result>{};
  std::set<std::string> done;
  for (auto& r : results) done.insert(r.case_string);
  std::erase_if(cases, [&](const Case& c) { return done.count(c.to_string()) > 0; });
  if (a.dry_run) {
    for (auto& c : cases) fmt::print("{}\n", c.to_string());
    return 0;
  }
  worker::check_worker_environment(cases);  // as run's: a bad OPMETER_PYTHON or deadline is exit 2 up front
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (!fs::is_directory(out_dir, ec)) throw UsageError(fmt::format("-o {}: cannot create the directory", out_dir));

  auto context = machine_context();
  // A device's context (its model, driver, clocks); the host backend's is its energy counters,
  // which a check does not use.
  if (device != kHostDevice) context.update(backend_of(device).context({device}));
  if (stored) {
    refuse_other_machine_or_build(*stored, context, device);
    context["resumed_from"] = stored->context;  // the machine state the stored cases were checked in
  }
  const std::size_t planned = results.size() + cases.size();
  fmt::print(stderr, "opmeter check: {} on {}{}{}\n", count_of(planned, "case"), device,
             stored ? fmt::format(" ({} already in {}, {} to check)", results.size(), stored->file, cases.size()) : "",
             a.isolate ? ", each in a child process" : "");

  const auto file = (fs::path(out_dir) / "check.json").string();
  if (!stored && fs::exists(file, ec))
    fmt::print(stderr, "opmeter check: replacing {} (opmeter check --resume {} would continue it)\n", file, out_dir);
  auto settings = settings_json(a, options);
  if (shard) settings["shard"] = shard_json(*shard, split, cases);
  auto save = [&](const char* state) {
    auto j = check_json(results, settings, context);
    j["progress"] = {{"planned", planned}, {"checked", results.size()}, {"state", state}};
    write_atomically(file, dump_json(j, 1) + "\n");
  };
  save("running");  // a disk that cannot take it stops the check before any case
  auto saved = std::chrono::steady_clock::now();
  OpProgress progress;
  for (auto& c : cases) {
    if (interrupted()) {
      if (c.op != progress.op) progress.end("");  // its op was whole
      break;
    }
    if (c.op != progress.op) {
      if (!progress.op.empty()) {  // each finished op is on disk
        save("running");
        saved = std::chrono::steady_clock::now();
      }
      progress.next_case(c.op);
    }
    Result r = runs_in_child(c, options) ? run_in_child(c, options, &interrupt_flag()) : check_case(c, options);
    if (cut_by_interrupt(r, &interrupt_flag())) break;  // not a result: --resume checks it again
    results.push_back(std::move(r));
    ++progress.cases;
    if (seconds_since(saved) >= kSaveEverySeconds) {
      save("running");
      saved = std::chrono::steady_clock::now();
    }
  }
  const bool stopped = interrupted();
  progress.end(stopped ? ", interrupted" : "");
  save(stopped ? "interrupted" : "finished");
  fmt::print("{}", check_text(results));
  if (stopped)
    fmt::print("\ninterrupted ({}): {} of the {} cases checked; opmeter check --resume {} checks the other {}\n",
               interrupt_signal() == SIGTERM ? "SIGTERM" : "SIGINT", results.size(), planned, out_dir,
               planned - results.size());
  std::fflush(stdout);  // the matrix whole, before what follows on stderr
  fmt::print(stderr, "opmeter check: {} in {}\n", stopped ? "the cases checked before the interrupt" : "every case", file);
  return stopped ? 128 + interrupt_signal() : check_exit_code(results);
}

}  // namespace opmeter
