// `opmeter calibrate`: measure this machine's ceilings (peak FLOP/s per dtype, memory and cache
// bandwidth) and its fusion profile, and write them as one JSON profile that `opmeter run
// --calibration` compares results with.
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "opmeter/config.hpp"
#include "opmeter/context.hpp"
#include "opmeter/errors.hpp"
#include "analysis/fusion.hpp"
#include "opmeter/registry.hpp"
#include "report/reporters.hpp"

namespace opmeter {
namespace {

std::string elements(std::size_t bytes) { return std::to_string(std::max<std::size_t>(16, bytes / 4 / 16 * 16)); }

}  // namespace

void add_calibrate_command(CLI::App& app, CalibrateArgs& a) {
  auto* cal = app.add_subcommand("calibrate", "measure peak FLOP/s, memory/cache bandwidth and fusion gains; write a profile");
  cal->add_option("--out", a.out, "profile file to write (default: opmeter-calibration.json)");
  cal->add_option("--results", a.results_dir, "directory for the raw results (default: opmeter-results/<timestamp>)");
  cal->add_option("--threads", a.threads, "threads (default: all usable CPUs)")->check(CLI::Range(1, 4096));
  cal->add_option("--fusion", a.fusion_config, "YAML config of the fusion cases (default: the built-in fusion suite)");
  cal->add_option("--array-mib", a.array_mib, "MiB per bandwidth array (default: 4x the last-level cache, >= 64)")
      ->check(CLI::Range(1, 1 << 20));
  cal->add_option("--llc-bytes", a.llc_bytes,
                  "last-level cache size that sizes the arrays (default: what the CPU reports; a VM may report the host's)")
      ->check(CLI::Range(std::size_t{1} << 16, std::size_t{1} << 40));
  cal->add_flag("--quick", a.quick, "fp32 fusion patterns only and a looser noise target (about a minute)");
}

int calibrate_command(const CalibrateArgs& a) {
  if (a.llc_bytes) set_llc_bytes(*a.llc_bytes);
  const int threads = a.threads.value_or(default_threads());
  const std::size_t dram = a.array_mib ? *a.array_mib * (std::size_t(1) << 20) / 4 : default_bandwidth_elements();
  std::vector<Case> cases;
  for (DType d : {DType::fp64, DType::fp32, DType::bf16, DType::int8})
    cases.push_back(ceiling_case("peak", d, {{"kernel", "fma"}}, threads));
  const std::vector<std::string> kernels = {"copy", "triad", "read", "write"};
  for (auto& k : kernels) cases.push_back(ceiling_case("bandwidth", DType::fp32, {{"kernel", k}, {"n", std::to_string(dram)}}, threads));
  // Cache levels: a read over half of each data cache (per thread's share of shared levels).
  std::map<std::string, int> level_of_case;
  for (auto& cache : cpu_info().caches) {
    if (cache.type == "Instruction" || cache.bytes == 0) continue;
    // The last level at the size opmeter believes (--llc-bytes), not a VM's report of the host's.
    auto bytes = cache.bytes == cpu_info().llc_bytes ? llc_bytes() : cache.bytes;
    auto c = ceiling_case("bandwidth", DType::fp32, {{"kernel", "read"}, {"n", elements(bytes / 2)}}, threads);
    level_of_case[c.to_string()] = cache.level;
    cases.push_back(c);
  }
  Plan fusion = a.fusion_config.empty() ? load_suite("fusion", threads) : load_config_file(a.fusion_config, threads);
  for (auto& c : fusion.cases)
    if (!a.quick || c.dtype == DType::fp32) cases.push_back(c);

  RunOptions options;
  options.stopping = fusion.stopping;
  if (a.quick) {
    options.stopping.max_noise = 0.02;
    options.stopping.timeout_s = 2;
  }
  nlohmann::json settings = {{"source", "calibrate"}};
  if (llc_bytes_overridden()) settings["llc_bytes"] = llc_bytes();
  auto results = run_cases_in_dir(cases, options, {a.results_dir, false, "calibrate", settings, true});

  nlohmann::json peaks = nlohmann::json::object(), bw_kernels = nlohmann::json::object(),
                 caches = nlohmann::json::array();
  double memory = 0;
  for (auto& r : results) {
    if (r.status != Status::ok) continue;
    if (ceiling_of(r.kase.op) == CeilingKind::compute) peaks[std::string(to_string(r.kase.dtype))] = r.gflops;
    if (ceiling_of(r.kase.op) != CeilingKind::memory) continue;
    if (auto it = level_of_case.find(r.case_string); it != level_of_case.end()) {
      caches.push_back({{"level", it->second}, {"array_bytes", r.work.bytes_read}, {"read_gbps", r.gbps}});
    } else {
      bw_kernels[r.kase.get("kernel")] = r.gbps;
      memory = std::max(memory, r.gbps);
    }
  }
  if (peaks.empty() || memory <= 0) {
    fmt::print(stderr, "opmeter: calibrate could not measure the peak or the memory bandwidth; no profile written\n");
    return 1;
  }
  FusionThresholds t;
  nlohmann::json profile = {
      {"schema", kCalibrationSchema},
      {"created", utc_now_iso()},
      {"threads", threads},
      {"peak_gflops", peaks},
      {"bandwidth",
       {{"memory_gbps", memory},
        {"array_bytes", double(dram) * 4},
        {"kernels", bw_kernels},
        {"caches", caches},
        {"note", caches.empty() ? "cache sizes unknown on this machine: cache bandwidth not measured"
                                : "read bandwidth over half of each data cache level"}}},
      {"fusion", fusion_json(fusion_rows(results, t), t)},
      {"context", machine_context()},
  };
  write_atomically(a.out, dump_json(profile, 2) + "\n");
  fmt::print(stderr, "opmeter: calibration profile written to {}\n", a.out);
  return results_exit_code(results);
}

}  // namespace opmeter
