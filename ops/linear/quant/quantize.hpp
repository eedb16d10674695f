#pragma once
// Quantizing weights and activations as a recipe says (recipe.hpp), in one canonical host layout
// that every kernel repacks from, and reading them back exactly (the fp64 reference uses these).
//
// Weights W are out x hidden, row-major (linear's layout: row j is output channel j).
//   int8:  codes[j*hidden + k] is an int8 (stored as its byte), w = code * scales[j]
//   fp8:   codes[j*hidden + k] is an e4m3 byte, w = e4m3(code) * scales[j or 0]
//          (one scale for the whole tensor for float8dq-tensor, else one per row)
//   int4:  codes[(j*hidden + k) / 2], low nibble = even k, unsigned 0..15;
//          w = (code - zeros[j*G + k/group]) * scales[j*G + k/group], G = hidden / group
// Scales (and int4 zeros) are rounded to `scale_elem` (bf16 / f16 for 16-bit activations, f32
// otherwise) and kept as floats holding those values.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "opmeter/op_spec.hpp"
#include "ops/linear/quant/recipe.hpp"

namespace opmeter::quant {

inline constexpr double kFp8Max = 448.0;  // largest finite e4m3
inline constexpr double kInt8Max = 127.0;

struct QuantizedWeights {
  Recipe recipe;
  std::size_t out = 0, hidden = 0;
  std::vector<std::uint8_t> codes;
  std::vector<float> scales;
  std::vector<float> zeros;  // int4 only
  std::size_t groups_per_row() const { return recipe.group ? hidden / recipe.group : 1; }
  // Weight (j, k) as the recipe stores it, exactly.
  double weight(std::size_t j, std::size_t k) const;
  // Bytes of codes, scales and zeros at their stored widths (the weight traffic of one call).
  std::size_t bytes(Elem scale_elem) const;
};

// W (out x hidden floats) quantized by the recipe (not the baseline): round-to-nearest-even codes,
// HQQ's optimised scale and zero for hqq-int4-G. Deterministic: the same W gives the same codes
// on every machine and thread count.
QuantizedWeights quantize_weights(const Recipe& r, const float* w, std::size_t out, std::size_t hidden, Elem scale_elem);

// Dynamic recipes: activations x (rows x hidden floats) quantized per call. codes: rows*hidden
// bytes (int8 or e4m3); scales: one per row (per token), or scales[0] for the whole tensor.
// Scales are fp32: amax / 127 (int8) or amax / 448 (fp8), 1 for an all-zero row or tensor
// (linear::scale_from_amax, ops/linear/fp8_scale.hpp).
void quantize_activations(const Recipe& r, const float* x, std::size_t rows, std::size_t hidden, std::uint8_t* codes,
                          float* scales);
// One activation code's value (without its scale): the int8 or the e4m3 number.
double activation_code_value(const Recipe& r, std::uint8_t code);

// The HQQ optimisation of one int4 group (exposed for tests): scale and zero for `n` values that
// minimise the lp error (p < 1) of w - (q - zero) * scale by half-quadratic splitting, starting
// from round-to-nearest. Returns {scale, zero}.
struct ScaleZero {
  float scale, zero;
};
ScaleZero rtn_int4(const float* w, std::size_t n);
ScaleZero hqq_int4(const float* w, std::size_t n);

// Signal-to-quantization-noise ratio in dB: 10 log10(sum ref^2 / sum (got - ref)^2); +inf when
// equal, and the accumulator form for sums over sampled rows.
struct Sqnr {
  double signal = 0, noise = 0, max_abs_error = 0;
  void add(double got, double ref);
  // Adds another accumulator's sums (rows summed apart, e.g. one per thread).
  void merge(const Sqnr& other);
  double db() const;
};

}  // namespace opmeter::quant
