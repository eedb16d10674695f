#include "opmeter/context.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.hpp>
#include <cblas.h>

#include "context/build_info.hpp"
#include "engine/contention.hpp"
#include "opmeter/result.hpp"
#include "util/host_name.hpp"

namespace opmeter {

std::string read_first_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

namespace {

std::size_t parse_size(const std::string& s) {  // "48K", "1024K", "32M"
  if (s.empty()) return 0;
  std::size_t v = std::strtoull(s.c_str(), nullptr, 10);
  switch (s.back()) {
    case 'K': return v << 10;
    case 'M': return v << 20;
    case 'G': return v << 30;
    default: return v;
  }
}

}  // namespace

int cpu_list_count(const std::string& list) {
  int count = 0;
  std::istringstream ranges(list);
  std::string range;
  while (std::getline(ranges, range, ',')) {
    int from = 0, to = 0;
    char dash = 0;
    std::istringstream r(range);
    if (!(r >> from)) return 0;
    if (r >> dash) {
      if (dash != '-' || !(r >> to) || to < from) return 0;
    } else {
      to = from;
    }
    count += to - from + 1;
  }
  return count;
}

namespace {

std::vector<CacheLevel> read_caches() {
  std::vector<CacheLevel> caches;
  namespace fs = std::filesystem;
  std::error_code ec;
  for (int i = 0; i < 8; ++i) {
    auto dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}", i);
    if (!fs::exists(dir, ec)) break;
    CacheLevel c;
    c.level = std::atoi(read_first_line(dir + "/level").c_str());
    c.type = read_first_line(dir + "/type");
    c.bytes = parse_size(read_first_line(dir + "/size"));
    c.shared_by = cpu_list_count(read_first_line(dir + "/shared_cpu_list"));
    caches.push_back(c);
  }
  if (!caches.empty()) return caches;
  // Virtual machines often hide sysfs cache info; glibc's sysconf reads CPUID instead.
  auto add = [&](int level, const char* type, long bytes) {
    if (bytes > 0) caches.push_back({level, type, static_cast<std::size_t>(bytes)});
  };
  add(1, "Data", sysconf(_SC_LEVEL1_DCACHE_SIZE));
  add(2, "Unified", sysconf(_SC_LEVEL2_CACHE_SIZE));
  add(3, "Unified", sysconf(_SC_LEVEL3_CACHE_SIZE));
  return caches;
}

CpuInfo read_cpu_info() {
  CpuInfo info;
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  static const std::vector<std::string> kInteresting = {
      "sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_bf16",
      "avx512_vnni", "avx512_fp16", "avx_vnni", "amx_tile", "amx_bf16", "amx_int8", "asimd", "sve"};
  while (std::getline(f, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    auto key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    auto value = colon + 2 <= line.size() ? line.substr(colon + 2) : std::string();
    if (key == "model name" && info.model.empty()) info.model = value;
    if (key == "cpu MHz" && info.mhz == 0) info.mhz = std::atof(value.c_str());
    if ((key == "flags" || key == "Features") && info.flags.empty()) {
      std::istringstream words(value);
      std::string w;
      while (words >> w)
        if (std::find(kInteresting.begin(), kInteresting.end(), w) != kInteresting.end()) info.flags.push_back(w);
    }
  }
  info.logical_cpus = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  info.caches = read_caches();
  for (auto& c : info.caches)
    if (c.type != "Instruction") info.llc_bytes = std::max(info.llc_bytes, c.bytes);
  info.governor = read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  return info;
}

std::size_t meminfo_kb(const std::string& key) {
  std::ifstream f("/proc/meminfo");
  std::string k;
  std::size_t v = 0;
  std::string unit;
  while (f >> k >> v >> unit)
    if (k == key + ":") return v;
  return 0;
}

}  // namespace

bool CpuInfo::has(const std::string& flag) const {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

const CpuInfo& cpu_info() {
  static const CpuInfo info = read_cpu_info();
  return info;
}

namespace {
std::size_t g_llc_override = 0;
}  // namespace

std::size_t llc_bytes() {
  if (g_llc_override) return g_llc_override;
  // The cache a run can fill is bounded by the CPUs it runs on: no x86 part has more than 12 MiB
  // of L3 per core, so more than kMaxLlcPerCpu per usable CPU is a VM reporting its host's L3.
  return std::min(cpu_info().llc_bytes, kMaxLlcPerCpu * static_cast<std::size_t>(default_threads()));
}
std::string llc_note() {
  if (g_llc_override || llc_bytes() >= cpu_info().llc_bytes) return "";
  return fmt::format("the CPU reports a last-level cache of {} MiB, more than {} MiB for each of the {} usable CPUs "
                     "(a VM reporting its host's?): sizing by {} MiB; --llc-bytes sets it",
                     cpu_info().llc_bytes >> 20, kMaxLlcPerCpu >> 20, default_threads(), llc_bytes() >> 20);
}

void set_llc_bytes(std::size_t bytes) { g_llc_override = bytes; }
bool llc_bytes_overridden() { return g_llc_override != 0; }

std::size_t available_memory_bytes() { return meminfo_kb("MemAvailable") * 1024; }
std::size_t total_memory_bytes() { return meminfo_kb("MemTotal") * 1024; }

int default_threads() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return cpu_info().logical_cpus;
}

nlohmann::json machine_context() {
  const auto& cpu = cpu_info();
  const dnnl_version_t* dv = dnnl_version();

  nlohmann::json caches = nlohmann::json::array();
  for (auto& c : cpu.caches)
    caches.push_back({{"type", c.type}, {"level", c.level}, {"size", c.bytes}, {"num_sharing", c.shared_by}});
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");

  // Google Benchmark's context keys first, so tools that read that format find them.
  nlohmann::json ctx = {
      {"date", utc_now_iso()},
      {"host_name", host_name()},
      {"executable", "opmeter"},
      {"num_cpus", cpu.logical_cpus},
      {"mhz_per_cpu", static_cast<int>(cpu.mhz)},
      {"cpu_scaling_enabled", !cpu.governor.empty() && cpu.governor != "performance"},
      {"caches", caches},
      {"library_build_type", std::string(build_info::build_type) == "Debug" ? "debug" : "release"},
      {"opmeter",
       {{"version", build_info::version},
        {"git_sha", build_info::git_sha},
        {"build_type", build_info::build_type},
        {"compiler", build_info::compiler}}},
      {"cpu",
       {{"model", cpu.model},
        {"logical_cpus", cpu.logical_cpus},
        {"usable_cpus", default_threads()},
        {"isa_flags", cpu.flags},
        {"llc_bytes", cpu.llc_bytes},
        {"llc_bytes_used", llc_bytes()},
        {"mhz", cpu.mhz},
        {"governor", cpu.governor.empty() ? "unreadable" : cpu.governor}}},
      {"memory", {{"total_bytes", total_memory_bytes()}, {"available_bytes", available_memory_bytes()}}},
      {"libraries",
       {{"onednn", fmt::format("{}.{}.{} ({}, cpu runtime {})", dv->major, dv->minor, dv->patch, dv->hash,
                               dv->cpu_runtime == DNNL_RUNTIME_OMP ? "omp" : "other")},
        {"openblas", fmt::format("{} ({}, core {})", build_info::openblas_version, openblas_get_config(),
                                 openblas_get_corename())},
        {"openblas_coretype_env", coretype ? coretype : ""},
        {"yaml_cpp", build_info::yaml_cpp_version},
        {"fmt", FMT_VERSION},
        {"nlohmann_json", fmt::format("{}.{}.{}", NLOHMANN_JSON_VERSION_MAJOR, NLOHMANN_JSON_VERSION_MINOR,
                                      NLOHMANN_JSON_VERSION_PATCH)}}},
  };
  // How busy the machine was when the run began: a loaded machine's times are its share, not
  // the op's (each case also records what others used while it ran; see contention.hpp).
  if (auto load = read_load_average()) ctx["load"] = load_json(*load, default_threads());
  return ctx;
}

}  // namespace opmeter
