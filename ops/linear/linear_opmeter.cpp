// opmeter's fused linear layer: the output is computed in tiles that stay in cache, and each tile
// gets bias and activation while it is still there, so y is written once.
//   fp32: the tile products are oneDNN's sgemm, called single-threaded per tile from our OpenMP
//         loop, LayerNorm per block of rows (no intermediate reaches memory);
//   bf16: opmeter's AMX GEMM (ops/tensor/amx_gemm.hpp) on W as stored, bias and activation on
//         each 32 x 32 block of fp32 sums before it is rounded; LayerNorm first, into a bf16
//         buffer in memory (as a bf16 model stores it), which the GEMM then reads (in place, or
//         copied into tile order: amx_gemm_a_tiles); needs AMX-BF16 and every size a multiple of
//         32 (oneDNN 2.6 exposes no bf16 GEMM call). Model pipelines pick it (own_kernel) for such
//         bf16 layers on AMX CPUs.
#include <omp.h>

#include <oneapi/dnnl/dnnl.h>

#include <fmt/format.h>

#include "ops/linear/linear.hpp"
#include "ops/tensor/amx_projection.hpp"

namespace opmeter::linear {
namespace {
constexpr std::size_t kTileRows = 512, kTileCols = 256;  // C tile: 512 KiB, in a core's L2

class OpmeterLinear : public HostImpl<LinearOp> {
 public:
  void prepare() override {
    auto s = shape_of(case_);
    if (case_.dtype == DType::bf16) {
      projection_.prepare(s.rows, {s.hidden}, s.hidden * s.out);
      if (s.layernorm) xhat_ = Buffer(s.rows * s.hidden * 2);
      return;
    }
    scratch_.clear();
    for (int t = 0; t < case_.threads; ++t) {
      Scratch sc{Buffer(kTileRows * kTileCols * sizeof(float)), Buffer()};
      if (s.layernorm) sc.xhat = Buffer(kTileRows * s.hidden * sizeof(float));
      scratch_.push_back(std::move(sc));
    }
  }

  void run(std::size_t copy) override {
    if (case_.dtype == DType::bf16) return run_bf16(copy);
    const auto s = shape_of(case_);
    const auto& k = tensor::kernels();
    const float* x = static_cast<const float*>(in(copy, kX));
    const float* w = static_cast<const float*>(in(copy, kW));
    const float* bias = vec(host_inputs(copy), kBias);
    const float* gamma = s.layernorm ? vec(host_inputs(copy), kGamma) : nullptr;
    const float* beta = s.layernorm ? vec(host_inputs(copy), kBeta) : nullptr;
    float* y = static_cast<float*>(out(copy));
    const std::size_t blocks = (s.rows + kTileRows - 1) / kTileRows;
    int failures = 0;
#pragma omp parallel for schedule(dynamic, 1) reduction(+ : failures)
    for (std::size_t b = 0; b < blocks; ++b) {
      auto& sc = scratch_[static_cast<std::size_t>(omp_get_thread_num())];
      const std::size_t r0 = b * kTileRows, mr = std::min(kTileRows, s.rows - r0);
      const float* a = x + r0 * s.hidden;
      if (s.layernorm) {  // nested in our parallel loop: runs on this thread only
        k.layernorm(false, a, sc.xhat.data(), gamma, beta, mr, s.hidden);
        a = sc.xhat.as<float>();
      }
      for (std::size_t j0 = 0; j0 < s.out; j0 += kTileCols) {
        const std::size_t nr = std::min(kTileCols, s.out - j0);
        auto st = dnnl_sgemm('N', 'T', dnnl_dim_t(mr), dnnl_dim_t(nr), dnnl_dim_t(s.hidden), 1.0f, a,
                             dnnl_dim_t(s.hidden), w + j0 * s.hidden, dnnl_dim_t(s.hidden), 0.0f, sc.tile.as<float>(),
                             dnnl_dim_t(kTileCols));
        if (st != dnnl_success) ++failures;
        k.epilogue(s.act, sc.tile.as<float>(), kTileCols, bias + j0, false, y + r0 * s.out + j0, s.out, mr, nr);
      }
    }
    if (failures) throw std::runtime_error(fmt::format("oneDNN sgemm failed on {} tiles", failures));
  }

  std::map<std::string, std::string> details() const override {
    if (case_.dtype == DType::bf16)
      return {{"isa", "amx_bf16"}, {"kernel", "opmeter's AMX GEMM on W as stored; bias and activation per 32x32 block"}};
    return {{"isa", tensor::kernels().isa}, {"tile", fmt::format("{}x{}", kTileRows, kTileCols)}};
  }

 private:
  void run_bf16(std::size_t copy) {
    const auto s = shape_of(case_);
    const void* x = in(copy, kX);
    if (s.layernorm) {
      tensor::kernels().layernorm(true, x, xhat_.data(), vec(host_inputs(copy), kGamma), vec(host_inputs(copy), kBeta),
                                  s.rows, s.hidden);
      x = xhat_.data();
    }
    projection_.run(x, in(copy, kW), vec(host_inputs(copy), kBias), out(copy), s.hidden, s.out, s.act);
  }

  struct Scratch {
    Buffer tile, xhat;
  };
  std::vector<Scratch> scratch_;
  tensor::AmxProjection projection_;  // bf16
  Buffer xhat_;                       // bf16: LayerNorm's output
};

Support supports(const Case& c) {
  if (c.dtype != DType::bf16) return Support::yes();
  const auto s = shape_of(c);
  if (!tensor::AmxProjection::fits(s.rows, s.hidden, s.out))
    return Support::no(fmt::format("opmeter's bf16 linear runs on AMX-BF16 with rows, hidden and out multiples of 32 "
                                   "(here {}, {}, {}{})", s.rows, s.hidden, s.out,
                                   tensor::AmxProjection::fits(32, 32, 32) ? "" : "; this CPU has no usable AMX-BF16"));
  return Support::yes();
}

const bool registered = [] {
  for (auto& op : linear_ops())
    Registry::global().add(ImplDef{
        .op = op,
        .impl = "opmeter",
        .preference = ImplDef::own_kernel,
        .summary = "cache-sized GEMM tiles with bias, activation (and LayerNorm) fused as epilogue/prologue; bf16 on "
                   "opmeter's AMX GEMM",
        .dtypes = {DType::fp32, DType::bf16},
        .supports = supports,
        .make = [] { return std::make_unique<OpmeterLinear>(); },
    });
  return true;
}();

}  // namespace
}  // namespace opmeter::linear
