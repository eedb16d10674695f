#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace opmeter {

struct CacheLevel {
  int level = 0;
  std::string type;  // Data, Instruction, Unified
  std::size_t bytes = 0;
  int shared_by = 0;  // logical CPUs sharing one instance (sysfs shared_cpu_list); 0: unknown
};

// How many CPUs a sysfs CPU list names ("0-1,4" -> 3); 0 when malformed.
int cpu_list_count(const std::string& list);

struct CpuInfo {
  std::string model;
  int logical_cpus = 1;
  std::vector<std::string> flags;        // ISA flags relevant to ML kernels
  std::vector<CacheLevel> caches;
  std::size_t llc_bytes = 0;              // last-level cache (0 when unknown)
  double mhz = 0;
  std::string governor;                   // empty when unreadable
  bool has(const std::string& flag) const;
};

const CpuInfo& cpu_info();                // read once
std::size_t available_memory_bytes();     // MemAvailable
std::size_t total_memory_bytes();
int default_threads();                    // all logical CPUs this process may use

// The last-level cache size that sizes bandwidth arrays and cold-cache copies: the override
// (--llc-bytes, or a config's llc_bytes) when set, else what the CPU reports, at most
// kMaxLlcPerCpu per usable CPU. A VM's CPUID may report the host's whole L3 (508 MiB on 2 vCPUs).
inline constexpr std::size_t kMaxLlcPerCpu = std::size_t{48} << 20;
std::size_t llc_bytes();
std::string llc_note();                   // why llc_bytes() is less than the CPU reports, or ""
void set_llc_bytes(std::size_t bytes);    // 0: back to what the CPU reports
bool llc_bytes_overridden();

// The first line of a small text file (sysfs entries, lock files); "" when it cannot be read.
std::string read_first_line(const std::string& path);

// The machine and build context stored with every results file.
nlohmann::json machine_context();

}  // namespace opmeter
