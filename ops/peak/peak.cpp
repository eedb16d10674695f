// The peak op and its one impl, `opmeter`: the machine's attainable FLOP/s per dtype.
#include "ops/peak/peak.hpp"

#include <omp.h>

#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "opmeter/cuda/kernel_gate.hpp"

#include "opmeter/backend.hpp"
#include "opmeter/context.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "engine/runner.hpp"
#include "ops/tensor/amx.hpp"

namespace opmeter::peak {

double fma_expected(std::int64_t iters, int lanes) {
  // acc <- acc * a + b converges to b / (1 - a) = 1 from its start x0: 1 + (x0 - 1) a^n.
  double an = std::pow(static_cast<double>(kFmaA), static_cast<double>(iters)), sum = 0;
  for (int j = 0; j < kChains; ++j) sum += 1 + (chain_start(j) - 1) * an;
  return sum * lanes;
}

double dot_bf16_expected(std::int64_t iters, int lanes) {
  double sum = 0;
  for (int j = 0; j < kChains; ++j) sum += chain_start(j) + static_cast<double>(iters) * 2 * 0x1p-10;
  return sum * lanes;
}

double dot_int8_expected(std::int64_t iters, int lanes) {
  double sum = 0;
  for (int j = 0; j < kChains; ++j) sum += j + static_cast<double>(iters) * 4;
  return sum * lanes;
}

bool amx_usable(DType d) {
  if (d == DType::bf16) return amx::bf16_usable();
  if (d == DType::int8) return amx::int8_usable();
  return false;
}

std::optional<Kernel> select_kernel(DType d, std::string_view kernel) {
  if (kernel == "amx") return amx_usable(d) ? amx_kernel(d) : std::nullopt;
  const auto& cpu = cpu_info();
  bool avx512 = cpu.has("avx512f") && cpu.has("avx512bw") && cpu.has("avx512vl");
  if (avx512) {
    bool ok = d == DType::fp32 || d == DType::fp64 || (d == DType::bf16 && cpu.has("avx512_bf16")) ||
              (d == DType::int8 && cpu.has("avx512_vnni"));
    if (ok) return avx512_kernel(d);
  }
  if (cpu.has("avx2") && cpu.has("fma")) {
    bool ok = d == DType::fp32 || d == DType::fp64 || (d == DType::int8 && cpu.has("avx_vnni"));
    if (ok) return avx2_kernel(d);
  }
  return std::nullopt;
}

std::vector<std::string> kernels_for(DType d, bool on_cuda) {
  if (on_cuda && gpu::tensor_dtype(d)) return {"mma", "wgmma"};
  // On an AMX CPU the tile unit outruns the vector dot products: both run, the faster is the ceiling.
  if (!on_cuda && amx_usable(d)) return {"fma", "amx"};
  return {"fma"};
}

cuda::Kernels cuda_kernels(const Case& c) {
  switch (gpu::parse_kind(c.get("kernel")).value_or(gpu::Kind::fma)) {
    case gpu::Kind::fma: return cuda::Kernels::plain;
    case gpu::Kind::mma: return c.dtype == DType::fp8_e4m3 ? cuda::Kernels::fp8_mma : cuda::Kernels::mma;
    case gpu::Kind::wgmma: return cuda::Kernels::wgmma;
  }
  return cuda::Kernels::plain;
}

namespace {

class PeakImpl : public Impl {
 public:
  void setup(const Case& c, const SetupOptions&) override {
    auto k = select_kernel(c.dtype, c.get("kernel"));
    if (!k) throw Unsupported(fmt::format("this CPU has no {} {} kernel opmeter knows", to_string(c.dtype),
                                          c.get("kernel") == "amx" ? "AMX" : "multiply-add"));
    kernel_ = *k;
    threads_ = c.threads;
    sink_.assign(static_cast<std::size_t>(threads_) * 8, 0.0);
  }
  void run(std::size_t) override { run_iters(kIters); }
  Check verify(std::uint64_t) override {
    std::fill(sink_.begin(), sink_.end(), std::nan(""));
    run_iters(kCheckIters);
    double expected = kernel_.expected(kCheckIters);
    Check check;
    check.tolerance = 1e-3;
    check.max_error = 0;
    for (int t = 0; t < threads_; ++t) {
      double got = sink_[static_cast<std::size_t>(t) * 8];
      double err = std::fabs(got - expected) / std::fabs(expected);
      check.max_error = std::isnan(err) ? INFINITY : std::max(err, check.max_error);
    }
    check.ok = check.max_error <= check.tolerance;
    check.detail = fmt::format("checksum relative error {:.3g} after {} iterations", check.max_error, kCheckIters);
    return check;
  }
  std::map<std::string, std::string> details() const override { return {{"isa", kernel_.isa}}; }

 private:
  void run_iters(std::int64_t iters) {
#pragma omp parallel num_threads(threads_)
    {
      // One slot per cache line, so threads do not share one.
      sink_[static_cast<std::size_t>(omp_get_thread_num()) * 8] = kernel_.fn(iters);
    }
  }
  Kernel kernel_{};
  int threads_ = 1;
  std::vector<double> sink_;
};

Work peak_work(const Case& c) {
  if (!c.on_host()) {
    auto k = gpu::parse_kind(c.get("kernel"));
    return {k ? gpu::flops(c.dtype, *k) : 0.0, 0, 0};
  }
  auto k = select_kernel(c.dtype, c.get("kernel"));
  if (!k) return {};
  return {static_cast<double>(c.threads) * static_cast<double>(kIters) * k->ops_per_iter, 0, 0};
}

// The cases measuring the peak of `dtype` where `like` runs: each kernel of the dtype there (a GPU
// skips those it lacks, with the reason), by this op's impl on like's backend.
std::vector<Case> peak_cases(DType dtype, const Case& like, std::size_t) {
  const std::string backend = backend_of(like).name();
  std::vector<Case> out;
  for (auto* impl : Registry::global().impls_of("peak")) {
    if (!impl->runs_on(backend) || impl->on_request) continue;
    for (auto& kernel : kernels_for(dtype, !like.on_host())) {
      Case c = ceiling_case("peak", dtype, {{"kernel", kernel}}, like.threads);
      c.impl = impl->impl;
      c.device = like.device;
      out.push_back(c);
    }
    break;
  }
  return out;
}

OpRegistrar reg_op({
    .name = "peak",
    .summary = "attainable multiply-add throughput per dtype (CPU: FMA / bf16 dot / int8 dot, AMX tiles; CUDA: FMA, mma.sync, wgmma)",
    .params = {"kernel"},
    .example = {{"kernel", "fma"}},
    .work = peak_work,
    .footprint = [](const Case&) { return 0.0; },
    .validate =
        [](const Case& c) {
          const std::string& name = c.get("kernel");
          if (name == "amx") {
            if (!c.on_host()) throw CaseError("peak kernel amx runs on the CPU (AMX tiles); CUDA devices use kernel=fma, mma or wgmma");
            if (c.dtype != DType::bf16 && c.dtype != DType::int8)
              throw CaseError(fmt::format("peak kernel amx is for bf16 and int8 (AMX tiles); {} uses kernel=fma", to_string(c.dtype)));
            return;
          }
          auto kind = gpu::parse_kind(name);
          if (!kind) throw CaseError(fmt::format("peak kernel '{}' unknown: expected fma, mma, wgmma or amx", name));
          if (c.on_host()) {
            if (*kind != gpu::Kind::fma)
              throw CaseError(fmt::format("peak kernel {} runs on CUDA devices (device=cuda:N); the CPU peak is kernel=fma "
                                          "(bf16, int8: also kernel=amx)", name));
            return;
          }
          const auto dtype = to_string(c.dtype);
          if (c.dtype != DType::fp32 && !gpu::tensor_dtype(c.dtype))
            throw CaseError(fmt::format("peak on CUDA has no {} kernel: fp32 uses kernel=fma; tf32, fp16, bf16, fp8 and int8 use "
                                        "kernel=mma or kernel=wgmma", dtype));
          if (*kind == gpu::Kind::fma && c.dtype != DType::fp32)
            throw CaseError(fmt::format("peak kernel fma on CUDA is fp32 only; {} runs on tensor cores: kernel=mma or kernel=wgmma", dtype));
          if (*kind != gpu::Kind::fma && c.dtype == DType::fp32)
            throw CaseError(fmt::format("peak kernel {} is for the tensor-core dtypes (tf32, fp16, bf16, fp8, int8); fp32 uses kernel=fma", name));
        },
    .uses_memory = false,
    .peak_dtype = {},
    .ceiling = CeilingKind::compute,
    .ceiling_cases = peak_cases,
    // A GPU's peak has one kernel per dtype family: fma for fp32, mma and wgmma for the
    // tensor-core dtypes (wgmma is skipped off Hopper, with the reason). An AMX CPU's bf16 and
    // int8: fma and amx.
    .variants =
        [](const Params&, DType d, const Case& like) {
          std::vector<Params> out;
          for (auto& kernel : kernels_for(d, !like.on_host())) out.push_back({{"kernel", kernel}});
          return out;
        },
    // `opmeter check`: each kernel's checksum (variants: a GPU's kernels of the dtype).
    .check_shapes = {{{"kernel", "fma"}}},
});

ImplRegistrar reg_impl({
    .op = "peak",
    .impl = "opmeter",
    .preference = ImplDef::own_kernel,
    .summary = "opmeter's own multiply-add chains (AVX-512 or AVX2, chosen at run time; kernel=amx: AMX tile dot products)",
    .dtypes = {DType::fp64, DType::fp32, DType::bf16, DType::int8},
    .supports = [](const Case& c) {
      if (c.get("kernel") == "amx" && !amx_usable(c.dtype))
        return Support::no(fmt::format("this CPU lacks AMX for {} (or Linux did not grant the tile state)", to_string(c.dtype)));
      if (!select_kernel(c.dtype, c.get("kernel"))) return Support::no(fmt::format("this CPU lacks the ISA for a {} peak kernel", to_string(c.dtype)));
      return Support::yes();
    },
    .make = [] { return std::make_unique<PeakImpl>(); },
});

}  // namespace
}  // namespace opmeter::peak
