// The GEMM op: parameters, work model, footprint and the shared correctness check.
#include "ops/gemm/gemm.hpp"

#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"

namespace opmeter::gemm {
namespace {
constexpr std::uint32_t kInt32Poison = 0x7f7f7f7f;  // beyond any u8*s8 sum with K < 2^16
constexpr std::size_t kSampledElements = 4096;

Work gemm_work(const Case& c) {
  auto d = dims(c);
  double m = static_cast<double>(d.M), n = static_cast<double>(d.N), k = static_cast<double>(d.K);
  return {2 * m * n * k, (m * k + k * n) * static_cast<double>(a_elem_bytes(c.dtype)),
          m * n * static_cast<double>(c.on_host() ? c_elem_bytes(c.dtype) : gpu_c_elem_bytes(c.dtype))};
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
    .summary = "C = A*B, row-major; bf16 accumulates in fp32, int8 is u8*s8->s32",
    .params = {"M", "N", "K"},
    .example = {{"M", "64"}, {"N", "64"}, {"K", "64"}},
    .work = gemm_work,
    .footprint = gemm_footprint,
    .validate = gemm_validate,
    .uses_memory = true,
    .peak_dtype = [](const Case& c) -> std::optional<DType> { return c.dtype; },
    .expand = gemm_expand,
});

// Value of input element i as the reference reads it.
double a_value(DType d, const void* p, std::size_t i) {
  switch (d) {
    case DType::fp64: return static_cast<const double*>(p)[i];
    case DType::bf16: return from_bf16(static_cast<const std::uint16_t*>(p)[i]);
    case DType::int8: return static_cast<const std::uint8_t*>(p)[i];
    default: return static_cast<const float*>(p)[i];
  }
}
double b_value(DType d, const void* p, std::size_t i) {
  if (d == DType::int8) return static_cast<const std::int8_t*>(p)[i];
  return a_value(d, p, i);
}
double c_value(DType d, const void* p, std::size_t i) {
  switch (d) {
    case DType::fp64: return static_cast<const double*>(p)[i];
    case DType::int8: {
      auto v = static_cast<const std::int32_t*>(p)[i];
      return std::bit_cast<std::uint32_t>(v) == kInt32Poison ? std::numeric_limits<double>::quiet_NaN() : v;
    }
    default: return static_cast<const float*>(p)[i];
  }
}

}  // namespace

Dims dims(const Case& c) { return {c.get_int("M"), c.get_int("N"), c.get_int("K")}; }

std::size_t a_elem_bytes(DType d) { return size_of(d); }

std::size_t gpu_c_elem_bytes(DType d) {
  switch (d) {
    case DType::fp16:
    case DType::bf16:
    case DType::fp8_e4m3: return 2;  // as torch.matmul: C in the input type; fp8 writes bf16
    default: return 4;
  }
}

std::size_t c_elem_bytes(DType d) {
  if (d == DType::fp64) return 8;
  return 4;  // fp32 for fp32/bf16, s32 for int8
}

double tolerance(DType d, std::int64_t K) {
  // Normalized error of a sum of K products: rounding grows like sqrt(K) units of the
  // accumulator's precision for any reasonable blocking; 4x margin.
  double k = static_cast<double>(K);
  switch (d) {
    case DType::int8: return 0;  // integer arithmetic is exact
    case DType::fp64: return 4 * std::sqrt(k) * 0x1p-53 + 1e-15;
    default: return 4 * std::sqrt(k) * 0x1p-24 + 1e-7;
  }
}

void GemmImpl::setup(const Case& c, const SetupOptions& options) {
  case_ = c;
  d_ = dims(c);
  threads_ = c.threads;
  auto bytes_a = static_cast<std::size_t>(d_.M * d_.K) * a_elem_bytes(c.dtype);
  auto bytes_b = static_cast<std::size_t>(d_.K * d_.N) * a_elem_bytes(c.dtype);
  auto bytes_c = static_cast<std::size_t>(d_.M * d_.N) * c_elem_bytes(c.dtype);
  sets_.clear();
  for (std::size_t i = 0; i < options.copies; ++i) sets_.push_back({Buffer(bytes_a), Buffer(bytes_b), Buffer(bytes_c)});
  fill_inputs(sets_[0], options.seed);
  // The other sets only need to live at other addresses: copying is much faster than drawing.
  for (std::size_t i = 1; i < sets_.size(); ++i) {
    std::memcpy(sets_[i].a.data(), sets_[0].a.data(), bytes_a);
    std::memcpy(sets_[i].b.data(), sets_[0].b.data(), bytes_b);
  }
  prepare();
}

void GemmImpl::fill_inputs(Set& s, std::uint64_t seed) {
  Rng rng(seed);
  auto fill = [&](Buffer& buf, bool is_b) {
    std::size_t n = buf.bytes() / a_elem_bytes(case_.dtype);
    switch (case_.dtype) {
      case DType::fp64: fill_uniform(buf.span<double>(), rng, -1, 1); break;
      case DType::bf16:
        for (std::size_t i = 0; i < n; ++i) buf.as<std::uint16_t>()[i] = to_bf16(static_cast<float>(rng.uniform(-1, 1)));
        break;
      case DType::int8:
        for (std::size_t i = 0; i < n; ++i) {
          auto r = static_cast<std::uint8_t>(rng.next() >> 56);
          buf.as<std::uint8_t>()[i] = is_b ? static_cast<std::uint8_t>(static_cast<std::int8_t>(r)) : r;
        }
        break;
      default: fill_uniform(buf.span<float>(), rng, -1, 1); break;
    }
  };
  fill(s.a, false);
  fill(s.b, true);
}

void GemmImpl::poison_output(Set& s) {
  std::size_t n = static_cast<std::size_t>(d_.M * d_.N);
  switch (case_.dtype) {
    case DType::fp64: std::fill_n(s.c.as<double>(), n, std::numeric_limits<double>::quiet_NaN()); break;
    case DType::int8: std::fill_n(s.c.as<std::uint32_t>(), n, kInt32Poison); break;
    default: std::fill_n(s.c.as<float>(), n, std::numeric_limits<float>::quiet_NaN()); break;
  }
}

Check GemmImpl::verify(std::uint64_t seed) {
  auto& s = sets_.at(0);
  fill_inputs(s, seed);
  poison_output(s);
  run(0);
  sync();
  const auto N = static_cast<std::size_t>(d_.N), K = static_cast<std::size_t>(d_.K);
  const DType dt = case_.dtype;
  return sampled_check(
      d_, seed, tolerance(dt, d_.K), threads_, [&](std::size_t i, std::size_t k) { return a_value(dt, s.a.data(), i * K + k); },
      [&](std::size_t k, std::size_t j) { return b_value(dt, s.b.data(), k * N + j); },
      [&](std::size_t idx) { return c_value(dt, s.c.data(), idx); });
}

Check sampled_check(Dims d, std::uint64_t seed, double tolerance, int threads, const ElementFn& a, const ElementFn& b,
                    const std::function<double(std::size_t)>& c) {
  const auto M = static_cast<std::size_t>(d.M), N = static_cast<std::size_t>(d.N), K = static_cast<std::size_t>(d.K);
  Check check;
  check.tolerance = tolerance;
  for (std::size_t i = 0; i < M * N; ++i) {
    if (!std::isfinite(c(i))) {
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
#pragma omp parallel for num_threads(threads)
  for (std::size_t p = 0; p < picks.size(); ++p) {
    std::size_t i = picks[p] / N, j = picks[p] % N;
    double ref = 0, mag = 0;
    for (std::size_t k = 0; k < K; ++k) {
      double prod = a(i, k) * b(k, j);
      ref += prod;
      mag += std::fabs(prod);
    }
    errors[p] = std::fabs(c(picks[p]) - ref) / (mag > 0 ? mag : 1.0);
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
