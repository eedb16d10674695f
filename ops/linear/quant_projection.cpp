// A weight-only quantized projection over blocks of rows (see quant_projection.hpp).
#include "ops/linear/quant_projection.hpp"

#include <algorithm>
#include <cstring>

#include "opmeter/dtype.hpp"

namespace opmeter::linear {
namespace {
constexpr std::size_t kRowBlock = 64;      // rows whose weights are decoded once (per pass of 8)
constexpr std::size_t kChannelBlock = 16;  // output channels per unit of a thread's work
}  // namespace

void QuantProjection::prepare(const quant::QuantizedWeights& q, bool bf16, std::size_t rows, std::size_t copies) {
  auto kernels = quant_layer_kernels(q, bf16, rows);
  path_ = kernels.int4;
  packed_ = std::move(kernels.packed);
  weight_copies_.assign(std::max<std::size_t>(copies, 1) - 1, packed_);
  held_ = HeldBytes();  // first, so that the new count never stands beside the old one
  held_ = HeldBytes(this->copies() * packed_.held_bytes());
  bf16_ = bf16;
}

void QuantProjection::run(std::size_t copy, const void* x, std::size_t rows, const float* bias, tensor::Act act,
                          const void* residual, void* y) {
  const auto& qk = quant_kernels();
  const PackedWeights& w = copy == 0 ? packed_ : weight_copies_.at(copy - 1);
  const auto& tk = tensor::kernels();
  const std::size_t h = packed_.hidden, out = packed_.out, e = bf16_ ? 2 : 4;
  const std::size_t groups = packed_.format == quant::WeightFormat::int4 ? h / packed_.group : 0;
  const std::size_t block_rows = std::min(kRowBlock, rows), blocks = (out + kChannelBlock - 1) / kChannelBlock;
  const Int4Path path = call_path(rows);
  const bool int8_limbs = packed_.quads, limbs = path == Int4Path::limbs || int8_limbs;
  const bool fp8_bf16 = packed_.fp8_runs;  // reads the bf16 rows in place, no group sums
  const bool bf16_dot = limbs || path == Int4Path::amx || path == Int4Path::vector_bf16 || fp8_bf16;
  const std::size_t limb_group = int8_limbs ? kInt8LimbGroup : packed_.group;
  xs_.resize(bf16_dot ? 0 : block_rows * h);
  tile_.resize(block_rows * out);
  xsum_.resize(std::max<std::size_t>(1, block_rows * groups));
  const auto* xb = static_cast<const std::uint16_t*>(x);
  if (limbs) limb_x_.resize(block_rows, h, limb_group, limb_form(qk, !int8_limbs));
  for (std::size_t r0 = 0; r0 < rows; r0 += kRowBlock) {
    const std::size_t mr = std::min(kRowBlock, rows - r0);
#pragma omp parallel
    {
#pragma omp for schedule(static)
      for (std::size_t i = 0; i < mr; ++i) {
        if (bf16_dot) {  // the kernel reads the bf16 rows in place: only their group sums here
          if (groups > 0) group_sums(xb + (r0 + i) * h, h, packed_.group, xsum_.data() + i * groups);
          if (limbs) split_limbs(xb + r0 * h, i, h, limb_group, limb_x_);
          continue;
        }
        float* xi = xs_.data() + i * h;
        if (bf16_) {
          const auto* src = xb + (r0 + i) * h;
          for (std::size_t k = 0; k < h; ++k) xi[k] = from_bf16(src[k]);
        } else {
          std::memcpy(xi, static_cast<const float*>(x) + (r0 + i) * h, h * sizeof(float));
        }
        if (groups > 0) group_sums(xi, h, packed_.group, xsum_.data() + i * groups);
      }
#pragma omp for schedule(static)
      for (std::size_t b = 0; b < blocks; ++b) {
        const std::size_t j0 = b * kChannelBlock, j1 = std::min(out, j0 + kChannelBlock);
        if (int8_limbs) qk.int8_limbs(w, limb_x_, mr, j0, j1, tile_.data(), out);
        else if (limbs) qk.int4_limbs(w, limb_x_, xsum_.data(), mr, j0, j1, tile_.data(), out);
        else if (fp8_bf16) qk.fp8_bf16(w, xb + r0 * h, mr, j0, j1, tile_.data(), out);
        else if (bf16_dot) qk.int4_bf16(w, xb + r0 * h, xsum_.data(), mr, j0, j1, tile_.data(), out);
        else qk.weight_only(w, xs_.data(), xsum_.data(), mr, j0, j1, tile_.data(), out);
        if (residual)  // added before the epilogue's bias: one rounding of the sum in bf16
          for (std::size_t i = 0; i < mr; ++i)
            for (std::size_t j = j0; j < j1; ++j) {
              const std::size_t at = (r0 + i) * out + j;
              tile_[i * out + j] += bf16_ ? from_bf16(static_cast<const std::uint16_t*>(residual)[at])
                                          : static_cast<const float*>(residual)[at];
            }
        tk.epilogue(act, tile_.data() + j0, out, bias + j0, bf16_, static_cast<char*>(y) + (r0 * out + j0) * e, out, mr,
                    j1 - j0);
      }
    }
  }
}

}  // namespace opmeter::linear
