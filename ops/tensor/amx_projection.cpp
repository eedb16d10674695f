#include "ops/tensor/amx_projection.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include <fmt/format.h>

namespace opmeter::tensor {

bool AmxProjection::fits(std::size_t rows, std::size_t in, std::size_t out) { return amx_gemm_fits(rows, in, out); }

void AmxProjection::prepare(std::size_t rows, std::initializer_list<std::size_t> ins, std::size_t max_weights) {
  rows_ = rows;
  std::size_t copied = 0;  // the widest x the GEMM copies into tile order (not read in place)
  for (std::size_t in : ins)
    if (amx_gemm_a_tiles(in, rows)) copied = std::max(copied, in);
  a_tiles_ = copied ? Buffer(rows * copied * 2) : Buffer();
  w_tiles_ = amx_gemm_b_tiles(rows) ? Buffer(max_weights * 2) : Buffer();
}

void AmxProjection::run(const void* x, const void* w, const float* bias, void* y, std::size_t in, std::size_t out, Act act,
                        const void* residual) {
  gemm(x, w, in, out, y, {.act = act, .bias = bias, .residual = static_cast<const std::uint16_t*>(residual)});
}

void AmxProjection::run_fp32(const void* x, const void* w, float* y, std::size_t in, std::size_t out) {
  gemm(x, w, in, out, nullptr, {.c_fp32 = y});
}

void AmxProjection::gemm(const void* x, const void* w, std::size_t in, std::size_t out, void* y,
                         const AmxGemmOptions& options) {
  if ((amx_gemm_a_tiles(in, rows_) && rows_ * in * 2 > a_tiles_.bytes()) ||
      (amx_gemm_b_tiles(rows_) && in * out * 2 > w_tiles_.bytes()))
    throw std::logic_error(fmt::format("AmxProjection prepared for less than {} x {} x {}", rows_, in, out));
  AmxGemmOptions o = options;
  o.b = BLayout::n_by_k;
  o.b_tiles = w_tiles_.bytes() ? w_tiles_.as<std::uint16_t>() : nullptr;
  amx_gemm_bf16(static_cast<const std::uint16_t*>(x), in, static_cast<const std::uint16_t*>(w), in,
                static_cast<std::uint16_t*>(y), out, rows_, in, out, a_tiles_.bytes() ? a_tiles_.as<std::uint16_t>() : nullptr,
                o);
}

}  // namespace opmeter::tensor
