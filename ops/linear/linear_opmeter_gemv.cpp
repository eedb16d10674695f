// opmeter's bf16 linear layer at decode (impl `opmeter_gemv`, up to kMaxRows rows): y = act(x W^T
// + b) as a GEMV (gemv_bf16.hpp) that streams each channel's row of W once for all the rows, the
// threads splitting the output channels and finishing their columns (bias, activation) while they
// are in cache; ln_linear's LayerNorm first, rounded to bf16 as a bf16 model keeps it. At decode a
// layer is a read of its weights: this is the bf16 baseline a quantized layer's speedup is read
// against where oneDNN's matmul, made for GEMMs, reads them at a fraction of that speed.
#include <algorithm>

#include <fmt/format.h>

#include "ops/linear/gemv_bf16.hpp"
#include "ops/linear/linear.hpp"

namespace opmeter::linear {
namespace {
constexpr std::size_t kMaxRows = 16;        // a GEMV's rows: decode, small batches
constexpr std::size_t kChannelBlock = 64;  // output channels per unit of a thread's work

class OpmeterGemvLinear : public HostImpl<LinearOp> {
 public:
  void prepare() override {
    const auto s = shape_of(case_);
    tile_.assign(s.rows * s.out, 0.f);
    xb_.assign(s.layernorm ? s.rows * s.hidden : 0, 0);
    xp_.assign(gemv_bf16_avx512_usable() ? 0 : s.rows * s.hidden, 0.f);
  }

  void run(std::size_t copy) override {
    const auto s = shape_of(case_);
    const auto& tk = tensor::kernels();
    const auto* x = static_cast<const std::uint16_t*>(in(copy, kX));
    const auto* w = static_cast<const std::uint16_t*>(in(copy, kW));
    const float* bias = vec(host_inputs(copy), kBias);
    auto* y = static_cast<std::uint16_t*>(out(copy));
    const std::size_t h = s.hidden, blocks = (s.out + kChannelBlock - 1) / kChannelBlock;
    if (s.layernorm)  // in fp32, rounded to bf16 as a bf16 model stores it
      tk.layernorm(true, x, xb_.data(), vec(host_inputs(copy), kGamma), vec(host_inputs(copy), kBeta), s.rows, h);
    const std::uint16_t* xb = s.layernorm ? xb_.data() : x;
    if (!xp_.empty()) gemv_bf16_x_for_avx2(xb, s.rows, h, xp_.data());  // once for all the blocks
#pragma omp parallel for schedule(static)
    for (std::size_t b = 0; b < blocks; ++b) {
      const std::size_t j0 = b * kChannelBlock, j1 = std::min(s.out, j0 + kChannelBlock);
      gemv_bf16(xb, xp_.data(), s.rows, w, h, j0, j1, tile_.data(), s.out);
      tk.epilogue(s.act, tile_.data() + j0, s.out, bias + j0, true, y + j0, s.out, s.rows, j1 - j0);
    }
  }

  std::map<std::string, std::string> details() const override {
    return {{"kernel", gemv_bf16_kernel()}};
  }

 private:
  std::vector<float> tile_;
  std::vector<std::uint16_t> xb_;  // ln_linear: LayerNorm's output
  std::vector<float> xp_;          // the AVX2 kernel's fp32 x (gemv_bf16_x_for_avx2)
};

Support supports(const Case& c) {
  if (!gemv_bf16_usable()) return Support::no("opmeter_gemv needs AVX2 and FMA, or AVX512_BF16");
  if (shape_of(c).rows > kMaxRows)
    return Support::no(fmt::format("opmeter_gemv is a GEMV for decode: up to {} rows (batch x seq); onednn runs more", kMaxRows));
  return Support::yes();
}

const bool registered = [] {
  for (auto& op : linear_ops())
    Registry::global().add(ImplDef{
        .op = op,
        .impl = "opmeter_gemv",
        .summary = "bf16 GEMV for decode (up to 16 rows): each channel's weights streamed once for all rows, bias and "
                   "activation as they finish",
        .dtypes = {DType::bf16},
        .supports = supports,
        .make = [] { return std::make_unique<OpmeterGemvLinear>(); },
    });
  return true;
}();

}  // namespace
}  // namespace opmeter::linear
