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
};

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

// The machine and build context stored with every results file.
nlohmann::json machine_context();

}  // namespace opmeter
