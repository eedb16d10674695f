#pragma once
// Synthetic GEMM samples on a known machine, for the model and planner tests: times follow a
// roofline with an efficiency that grows with size, plus a fixed cost and a little noise.
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "predict/ceilings.hpp"
#include "predict/sample.hpp"

namespace opmeter::predict::fixtures {

inline Ceilings cpu_ceilings() {
  Ceilings c;
  c.device = "cpu";
  c.peak_gflops = {{"fp32", 100.0}, {"bf16", 200.0}};
  c.memory_gbps = 20;
  c.threads = 1;
  c.cache_bytes = 8u << 20;
  c.source = "test ceilings";
  return c;
}

inline std::map<std::string, Ceilings> ceilings_map() { return {{"cpu", cpu_ceilings()}}; }

inline Sample gemm_sample(int m, int n, int k, const std::string& impl = "reference", const std::string& dtype = "fp32",
                          double time_s = 0) {
  Sample s;
  s.case_string = fmt::format("gemm/{}/{}/M={},N={},K={}/threads=1", impl, dtype, m, n, k);
  s.kase = parse_case(s.case_string);
  s.case_string = s.kase.to_string();
  s.flops = 2.0 * m * n * k;
  s.bytes = 4.0 * (double(m) * k + double(k) * n + double(m) * n);
  s.time_s = time_s;
  return s;
}

// A "measured" time: roofline at an efficiency that rises with the smallest dimension, plus 3 us.
inline double synthetic_time(const Sample& s, unsigned seed) {
  const auto& c = s.kase;
  double smallest = std::min({double(c.get_int("M")), double(c.get_int("N")), double(c.get_int("K"))});
  double efficiency = 0.2 + 0.6 * smallest / (smallest + 64);
  double t = std::max(s.flops / (100e9 * efficiency), s.bytes / 20e9) + 3e-6;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> noise(-0.03, 0.03);
  return t * (1 + noise(rng));
}

// `count` GEMM shapes drawn from sizes 16..512, measured synthetically.
inline std::vector<Sample> gemm_samples(int count, const std::string& impl = "reference", const std::string& dtype = "fp32",
                                        unsigned seed = 7, int lo = 16, int hi = 512) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(std::log2(double(lo)), std::log2(double(hi)));
  std::vector<Sample> out;
  for (int i = 0; i < count; ++i) {
    auto dim = [&] { return static_cast<int>(std::round(std::exp2(u(rng)))); };
    Sample s = gemm_sample(dim(), dim(), dim(), impl, dtype);
    s.time_s = synthetic_time(s, seed * 1000 + static_cast<unsigned>(i));
    s.source = "synthetic";
    out.push_back(s);
  }
  return out;
}

}  // namespace opmeter::predict::fixtures
