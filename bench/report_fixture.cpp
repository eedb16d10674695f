// Writes two results directories of N synthetic cases each (default 10,000), 50 raw samples per
// case, for timing `opmeter report` and `opmeter compare` at scale (bench/report_speed.sh).
// NEW is BASE with every 7th case 10% slower and every 11th 10% faster.
#include <filesystem>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "opmeter/context.hpp"
#include "report/reporters.hpp"
#include "opmeter/stats.hpp"

using namespace opmeter;

namespace {

std::vector<std::string> case_strings(std::size_t n) {
  std::vector<std::string> out;
  const int sizes[] = {128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096};
  for (const char* dtype : {"fp32", "bf16", "int8"})
    for (const char* impl : {"onednn", "reference"})
      for (int m : sizes)
        for (int nn : sizes)
          for (int k : sizes)
            if (out.size() < n * 6 / 10) out.push_back(fmt::format("gemm/{}/{}/M={},N={},K={}/threads=2", impl, dtype, m, nn, k));
  for (int batch = 1; out.size() < n; ++batch)
    for (const char* op : {"silu", "gelu", "relu", "sigmoid", "layernorm", "rmsnorm", "softmax", "batchnorm"})
      for (const char* impl : {"opmeter", "onednn"})
        if (out.size() < n) out.push_back(fmt::format("{}/{}/fp32/batch={},seq=256,hidden=1024/threads=2", op, impl, batch));
  return out;
}

Result synthetic(const std::string& c, double scale, std::mt19937& rng) {
  Result r;
  r.kase = parse_case(c);
  r.case_string = c;
  r.status = Status::ok;
  double elems = 1;
  for (auto& [k, v] : r.kase.params) elems *= std::stod(v);
  bool gemm = r.kase.op == "gemm";
  double m = gemm ? std::stod(r.kase.get("M")) * std::stod(r.kase.get("N")) : elems;
  r.work = gemm ? Work{2 * elems, 4 * (elems / std::stod(r.kase.get("N")) + elems / std::stod(r.kase.get("M"))), 4 * m}
                : Work{5 * elems, 4 * elems, 4 * elems};
  double rate = gemm ? 300e9 : 40e9;
  double t = (gemm ? r.work.flops : r.work.bytes()) / rate * scale;
  std::normal_distribution<double> noise(1.0, 0.01);
  for (int i = 0; i < 50; ++i) r.samples.push_back(t * noise(rng));
  r.summary = summarize(r.samples);
  r.calls = r.samples.size();
  derive_rates(r);
  r.peak_gflops = 450;
  apply_peak(r, 450);
  apply_roofline(r, 74);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = argc > 1 ? argv[1] : "report-bench";
  std::size_t n = argc > 2 ? std::stoul(argv[2]) : 10000;
  auto cases = case_strings(n);
  std::mt19937 rng(7);
  for (const char* side : {"base", "new"}) {
    std::vector<Result> results;
    for (std::size_t i = 0; i < cases.size(); ++i) {
      double scale = std::string(side) == "new" ? (i % 7 == 0 ? 1.10 : i % 11 == 0 ? 0.90 : 1.0) : 1.0;
      results.push_back(synthetic(cases[i], scale, rng));
    }
    auto path = std::filesystem::path(dir) / side;
    std::filesystem::create_directories(path);
    write_atomically((path / "results.json").string(), gbench_json(machine_context(), results).dump(2) + "\n");
    fmt::print("{}: {} cases\n", path.string(), results.size());
  }
}
