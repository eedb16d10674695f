// The GEMM op: parameters, element types, work model and the spec every impl shares.
#include "ops/gemm/gemm.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "opmeter/context.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"

namespace opmeter::gemm {
namespace {
constexpr std::size_t kSampledElements = 4096;

Work gemm_work(const Case& c) {
  auto d = dims(c);
  auto t = types(c);
  double m = static_cast<double>(d.M), n = static_cast<double>(d.N), k = static_cast<double>(d.K);
  return {2 * m * n * k, m * k * static_cast<double>(elem_bytes(t.a)) + n * k * static_cast<double>(elem_bytes(t.b)),
          m * n * static_cast<double>(elem_bytes(t.c))};
}

double gemm_footprint(const Case& c) {
  auto w = gemm_work(c);
  return w.bytes();
}

void gemm_validate(const Case& c) {
  for (const char* key : {"M", "N", "K"}) {
    auto v = c.get_int(key);
    if (v < 1 || v > (std::int64_t{1} << 20))
      throw CaseError(fmt::format("gemm {}={} out of range: expected 1..1048576", key, v));
  }
  if (c.dtype == DType::int8 && c.get_int("K") >= 65536)
    throw CaseError("int8 gemm K must be < 65536 so that s32 accumulation cannot overflow");
}

// A config's `shapes` list ([m, k, n] generators) as M, N, K.
std::vector<ParamSet> gemm_expand(const OpConfig& config) {
  if (!config.has("shapes")) config.fail("ops", "ops includes gemm but there is no 'shapes' list to say which sizes");
  std::vector<ParamSet> out;
  for (auto& s : config.shapes())
    out.push_back({{{"M", std::to_string(s.m)}, {"N", std::to_string(s.n)}, {"K", std::to_string(s.k)}}, s.label});
  return out;
}

OpRegistrar reg_gemm({
    .name = "gemm",
    .summary = "C = A*B^T, row-major, B stored N x K (a linear layer's weight) on every device; bf16 accumulates "
               "in fp32, int8 is u8*s8->s32 (CPU) or s8*s8->s32 (CUDA)",
    .params = {"M", "N", "K"},
    .example = {{"M", "64"}, {"N", "64"}, {"K", "64"}},
    .work = gemm_work,
    .footprint = gemm_footprint,
    .validate = gemm_validate,
    .uses_memory = true,
    .peak_dtype = [](const Case& c) -> std::optional<DType> { return c.dtype; },
    .expand = gemm_expand,
    .spec = [] { return std::make_unique<GemmSpec>(); },
    .gemm_view = [](const Case& c) -> std::optional<GemmView> {
      auto m = integer_param(c, "M"), n = integer_param(c, "N"), k = integer_param(c, "K");
      if (!m || !n || !k) return std::nullopt;
      return GemmView{*m, *n, *k, 1};
    },
    // `opmeter check`: odd primes (tails in every blocking), one element, a GEMV with a prime K,
    // a tile-aligned square, M and N one past a tile, and multiples of 32 past the AMX GEMM's
    // task of 512 rows and chunk of 256 of K (`opmeter`).
    .check_shapes = {{{"M", "37"}, {"N", "41"}, {"K", "43"}},
                     {{"M", "1"}, {"N", "1"}, {"K", "1"}},
                     {{"M", "1"}, {"N", "257"}, {"K", "1031"}},
                     {{"M", "64"}, {"N", "64"}, {"K", "64"}},
                     {{"M", "17"}, {"N", "33"}, {"K", "129"}},
                     {{"M", "544"}, {"N", "288"}, {"K", "288"}}},
});

}  // namespace

Dims dims(const Case& c) { return {c.get_int("M"), c.get_int("N"), c.get_int("K")}; }

Types types(const Case& c) {
  const bool cuda = !c.on_host();  // CUDA's library types (cuBLAS, cuBLASLt)
  const Elem narrow_out = cuda ? Elem::bf16 : Elem::f32;
  switch (c.dtype) {
    case DType::fp64: return {Elem::f64, Elem::f64, Elem::f64};
    case DType::fp16: return {Elem::f16, Elem::f16, cuda ? Elem::f16 : Elem::f32};
    case DType::bf16: return {Elem::bf16, Elem::bf16, narrow_out};
    case DType::fp8_e4m3: return {Elem::fp8_e4m3, Elem::fp8_e4m3, narrow_out};
    case DType::int8: return {cuda ? Elem::s8 : Elem::u8, Elem::s8, Elem::s32};
    default: return {Elem::f32, Elem::f32, Elem::f32};  // fp32, tf32
  }
}

double tolerance(const Case& c) {
  // Normalized error of a sum of K products: rounding grows like sqrt(K) units of the
  // accumulator's precision for any reasonable blocking; 4x margin. fp8 kernels accumulate in
  // less than fp32. tf32 rounds its inputs to 10 mantissa bits; a 16-bit C rounds once more.
  const double k = static_cast<double>(c.get_int("K"));
  const Types t = types(c);
  switch (c.dtype) {
    case DType::int8: return 0;  // integer arithmetic is exact
    case DType::fp64: return 4 * std::sqrt(k) * 0x1p-53 + 1e-15;
    default: break;
  }
  double acc = c.dtype == DType::fp8_e4m3 ? 4 * std::sqrt(k) * 0x1p-20 : 4 * std::sqrt(k) * 0x1p-24 + 1e-7;
  double inputs = c.dtype == DType::tf32 ? 0x1p-10 : 0.0;
  double output = t.c == Elem::f16 ? 0x1p-10 : t.c == Elem::bf16 ? 0x1p-8 : 0.0;
  return (inputs + output) + acc;
}

void GemmSpec::bind(const Case& c) {
  case_ = c;
  d_ = dims(c);
}

std::vector<TensorDesc> GemmSpec::inputs() const {
  // Integers use their whole range; floats are uniform in [-1, 1).
  auto desc = [&](const char* name, Elem e, std::int64_t rows) {
    TensorDesc t{name, e, static_cast<std::size_t>(rows * d_.K)};
    if (e == Elem::s8) t.lo = -128, t.hi = 128;
    if (e == Elem::u8) t.lo = 0, t.hi = 256;
    return t;
  };
  const Types t = types(case_);
  return {desc("A", t.a, d_.M), desc("B", t.b, d_.N)};
}

TensorDesc GemmSpec::output() const { return {"C", types(case_).c, static_cast<std::size_t>(d_.M * d_.N)}; }

Check GemmSpec::check(const HostTensors& in, const HostTensor& out, std::uint64_t seed) const {
  const auto M = static_cast<std::size_t>(d_.M), N = static_cast<std::size_t>(d_.N), K = static_cast<std::size_t>(d_.K);
  const HostTensor &a = in.at(kA), &b = in.at(kB);
  Check check;
  check.tolerance = tolerance();
  for (std::size_t i = 0; i < M * N; ++i) {
    if (!std::isfinite(out[i])) {
      check.max_error = std::numeric_limits<double>::infinity();
      check.detail = fmt::format("C[{},{}] was not written (still poisoned) or is not finite", i / N, i % N);
      return check;
    }
  }
  std::vector<std::size_t> picks;
  if (M * N <= kSampledElements) {
    for (std::size_t i = 0; i < M * N; ++i) picks.push_back(i);
  } else {
    Rng rng(seed ^ 0x5eed);
    picks = {0, M * N - 1};
    while (picks.size() < kSampledElements) picks.push_back(rng.next() % (M * N));
  }
  std::vector<double> errors(picks.size());
#pragma omp parallel for num_threads(default_threads())
  for (std::size_t p = 0; p < picks.size(); ++p) {
    std::size_t i = picks[p] / N, j = picks[p] % N;
    double ref = 0, mag = 0;
    for (std::size_t k = 0; k < K; ++k) {
      double prod = a[i * K + k] * b[j * K + k];  // B is N x K
      ref += prod;
      mag += std::fabs(prod);
    }
    errors[p] = std::fabs(out[picks[p]] - ref) / (mag > 0 ? mag : 1.0);
  }
  auto worst = std::max_element(errors.begin(), errors.end());
  check.max_error = *worst;
  std::size_t at = picks[static_cast<std::size_t>(worst - errors.begin())];
  check.ok = check.max_error <= check.tolerance;
  check.detail = fmt::format("max normalized error {:.3g} at C[{},{}] over {} checked elements (tolerance {:.3g})",
                             check.max_error, at / N, at % N, picks.size(), check.tolerance);
  return check;
}

}  // namespace opmeter::gemm
