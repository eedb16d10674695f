#pragma once
// One result set that exercises every chart kind: a GEMM grid in two dtypes and two impls,
// ceilings, a memory-bound op in two impls, a fused/unfused pair, power readings, and cases that
// failed, were skipped or did not converge.
#include <fmt/format.h>

#include "results/result_set.hpp"
#include "tests/result_fixtures.hpp"

namespace opmeter::fixtures {

inline std::vector<Result> report_results() {
  std::vector<Result> rs;
  unsigned seed = 1;
  auto add = [&](Result r) { rs.push_back(std::move(r)); };
  add(measured("peak/opmeter/fp32/kernel=fma/threads=2", 1e-4, {5e7, 0, 0}, seed++));
  add(measured("peak/opmeter/bf16/kernel=dot/threads=2", 1e-4, {8e7, 0, 0}, seed++));
  add(measured("bandwidth/opmeter/fp32/kernel=copy,n=33554432/threads=2", 268435456 / 74e9,
               {0, 134217728, 134217728}, seed++));
  for (const char* dtype : {"fp32", "bf16"})
    for (int m : {256, 512, 1024})
      for (int n : {256, 512, 1024})
        for (const char* impl : {"onednn", "openblas"}) {
          if (std::string(impl) == "openblas" && std::string(dtype) == "bf16") continue;
          int k = m == n ? m : 256;
          auto w = gemm_work(m, n, k);
          double gflops = (std::string(impl) == "onednn" ? 300 : 200) * (std::string(dtype) == "bf16" ? 2 : 1) *
                          (0.5 + 0.5 * m / 1024.0);
          auto c = fmt::format("gemm/{}/{}/M={},N={},K={}/threads=2", impl, dtype, m, n, k);
          Result r = measured(c, time_at(w, gflops), w, seed++);
          r.avg_power_w = 100 + m / 64.0;
          rs.push_back(r);
        }
  for (int batch : {1, 4, 16}) {
    double bytes = batch * 256.0 * 1024 * 4 * 2;
    for (const char* impl : {"opmeter", "onednn"}) {
      double gbps = std::string(impl) == "opmeter" ? 40 : 30;
      Result r = measured(fmt::format("silu/{}/fp32/batch={},seq=256,hidden=1024/threads=2", impl, batch),
                          bytes / (gbps * 1e9), {batch * 256.0 * 1024 * 5, bytes / 2, bytes / 2}, seed++);
      r.avg_power_w = 60;
      rs.push_back(r);
    }
  }
  Work lin{2.0 * 256 * 1024 * 1024, 256 * 1024 * 4 + 1024 * 1024 * 4, 256 * 1024 * 4};
  add(measured("linear/onednn_unfused/fp32/batch=1,seq=256,hidden=1024,out=1024,act=gelu/threads=2", 1.3e-3, lin, seed++));
  add(measured("linear/onednn/fp32/batch=1,seq=256,hidden=1024,out=1024,act=gelu/threads=2", 1.0e-3, lin, seed++));
  add(measured("linear/opmeter/fp32/batch=1,seq=256,hidden=1024,out=1024,act=gelu/threads=2", 1.05e-3, lin, seed++));
  add(with_status("gemm/openblas/bf16/M=64,N=64,K=64/threads=2", Status::skipped, "openblas has no bf16 gemm"));
  add(with_status("gemm/reference/fp32/M=64,N=64,K=64/threads=2", Status::failed, "max error 3 > tolerance <1e-5>"));
  Result unconverged = measured("gemm/onednn/fp32/M=64,N=64,K=64/threads=2", 1e-6, gemm_work(64, 64, 64), seed++);
  unconverged.add_flag("unconverged");
  rs.push_back(unconverged);
  return rs;
}

// GPU cases: burst and sustained figures, and a telemetry timeline that reaches the power cap.
inline std::vector<Result> gpu_results() {
  std::vector<Result> rs;
  unsigned seed = 100;
  for (const char* dtype : {"bf16", "fp8"}) {
    auto w = gemm_work(8192, 8192, 8192);
    Result r = measured(fmt::format("gemm/cublaslt/{}/M=8192,N=8192,K=8192/device=cuda:0,hot", dtype),
                        time_at(w, std::string(dtype) == "bf16" ? 8.2e5 : 1.45e6), w, seed++);
    std::vector<double> slower;
    for (double s : r.samples) slower.push_back(s * 1.15);
    r.sustained = Sustained{slower, summarize(slower)};
    nlohmann::json t = {{"t_s", nlohmann::json::array()}, {"sm_mhz", nlohmann::json::array()},
                        {"power_w", nlohmann::json::array()}, {"temp_c", nlohmann::json::array()},
                        {"reasons", nlohmann::json::array()}};
    for (int i = 0; i < 40; ++i) {
      bool capped = i > 25;
      t["t_s"].push_back(0.05 * i);
      t["sm_mhz"].push_back(capped ? 1600 : 1980);
      t["power_w"].push_back(capped ? 699.0 : 120.0 + 20.0 * i);
      t["temp_c"].push_back(40 + i / 4);
      t["reasons"].push_back(capped ? 4 : 0);
    }
    r.telemetry = t;
    r.avg_power_w = 690;
    r.add_flag("power-capped");
    derive_rates(r);
    rs.push_back(r);
  }
  return rs;
}

inline nlohmann::json report_context() {
  return {{"cpu", {{"model", "Test CPU <model>"}, {"usable_cpus", 2}}},
          {"libraries", {{"onednn", "2.6.3"}}},
          {"run", {{"source", "suite quick"}, {"seed", 42}}}};
}

inline ResultSet report_set() {
  auto rs = report_results();
  for (auto& r : gpu_results()) rs.push_back(r);
  return ResultSet{"fixture-results", ResultsFormat::results_json, report_context(), rs};
}

}  // namespace opmeter::fixtures
