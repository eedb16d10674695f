// The quantized linear kernels in plain C++: for CPUs with neither AVX-512 VNNI nor AVX2 (same layout,
// same math), and the reference the vector kernels are tested against.
#include "ops/linear/quant_kernel.hpp"

namespace opmeter::linear {
namespace {

float weight(const PackedWeights& w, std::size_t j, std::size_t k) {
  const std::size_t h = w.hidden;
  switch (w.format) {
    case quant::WeightFormat::int4: {
      const float q = float(w.int4_code(j, k));
      const std::size_t g = k / w.group;
      return (q - w.group_zero(j, g)) * w.group_scale(j, g);
    }
    case quant::WeightFormat::fp8:
      return e4m3_value(w.codes[j * h + k]);
    default:
      return float(static_cast<std::int8_t>(w.codes[j * h + k]));
  }
}

void weight_only(const PackedWeights& w, const float* x, const float*, std::size_t rows, std::size_t j0, std::size_t j1, float* c,
                 std::size_t ldc) {
  const std::size_t h = w.hidden;
  std::vector<float> wj(h);
  for (std::size_t j = j0; j < j1; ++j) {
    for (std::size_t k = 0; k < h; ++k) wj[k] = weight(w, j, k);  // decoded once for every row
    const float scale = w.format == quant::WeightFormat::int4 ? 1.f : w.scales[j];
    for (std::size_t m = 0; m < rows; ++m) {
      float acc = 0;
      for (std::size_t k = 0; k < h; ++k) acc += x[m * h + k] * wj[k];
      c[m * ldc + j] = acc * scale;
    }
  }
}

void int8_dynamic(const PackedWeights& w, const std::uint8_t* xu, const float* xscale, std::size_t rows, std::size_t j0,
                  std::size_t j1, float* c, std::size_t ldc) {
  const std::size_t h = w.hidden;
  for (std::size_t j = j0; j < j1; ++j)
    for (std::size_t m = 0; m < rows; ++m) {
      std::int32_t acc = 0;
      for (std::size_t k = 0; k < h; ++k)
        acc += (std::int32_t(xu[m * h + k]) - 128) * std::int32_t(static_cast<std::int8_t>(w.codes[j * h + k]));
      c[m * ldc + j] = float(acc) * xscale[m] * w.scales[j];
    }
}

}  // namespace

QuantKernels base_quant_kernels() { return {"base", weight_only, int8_dynamic, nullptr}; }

}  // namespace opmeter::linear
