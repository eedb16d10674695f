#include "context/openblas_core.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include <fmt/format.h>

namespace opmeter {

namespace {

constexpr const char* kIsaNames[] = {"", "SSE", "AVX", "AVX2", "AVX-512"};

bool has(const std::vector<std::string>& flags, const char* flag) {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

}  // namespace

int openblas_core_level(const std::string& core) {
  // OpenBLAS's x86-64 DYNAMIC_ARCH families (driver/others/dynamic.c's corename table).
  static const std::array<std::pair<const char*, int>, 22> kCores = {{
      {"Prescott", 1},    {"Core2", 1},          {"Penryn", 1},       {"Dunnington", 1}, {"Nehalem", 1},
      {"Atom", 1},        {"Opteron", 1},        {"Opteron_SSE3", 1}, {"Barcelona", 1},  {"Nano", 1},
      {"Bobcat", 1},      {"Katmai", 1},         {"Sandybridge", 2},  {"Bulldozer", 2},  {"Piledriver", 2},
      {"Steamroller", 2}, {"Excavator", 3},      {"Haswell", 3},      {"Zen", 3},        {"SkylakeX", 4},
      {"Cooperlake", 4},  {"SapphireRapids", 4},
  }};
  for (auto& [name, level] : kCores)
    if (core == name) return level;
  return 0;
}

int cpu_vector_level(const std::vector<std::string>& flags) {
  if (has(flags, "avx512f")) return 4;
  if (has(flags, "avx2") && has(flags, "fma")) return 3;
  if (has(flags, "avx")) return 2;
  return 1;
}

std::string openblas_fallback_note(const std::string& core, const std::vector<std::string>& flags) {
  const int kernels = openblas_core_level(core), cpu = cpu_vector_level(flags);
  if (kernels == 0 || kernels >= cpu) return "";
  const char* fits = cpu == 4 ? "SkylakeX" : cpu == 3 ? "Haswell" : "Sandybridge";
  return fmt::format(
      "OpenBLAS runs its {} kernels ({}) on this {} CPU, which it does not recognise: its rows show "
      "that fallback, not the machine (OPENBLAS_CORETYPE={} before running picks the CPU's own)",
      core, kIsaNames[kernels], kIsaNames[cpu], fits);
}

}  // namespace opmeter
