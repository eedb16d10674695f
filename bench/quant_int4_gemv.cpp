// The int4 bf16 GEMV kernels at M = 1 against a plain read of the same bytes (codes, scales,
// zeros): the vector kernel (ops/linear/quant_kernel_avx512bf16.cpp; on CPUs without AVX512_BF16
// the fp32 one, quant_kernel_avx2.cpp) and, where the CPU has them, the AMX and limbs kernels
// (quant_kernel_amx.cpp; quant_kernel_limbs.cpp on weights in tiles, or the AVX2 limbs kernel on
// blocks of 64), their outputs compared; then int8wo on the same W (the fp32 kernel and the
// limbs kernel) against a read of its bytes. Each is the best of many short runs on the threads given
// (OMP_NUM_THREADS): on a loaded machine the minimum is the run least disturbed, so the ratio is
// the kernel's, not the neighbours'. docs/guide/quantization-kernels.md.
//   build/bench/quant_int4_gemv [N K G reps M]   (default LLaMA-2-70B's w13 shard at decode: 7168 8192 64 100 1)
// M > 1 rows times each kernel on M rows of x (the read stays the weights' bytes once): where the
// layers' choice between the limbs kernel and the AMX kernel is made (kInt4LimbRows).
// GCC 12's _mm512_reduce_add_* read an intentionally undefined register: a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "bench/bench_util.hpp"
#include "opmeter/dtype.hpp"
#include "ops/linear/quant_kernel.hpp"

using namespace opmeter;
using namespace opmeter::linear;


// Sums n bytes as floats (their values do not matter, only that every byte is loaded once).
__attribute__((target("avx512f"))) static float read_bytes_avx512(const std::uint8_t* p, std::size_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  std::size_t i = 0;
  for (; i + 256 <= n; i += 256) {
    a0 = _mm512_add_ps(a0, _mm512_loadu_ps(reinterpret_cast<const float*>(p + i)));
    a1 = _mm512_add_ps(a1, _mm512_loadu_ps(reinterpret_cast<const float*>(p + i + 64)));
    a2 = _mm512_add_ps(a2, _mm512_loadu_ps(reinterpret_cast<const float*>(p + i + 128)));
    a3 = _mm512_add_ps(a3, _mm512_loadu_ps(reinterpret_cast<const float*>(p + i + 192)));
  }
  float tail = 0;
  for (; i < n; ++i) tail += p[i];  // under 256 bytes: the bandwidth divides by them too
  return tail + _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

// The same with AVX2, for CPUs without AVX-512.
__attribute__((target("avx2"))) static float read_bytes_avx2(const std::uint8_t* p, std::size_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  std::size_t i = 0;
  for (; i + 128 <= n; i += 128) {
    a0 = _mm256_add_ps(a0, _mm256_loadu_ps(reinterpret_cast<const float*>(p + i)));
    a1 = _mm256_add_ps(a1, _mm256_loadu_ps(reinterpret_cast<const float*>(p + i + 32)));
    a2 = _mm256_add_ps(a2, _mm256_loadu_ps(reinterpret_cast<const float*>(p + i + 64)));
    a3 = _mm256_add_ps(a3, _mm256_loadu_ps(reinterpret_cast<const float*>(p + i + 96)));
  }
  float tail = 0;
  for (; i < n; ++i) tail += p[i];
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  for (float v : lanes) tail += v;
  return tail;
}

static float read_bytes(const std::uint8_t* p, std::size_t n) {
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  return avx512 ? read_bytes_avx512(p, n) : read_bytes_avx2(p, n);
}

int main(int argc, char** argv) {
  if (argc > 6) {
    std::fprintf(stderr, "usage: quant_int4_gemv [N K G reps M]\n");
    return 2;
  }
  const std::size_t n = positive_arg("quant_int4_gemv", argc, argv, 1, "N", 7168);
  const std::size_t k = positive_arg("quant_int4_gemv", argc, argv, 2, "K", 8192);
  const std::size_t g = positive_arg("quant_int4_gemv", argc, argv, 3, "G", 64);
  const int reps = static_cast<int>(std::min<std::size_t>(positive_arg("quant_int4_gemv", argc, argv, 4, "reps", 100), 1000000));
  const std::size_t rows = std::min<std::size_t>(positive_arg("quant_int4_gemv", argc, argv, 5, "M", 1), 64);
  // The kernels take whole groups of a power-of-two size; the recipe parser checks the rest.
  if ((g & (g - 1)) != 0 || k % g != 0) {
    std::fprintf(stderr, "quant_int4_gemv: G must be a power of two dividing K (K=%zu, G=%zu)\n", k, g);
    return 2;
  }
  if (!quant::parse_recipe("int4wo-" + std::to_string(g))) {
    std::fprintf(stderr, "quant_int4_gemv: no int4 recipe with group %zu\n", g);
    return 2;
  }
  const auto& kernels = quant_kernels();
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2")) {
    std::printf("this CPU has no AVX2: no vector kernel to time\n");
    return 1;
  }
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> w(n * k);
  for (auto& v : w) v = normal(rng);
  const auto q = quant::quantize_weights(*quant::parse_recipe("int4wo-" + std::to_string(g)), w.data(), n, k, Elem::bf16);
  const PackedWeights p = pack_weights(q, false);  // blocks: the vector kernel's layout
  const PackedWeights tiles = pack_weights(q, false, true);  // the tile kernels' layout (AMX, limbs)
  std::vector<std::uint16_t> x(rows * k);
  std::vector<float> xsum(rows * (k / g), 0.f), y(rows * n), yv(rows * n);
  for (std::size_t i = 0; i < rows * k; ++i) {
    x[i] = to_bf16(normal(rng));
    xsum[i / g] += from_bf16(x[i]);
  }
  volatile float sink = 0;
  // A plain read of a layer's bytes: 64 parts of the codes (the last one taking the remainder),
  // then its scales and zeros; every byte read once.
  auto read_time = [&](const PackedWeights& w) {
    const std::size_t parts = 64, chunk = w.codes.size() / parts;
    return best_of(reps, [&] {
      float s = 0;
#pragma omp parallel for reduction(+ : s) schedule(static)
      for (std::size_t i = 0; i < parts; ++i)
        s += read_bytes(w.codes.data() + i * chunk, i + 1 < parts ? chunk : w.codes.size() - i * chunk);
      sink = sink + s + read_bytes(w.group_scales.data(), w.group_scales.size()) +
             read_bytes(w.group_zeros.data(), w.group_zeros.size()) +
             read_bytes(reinterpret_cast<const std::uint8_t*>(w.scales.data()), w.scales.size() * sizeof(float));
    });
  };
  const double read_s = read_time(p);
  // Blocks of 16 channels per call, as opmeter's layers split them over the threads.
  auto gemv = [&](auto kernel, const PackedWeights& w, std::vector<float>& out) {
    return best_of(reps, [&] {
#pragma omp parallel for schedule(static)
      for (std::size_t b = 0; b < (n + 15) / 16; ++b)
        kernel(w, x.data(), xsum.data(), rows, 16 * b, std::min(n, 16 * b + 16), out.data(), n);
    });
  };
  // The vector kernel: bf16 (vdpbf16ps) where the CPU has it, else the fp32 one on x made fp32.
  std::vector<float> xf(rows * k);
  for (std::size_t i = 0; i < rows * k; ++i) xf[i] = from_bf16(x[i]);
  const double vector_s =
      kernels.int4_bf16 ? gemv(avx512bf16_int4, p, yv)
                        : gemv([&](const PackedWeights& w, const std::uint16_t*, const float* s, std::size_t r, std::size_t j0,
                                   std::size_t j1, float* c, std::size_t ldc) { kernels.weight_only(w, xf.data(), s, r, j0, j1, c, ldc); },
                               p, yv);
  const double bytes = double(p.bytes());
  std::printf("N=%zu K=%zu group=%zu M=%zu threads=%d (%s): %.1f MB; read %.3f ms (%.1f GB/s); %s vector kernel %.3f ms (%.1f GB/s) = "
              "%.0f%% of read",
              n, k, g, rows, omp_get_max_threads(), kernels.isa, bytes / 1e6, read_s * 1e3, bytes / read_s / 1e9,
              kernels.int4_bf16 ? "bf16" : "fp32", vector_s * 1e3, bytes / vector_s / 1e9, 100 * read_s / vector_s);
  if (tiles.tiles && kernels.int4_tiles) {
    // The same bytes (tiles pad channels to 16: none for these shapes), the same outputs.
    const double amx_s = gemv(kernels.int4_bf16, tiles, y);
    double worst = 0, scale = 0;
    for (std::size_t j = 0; j < rows * n; ++j) worst = std::max(worst, double(std::fabs(y[j] - yv[j]))), scale = std::max(scale, double(std::fabs(yv[j])));
    std::printf("; AMX kernel %.3f ms (%.1f GB/s) = %.0f%% of read, %.2fx the vector kernel (max |diff| %.1e of max |y|)", amx_s * 1e3,
                bytes / amx_s / 1e9, 100 * read_s / amx_s, vector_s / amx_s, worst / scale);
  }
  // (the VNNI limbs kernel needs tiles, groups of 64 and up; the AVX2 one reads blocks, G 32 too)
  if (kernels.int4_limbs && (tiles.tiles || !kernels.int4_limbs_in_tiles)) {
    // x split into int8 limbs once per call, as the layers do, inside the time; the weights in
    // the layout the limbs kernel reads (VNNI: tiles, AVX2: blocks of 64).
    const PackedWeights& lw = kernels.int4_limbs_in_tiles ? tiles : p;
    XLimbs limbs;
    limbs.resize(rows, k, g, limb_form(kernels, true));
    std::vector<float> yl(rows * n);
    const double limbs_s = best_of(reps, [&] {
      for (std::size_t m = 0; m < rows; ++m) split_limbs(x.data(), m, k, g, limbs);
#pragma omp parallel for schedule(static)
      for (std::size_t b = 0; b < (n + 15) / 16; ++b)
        kernels.int4_limbs(lw, limbs, xsum.data(), rows, 16 * b, std::min(n, 16 * b + 16), yl.data(), n);
    });
    double worst = 0, scale = 0;
    for (std::size_t j = 0; j < rows * n; ++j) worst = std::max(worst, double(std::fabs(yl[j] - yv[j]))), scale = std::max(scale, double(std::fabs(yv[j])));
    std::printf("; %s limbs kernel %.3f ms (%.1f GB/s) = %.0f%% of read, %.2fx the vector kernel (max |diff| %.1e of max |y|)",
                kernels.isa, limbs_s * 1e3, bytes / limbs_s / 1e9, 100 * read_s / limbs_s, vector_s / limbs_s, worst / scale);
  }
  std::printf("\n");
  if (kernels.int8_limbs && k % kInt8LimbGroup == 0) {
    // int8wo on the same W: the fp32 kernel the layers ran before (x made fp32) and the limbs
    // kernel on quads (x split inside the time), against a read of the int8 layer's bytes.
    const auto q8 = quant::quantize_weights(*quant::parse_recipe("int8wo"), w.data(), n, k, Elem::bf16);
    const PackedWeights rows8 = pack_weights(q8, false), quads = pack_int8_quads(q8);
    std::vector<float> xf(rows * k), y32(rows * n), y8(rows * n);
    for (std::size_t i = 0; i < rows * k; ++i) xf[i] = from_bf16(x[i]);
    const double read8_s = read_time(rows8);
    const double fp32_s = best_of(reps, [&] {
#pragma omp parallel for schedule(static)
      for (std::size_t b = 0; b < (n + 15) / 16; ++b)
        kernels.weight_only(rows8, xf.data(), nullptr, rows, 16 * b, std::min(n, 16 * b + 16), y32.data(), n);
    });
    XLimbs limbs;
    limbs.resize(rows, k, kInt8LimbGroup, limb_form(kernels, false));
    const double limbs8_s = best_of(reps, [&] {
      for (std::size_t m = 0; m < rows; ++m) split_limbs(x.data(), m, k, kInt8LimbGroup, limbs);
#pragma omp parallel for schedule(static)
      for (std::size_t b = 0; b < (n + 15) / 16; ++b)
        kernels.int8_limbs(quads, limbs, rows, 16 * b, std::min(n, 16 * b + 16), y8.data(), n);
    });
    double worst = 0, scale = 0;
    for (std::size_t j = 0; j < rows * n; ++j) worst = std::max(worst, double(std::fabs(y8[j] - y32[j]))), scale = std::max(scale, double(std::fabs(y32[j])));
    const double bytes8 = double(rows8.bytes());
    std::printf("int8wo N=%zu K=%zu M=%zu threads=%d: %.1f MB; read %.3f ms (%.1f GB/s); fp32 kernel %.3f ms = %.0f%% of read; "
                "%s limbs kernel %.3f ms (%.1f GB/s) = %.0f%% of read, %.2fx the fp32 kernel (max |diff| %.1e of max |y|)\n",
                n, k, rows, omp_get_max_threads(), bytes8 / 1e6, read8_s * 1e3, bytes8 / read8_s / 1e9, fp32_s * 1e3,
                100 * read8_s / fp32_s, kernels.isa, limbs8_s * 1e3, bytes8 / limbs8_s / 1e9, 100 * read8_s / limbs8_s, fp32_s / limbs8_s,
                worst / scale);
  }
  return 0;
}
