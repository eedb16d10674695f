// `opmeter calibrate`: measure this machine's ceilings (peak FLOP/s per dtype, memory and cache
// bandwidth) and its fusion profile, and write them as one JSON profile that `opmeter run
// --calibration` compares results with.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analysis/fusion.hpp"
#include "cli/cache_cases.hpp"
#include "cli/commands.hpp"
#include "cli/shard_run.hpp"
#include "cli/validators.hpp"
#include "config/config.hpp"
#include "engine/calibration_profile.hpp"
#include "engine/ceiling_rate.hpp"
#include "engine/runner.hpp"
#include "engine/stopping_settings.hpp"
#include "opmeter/backend.hpp"
#include "opmeter/context.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "report/reporters.hpp"
#include "util/output_path.hpp"

namespace opmeter {
namespace {

std::string elements(std::size_t bytes) { return std::to_string(std::max<std::size_t>(16, bytes / 4 / 16 * 16)); }

// A word the shell reads back as it is.
std::string shell_word(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+=./:,@%") ==
                        std::string::npos)
    return s;
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

// The command that continues this calibration in `dir`: the same options, --resume instead of
// --results.
std::string resume_command(const CalibrateArgs& a, const std::string& dir) {
  std::string cmd = "opmeter calibrate --resume " + shell_word(dir) + " --out " + shell_word(a.out);
  if (a.threads) cmd += fmt::format(" --threads {}", *a.threads);
  if (!a.fusion_config.empty()) cmd += " --fusion " + shell_word(a.fusion_config);
  if (a.array_mib) cmd += fmt::format(" --array-mib {}", *a.array_mib);
  if (a.llc_bytes) cmd += fmt::format(" --llc-bytes {}", *a.llc_bytes);
  if (!a.device.empty()) cmd += " --device " + shell_word(a.device);
  if (a.quick) cmd += " --quick";
  return cmd;
}

}  // namespace

void add_calibrate_command(CLI::App& app, CalibrateArgs& a) {
  auto* cal = app.add_subcommand("calibrate", "measure peak FLOP/s, memory/cache bandwidth and fusion gains; write a profile");
  cal->add_option("--out", a.out, "profile file to write (default: opmeter-calibration.json)")->check(kNonEmpty);
  cal->add_option("--results", a.results_dir, "directory for the raw results (default: opmeter-results/<timestamp>)");
  cal->add_option("--resume", a.resume,
                  "continue an interrupted calibration whose raw results are in this directory (give the same options)");
  cal->add_option("--threads", a.threads, "threads (default: all usable CPUs)")->check(CLI::Range(1, 4096));
  cal->add_option("--fusion", a.fusion_config, "YAML config of the fusion cases (default: the built-in fusion suite)");
  cal->add_option("--array-mib", a.array_mib, "MiB per bandwidth array (default: 4x the last-level cache, >= 64)")
      ->check(CLI::Range(1, 1 << 20));
  cal->add_option("--llc-bytes", a.llc_bytes,
                  "last-level cache size that sizes the arrays (default: what the CPU reports; a VM may report the host's)")
      ->check(CLI::Range(std::size_t{1} << 16, std::size_t{1} << 40));
  cal->add_option(
         "--device", a.device,
         "what to calibrate: cpu (default) or cuda:N (its peaks per dtype, memory and L2 bandwidth, GPU fusion suite)")
      ->check(kNonEmpty);
  cal->add_flag("--quick", a.quick,
                "fusion patterns of one dtype only (fp32; bf16 on a GPU), twice the fusion config's precision "
                "target (max_noise) and a timeout of at most 2 s a case");
}

namespace {

// What a calibration measures: the ceilings, the cache levels (read cases by their case string),
// the bandwidth arrays' size and the fusion cases.
struct CalibrationPlan {
  std::vector<Case> cases;
  std::map<std::string, int> level_of_case;
  double array_bytes = 0;
  Plan fusion;
};

// Arrays that fit in a cache measure it, not memory: refused where one array (the read and write
// kernels stream one) fits in the last-level cache (`cache_bytes`; 0: unknown), or where the
// copy kernel (two arrays) moves less than `run` takes a memory ceiling from.
void check_array_mib(const CalibrateArgs& a, std::size_t cache_bytes, const char* cache) {
  if (!a.array_mib) return;
  constexpr double kMiB = 1 << 20;
  const double array = double(*a.array_mib) * kMiB;
  if (array < double(cache_bytes))
    throw UsageError(fmt::format(
        "calibrate --array-mib {}: an array of {} MiB fits in the {:.0f} MiB {}: that "
        "measures a cache, not memory; give --array-mib {:.0f} or more",
        *a.array_mib, *a.array_mib, double(cache_bytes) / kMiB, cache, std::ceil(double(cache_bytes) / kMiB)));
  if (2 * array < kMemoryCeilingMinBytes)
    throw UsageError(fmt::format(
        "calibrate --array-mib {}: its copy kernel would move {:.0f} MiB, less than the "
        "{:.0f} MiB opmeter run takes a memory ceiling from: that measures a cache, not "
        "memory; give --array-mib {:.0f} or more",
        *a.array_mib, 2 * array / kMiB, kMemoryCeilingMinBytes / kMiB, std::ceil(kMemoryCeilingMinBytes / 2 / kMiB)));
}

// The fusion profile holds the calibrated device's fused/unfused pairs: a config's pipeline
// layers, or cases on another device, would be measured for nothing.
void check_fusion_config(const CalibrateArgs& a, const Plan& fusion, const std::string& device) {
  if (a.fusion_config.empty()) return;
  if (!fusion.pipelines.empty())
    throw UsageError(
        fmt::format("calibrate --fusion {}: it has pipelines: (opmeter run measures them); give a config "
                    "of fused impls beside their *_unfused forms",
                    a.fusion_config));
  for (auto& c : fusion.cases)
    if (c.device != device)
      throw UsageError(fmt::format("calibrate --fusion {}: its cases run on {}, and this calibrates {} ({})",
                                   a.fusion_config, c.device, device,
                                   c.on_host() ? "give a config of the device's cases, or no --device"
                                               : fmt::format("calibrate --device {} measures that device", c.device)));
}

void add_fusion(CalibrationPlan& p, bool quick, DType quick_dtype) {
  for (auto& c : p.fusion.cases)
    if (!quick || c.dtype == quick_dtype) p.cases.push_back(c);
}

// The host: FMA peaks, DRAM bandwidth kernels, a hot read over half of each data cache level (see
// cache_read_cases), the fusion suite.
CalibrationPlan host_plan(const CalibrateArgs& a, int threads) {
  CalibrationPlan p;
  check_array_mib(a, llc_bytes(), "last-level cache");
  const std::size_t dram = a.array_mib ? *a.array_mib * (std::size_t(1) << 20) / 4 : default_bandwidth_elements();
  p.array_bytes = double(dram) * 4;
  for (DType d : {DType::fp64, DType::fp32, DType::bf16, DType::int8})
    p.cases.push_back(ceiling_case("peak", d, {{"kernel", "fma"}}, threads));
  for (const char* k : {"copy", "triad", "read", "write"})
    p.cases.push_back(ceiling_case("bandwidth", DType::fp32, {{"kernel", k}, {"n", std::to_string(dram)}}, threads));
  for (auto& read : cache_read_cases(cpu_info().caches, threads, llc_bytes())) {
    p.level_of_case[read.kase.to_string()] = read.level;
    p.cases.push_back(read.kase);
  }
  p.fusion = a.fusion_config.empty() ? load_suite("fusion", threads) : load_config_file(a.fusion_config, threads);
  check_fusion_config(a, p.fusion, kHostDevice);
  add_fusion(p, a.quick, DType::fp32);
  return p;
}

// A CUDA device: the peak kernels of every dtype (tensor cores included), device memory
// bandwidth over 1 GiB arrays, a read over half of its L2, and the GPU fusion suite.
CalibrationPlan device_plan(const CalibrateArgs& a) {
  CalibrationPlan p;
  Case like;
  like.device = a.device;
  const std::size_t n = a.array_mib ? *a.array_mib * (std::size_t(1) << 20) / 4 : std::size_t{1} << 28;
  p.array_bytes = double(n) * 4;
  const OpDef* peak = Registry::global().op("peak");
  for (DType d : {DType::fp32, DType::tf32, DType::fp16, DType::bf16, DType::fp8_e4m3, DType::int8})
    for (auto& c : peak->ceiling_cases(d, like, 0)) p.cases.push_back(c);
  auto on_device = [&](const std::string& kernel, std::size_t elems) {
    Case c = Registry::global().op("bandwidth")->ceiling_cases(DType::fp32, like, 0).at(0);
    c.params = {{"kernel", kernel}, {"n", elements(elems * 4)}};
    return c;
  };
  for (const char* k : {"copy", "triad", "read", "write"}) p.cases.push_back(on_device(k, n));
  auto gpus = backend_of(like).context({a.device}).value("gpus", nlohmann::json::array());
  check_array_mib(a, gpus.empty() ? 0 : gpus[0].value("l2_bytes", std::size_t{0}), "L2");
  if (!gpus.empty() && gpus[0].value("l2_bytes", 0) > 0) {
    auto c = on_device("read", gpus[0]["l2_bytes"].template get<std::size_t>() / 2 / 4);
    c.hot = true;  // cold, the timer would flush the L2 before each sample: device memory bandwidth
    p.level_of_case[c.to_string()] = 2;
    p.cases.push_back(c);
  }
  p.fusion = a.fusion_config.empty() ? load_suite("fusion-gpu", 0, a.device) : load_config_file(a.fusion_config, 0, a.device);
  check_fusion_config(a, p.fusion, a.device);
  add_fusion(p, a.quick, DType::bf16);
  return p;
}

// Under a launcher every rank would write the same profile and results directory: each writes
// its own, named by its rank (PROFILE.rankNNN-of-N-HOST-DEVICE.json, RESULTS/rankNNN-of-N-HOST-DEVICE/).
CalibrateArgs per_rank(CalibrateArgs a) {
  auto shard = scale::shard_from_env(scale::process_env());
  if (!shard || !shard->active()) return a;
  const std::string name = rank_name(*shard, a.device.empty() ? kHostDevice : a.device);
  std::filesystem::path profile(a.out);
  a.out = (profile.parent_path() / (profile.stem().string() + "." + name + profile.extension().string())).string();
  if (!a.resume.empty()) a.resume = (std::filesystem::path(a.resume) / name).string();
  else if (!a.results_dir.empty()) a.results_dir = (std::filesystem::path(a.results_dir) / name).string();
  else a.results_dir = (std::filesystem::path(timestamped_dir("opmeter-results")) / name).string();
  fmt::print(stderr, "opmeter: rank {} of {} ({}): profile {}, results {}\n", shard->rank, shard->size, shard->source,
             a.out, a.resume.empty() ? a.results_dir : a.resume);
  return a;
}

}  // namespace

int calibrate_command(const CalibrateArgs& given) {
  const CalibrateArgs a = per_rank(given);
  check_output_file(a.out, "calibrate --out");  // now, not after minutes of measuring
  if (!a.resume.empty() && !a.results_dir.empty() && a.resume != a.results_dir)
    throw UsageError("calibrate: --resume DIR continues the calibration in DIR; give no other --results");
  if (a.llc_bytes) set_llc_bytes(*a.llc_bytes);
  const bool host = a.device.empty() || a.device == kHostDevice;
  if (!host) {
    check_device(a.device);  // UsageError naming the expected form
    // As run says up front, but here every case would be skipped: nothing to calibrate.
    if (auto ready = backend_of(a.device).device_ready(a.device); !ready.ok)
      throw UsageError(fmt::format("calibrate --device {}: it cannot run here ({})", a.device, ready.reason));
  }
  const int threads = a.threads.value_or(default_threads());
  CalibrationPlan plan = host ? host_plan(a, threads) : device_plan(a);
  const Plan& fusion = plan.fusion;
  auto& cases = plan.cases;
  auto& level_of_case = plan.level_of_case;

  RunOptions options;
  options.stopping = fusion.stopping;
  if (a.quick) {  // looser than the fusion config's, never tighter or longer
    options.stopping.max_noise = std::min(options.stopping.max_noise * 2, 1.0);  // at most 100%, as configs
    options.stopping.timeout_s = std::min(options.stopping.timeout_s, 2.0);
  }
  nlohmann::json settings = {{"source", "calibrate"}, {"stopping", stopping_json(options.stopping)}};
  if (llc_bytes_overridden()) settings["llc_bytes"] = llc_bytes();
  RunOutput out{a.resume.empty() ? a.results_dir : a.resume, !a.resume.empty(), "calibrate", settings, true};
  out.resume_command = [&](const std::string& dir) {  // a rank's: the command every rank runs again
    if (a.out == given.out) return resume_command(a, dir);
    return resume_command(given, std::filesystem::path(dir).parent_path().string()) + " on every rank";
  };
  auto results = run_cases_in_dir(cases, options, out).results;
  if (const int code = results_exit_code(results); code >= 128) {  // interrupted: a partial profile is no profile
    fmt::print(stderr, "opmeter: calibration interrupted: no profile written ({} left as it was)\n", a.out);
    return code;
  }

  CalibrationProfile profile;
  std::vector<std::string> contended;  // ceilings measured while others took the CPUs: too low
  for (auto& r : results) {
    if (r.status != Status::ok) continue;
    if (ceiling_of(r.kase.op) != CeilingKind::none && r.has_flag("contended")) contended.push_back(r.case_string);
    if (ceiling_of(r.kase.op) == CeilingKind::compute) {  // a GPU's fastest kernel of the dtype (mma or wgmma)
      auto& best = profile.peak_gflops[std::string(to_string(r.kase.dtype))];
      best = std::max(best, ceiling_gflops(r));
    }
    if (ceiling_of(r.kase.op) != CeilingKind::memory) continue;
    if (auto it = level_of_case.find(r.case_string); it != level_of_case.end()) {
      profile.bandwidth.caches.push_back(
          {{"level", it->second}, {"array_bytes", double(r.kase.get_int("n")) * 4}, {"read_gbps", ceiling_gbps(r)}});
    } else {
      profile.bandwidth.kernels[r.kase.get("kernel")] = ceiling_gbps(r);
      if (r.work.bytes() >= kMemoryCeilingMinBytes)  // as run takes its memory ceiling
        profile.bandwidth.memory_gbps = std::max(profile.bandwidth.memory_gbps, ceiling_gbps(r));
    }
  }
  if (profile.peak_gflops.empty() || profile.bandwidth.memory_gbps <= 0) {
    fmt::print(stderr, "opmeter: calibrate could not measure the peak or the memory bandwidth; no profile written\n");
    return 1;
  }
  FusionThresholds t;
  profile.created = utc_now_iso();
  profile.threads = threads;
  profile.device = host ? kHostDevice : a.device;
  profile.bandwidth.array_bytes = static_cast<double>(plan.array_bytes);
  profile.bandwidth.note = profile.bandwidth.caches.empty()
                               ? "cache sizes unknown on this machine: cache bandwidth not measured"
                               : "hot read bandwidth over half of each data cache level the threads use";
  const auto fusion_verdicts = fusion_rows(results, t);
  profile.fusion = fusion_json(fusion_verdicts, t);
  profile.context = machine_context();
  if (!host) profile.context.update(backend_of(a.device).context({a.device}));  // its GPU, as run's results have
  if (!contended.empty()) profile.context[kContendedCeilings] = contended;
  write_atomically(a.out, dump_json(profile.to_json(), 2) + "\n");
  fmt::print(stderr, "opmeter: calibration profile written to {}\n", a.out);
  if (!contended.empty())
    fmt::print(stderr,
               "opmeter: warning: {} of its ceilings were measured while other processes took the CPUs (contended), so "
               "they are too low: {}; calibrate again on a quiet machine\n",
               contended.size(), fmt::join(contended, ", "));
  if (fusion_verdicts.empty())
    fmt::print(stderr,
               "opmeter: warning: no fusion pattern measured (no fused case ran beside its *_unfused form{}): the "
               "profile holds no fusion verdict\n",
               a.quick ? fmt::format(" in {}, the one dtype --quick keeps", host ? "fp32" : "bf16") : "");
  std::vector<std::string> doubtful;  // verdicts the profile keeps from doubtful times
  for (auto& row : fusion_verdicts)
    if (!row.flags.empty())
      doubtful.push_back(fmt::format("{} {} ({})", row.pattern, row.fused_impl, fmt::join(row.flags, ", ")));
  if (!doubtful.empty())
    fmt::print(stderr,
               "opmeter: warning: {} of its fusion verdicts come from flagged times, so they may not hold: {}; "
               "calibrate again on a quiet machine\n",
               doubtful.size(), fmt::join(doubtful, "; "));
  return results_exit_code(results);
}

}  // namespace opmeter
