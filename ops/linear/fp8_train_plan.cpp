#include "ops/linear/fp8_train_plan.hpp"

#include <cmath>

#include <fmt/format.h>

namespace opmeter::linear::fp8_train {
namespace {
constexpr std::size_t kLdMultiple = 16;  // cuBLASLt's fp8 GEMMs: 16-byte leading dimensions
}

float max_finite(Format f) { return f == Format::e4m3 ? kE4m3Max : kE5m2Max; }
double unit_roundoff(Format f) { return f == Format::e4m3 ? opmeter::unit_roundoff(Elem::fp8_e4m3) : 0x1p-3; }

Format grad_format(bool rowwise) { return rowwise ? Format::e4m3 : Format::e5m2; }

std::vector<Gemm> step_gemms(const Shape& s, bool rowwise) {
  const std::size_t rows = s.rows, hidden = s.hidden, out = s.out;
  const Format g = grad_format(rowwise);
  return {
      {"forward", rows, out, hidden, {"x", Format::e4m3, rows, hidden, false}, {"W", Format::e4m3, out, hidden, false}},
      {"dgrad", rows, hidden, out, {"dz", g, rows, out, false}, {"W^T", Format::e4m3, hidden, out, true}},
      {"wgrad", out, hidden, rows, {"dz^T", g, out, rows, true}, {"x^T", Format::e4m3, hidden, rows, true}},
  };
}

ScaleMode scale_mode(const Float8Knobs& k) { return k.rowwise ? ScaleMode::outer_vector : ScaleMode::tensor; }

std::size_t scale_count(ScaleMode m, const Operand& o) { return m == ScaleMode::tensor ? 1 : o.rows; }

Support case_support(const Case& c) {
  if (!training(c)) return Support::no("cublaslt_fp8_train runs training steps (mode=train)");
  const std::string recipe = recipe_of(c);
  if (recipe != "float8dq-tensor" && recipe != "float8dq-row")
    return Support::no(
        fmt::format("cublaslt_fp8_train trains quant=float8dq-tensor or float8dq-row, not quant={}", recipe));
  if (c.dtype != DType::bf16)
    return Support::no(
        fmt::format("cublaslt_fp8_train keeps bf16 high-precision tensors (dtype bf16, not {})", to_string(c.dtype)));
  const Shape s = shape_of(c);
  for (auto [name, v] : {std::pair{"hidden", s.hidden}, {"out", s.out}, {"rows (batch x seq)", s.rows}})
    if (v % kLdMultiple != 0)
      return Support::no(
          fmt::format("cuBLASLt's fp8 GEMMs need {} (a K of the step's GEMMs) to be a multiple of {}; it is {}", name,
                      kLdMultiple, v));
  constexpr std::size_t kMaxTiledCols = 65535 * 64;  // the kernels' 64-column tiles on grid.y
  if (s.hidden > kMaxTiledCols || s.out > kMaxTiledCols)
    return Support::no(fmt::format("cublaslt_fp8_train's cast kernels take hidden and out up to {}", kMaxTiledCols));
  return Support::yes();
}

Support device_support(int cc, bool rowwise, const std::string& gpu) {
  if (cc < 89)
    return Support::no(fmt::format(
        "float8 training needs fp8 tensor cores, compute capability 8.9 or newer; {} is {}.{}", gpu, cc / 10, cc % 10));
  if (rowwise && cc < 90)
    return Support::no(
        fmt::format("rowwise float8 needs cuBLASLt's per-row (OUTER_VEC_32F) scales, compute capability 9.0 "
                    "or newer; {} is {}.{} (tensorwise runs here: granularity=tensorwise)",
                    gpu, cc / 10, cc % 10));
  return Support::yes();
}

double forward_error(bool fast_accum, std::size_t k) {
  const double u = unit_roundoff(Format::e4m3);
  const double acc = fast_accum ? 0x1p-14 : 0x1p-24;
  return 2 * u + u * u + 4 * std::sqrt(double(k)) * acc;
}

double tolerance(bool fast_accum, std::size_t max_k, Format grad) {
  const double ua = unit_roundoff(grad), ub = unit_roundoff(Format::e4m3);
  const double acc = fast_accum ? 0x1p-14 : 0x1p-24;
  return ua + ub + ua * ub + 4 * std::sqrt(double(max_k)) * acc + 2 * opmeter::unit_roundoff(Elem::bf16);
}

}  // namespace opmeter::linear::fp8_train
