// Repacking quantized weights into the kernels' layout, and the choice of ISA at run time.
#include "ops/linear/quant_kernel.hpp"

#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "ops/tensor/amx.hpp"

namespace opmeter::linear {
namespace {
// A float that holds a bf16 value exactly, as its 16 bits.
std::uint16_t bf16_bits(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return static_cast<std::uint16_t>(u >> 16);
}

void put_param(std::vector<std::uint8_t>& v, std::size_t i, float value, bool bf16) {
  if (bf16) {
    const std::uint16_t b = bf16_bits(value);
    std::memcpy(v.data() + 2 * i, &b, 2);
  } else {
    std::memcpy(v.data() + 4 * i, &value, 4);
  }
}

// Whether every value is a bf16 number (scales rounded to bf16 by the recipe).
bool all_bf16(const std::vector<float>& v) {
  for (float f : v)
    if (bf16_bits_value(bf16_bits(f)) != f) return false;
  return true;
}
}  // namespace

float PackedWeights::param(const std::vector<std::uint8_t>& v, std::size_t i) const {
  if (bf16_group_params) {
    std::uint16_t b;
    std::memcpy(&b, v.data() + 2 * i, 2);
    return bf16_bits_value(b);
  }
  float f;
  std::memcpy(&f, v.data() + 4 * i, 4);
  return f;
}

std::size_t PackedWeights::bytes() const {
  return codes.size() + scales.size() * sizeof(float) + group_scales.size() + group_zeros.size();
}

namespace {
// int4 in the tile layout (quant_kernel.hpp), channels padded to blocks of 16 with code 0, scale 0.
void pack_int4_tiles(const quant::QuantizedWeights& q, PackedWeights& p) {
  const std::size_t h = q.hidden, blocks = (q.out + 15) / 16, groups = h / p.group;
  auto code = [&](std::size_t j, std::size_t k) -> unsigned {
    if (j >= q.out) return 0;
    const std::size_t i = j * h + k;
    return (q.codes[i / 2] >> (4 * (i % 2))) & 0xf;
  };
  p.codes.assign(blocks * 8 * h, 0);
  for (std::size_t jb = 0; jb < blocks; ++jb)
    for (std::size_t t = 0; t < h / 64; ++t)
      for (std::size_t c = 0; c < 16; ++c)
        for (std::size_t i = 0; i < 16; ++i)
          for (std::size_t par = 0; par < 2; ++par) {
            const std::size_t j = 16 * jb + i, k = 64 * t + 2 * c + par;
            p.codes[jb * 8 * h + 512 * t + 32 * c + 2 * i + par] = static_cast<std::uint8_t>(code(j, k) | code(j, k + 32) << 4);
          }
  const std::size_t width = p.bf16_group_params ? 2 : 4;
  p.group_scales.assign(blocks * 16 * groups * width, 0);
  p.group_zeros.assign(p.group_scales.size(), 0);
  for (std::size_t j = 0; j < q.out; ++j)
    for (std::size_t g = 0; g < groups; ++g) {
      put_param(p.group_scales, p.param_index(j, g), q.scales[j * groups + g], p.bf16_group_params);
      put_param(p.group_zeros, p.param_index(j, g), q.zeros[j * groups + g], p.bf16_group_params);
    }
}
}  // namespace

PackedWeights pack_int8_quads(const quant::QuantizedWeights& q) {
  if (q.recipe.weights != quant::WeightFormat::int8 || q.hidden % kInt8LimbGroup != 0)
    throw std::invalid_argument("the int8 quad layout needs int8 weights and hidden a multiple of 64");
  PackedWeights p;
  p.format = quant::WeightFormat::int8;
  p.out = q.out;
  p.hidden = q.hidden;
  p.quads = true;
  const std::size_t h = q.hidden, blocks = (q.out + 15) / 16;
  p.codes.assign(blocks * 16 * h, 128);  // padding: code 0
  p.scales.assign(blocks * 16, 0.f);
  for (std::size_t j = 0; j < q.out; ++j) {
    p.scales[j] = q.scales.size() == 1 ? q.scales[0] : q.scales[j];
    for (std::size_t k = 0; k < h; ++k)
      p.codes[(j / 16 * h / 4 + k / 4) * 64 + 4 * (j % 16) + k % 4] = static_cast<std::uint8_t>(q.codes[j * h + k] ^ 0x80);
  }
  return p;
}

PackedWeights pack_weights(const quant::QuantizedWeights& q, bool int8_dynamic, bool int4_tiles) {
  PackedWeights p;
  p.format = q.recipe.weights;
  p.out = q.out;
  p.hidden = q.hidden;
  p.group = q.recipe.group;
  const std::size_t h = q.hidden;
  if (p.format == quant::WeightFormat::int4) {
    if (h % 32 != 0 || p.group % 32 != 0) throw std::invalid_argument("int4 kernels need hidden and group multiples of 32");
    p.block = p.group % 64 == 0 ? 64 : 32;
    p.bf16_group_params = all_bf16(q.scales) && all_bf16(q.zeros);  // the width the recipe rounded them to
    p.tiles = int4_tiles && h % 64 == 0;                            // steps of 64 k: groups of 32 in pairs
    if (p.tiles) {
      p.block = 64;
      pack_int4_tiles(q, p);
      return p;
    }
    const std::size_t half = p.block / 2;
    p.codes.assign(q.out * h / 2, 0);
    for (std::size_t j = 0; j < q.out; ++j) {
      auto code = [&](std::size_t k) {
        const std::size_t i = j * h + k;
        return (q.codes[i / 2] >> (4 * (i % 2))) & 0xf;
      };
      std::uint8_t* row = p.codes.data() + j * h / 2;
      for (std::size_t b = 0; b < h / p.block; ++b)
        for (std::size_t i = 0; i < half; ++i)
          row[half * b + i] = static_cast<std::uint8_t>(code(p.block * b + i) | code(p.block * b + half + i) << 4);
    }
    const std::size_t n = q.scales.size(), width = p.bf16_group_params ? 2 : 4;
    p.group_scales.assign(n * width, 0);
    p.group_zeros.assign(n * width, 0);
    for (std::size_t i = 0; i < n; ++i) {
      put_param(p.group_scales, i, q.scales[i], p.bf16_group_params);
      put_param(p.group_zeros, i, q.zeros[i], p.bf16_group_params);
    }
    return p;
  }
  p.codes = q.codes;
  p.scales.resize(q.out);
  for (std::size_t j = 0; j < q.out; ++j) p.scales[j] = q.scales.size() == 1 ? q.scales[0] : q.scales[j];
  if (int8_dynamic) {
    p.code_sums.assign(q.out, 0);
    for (std::size_t j = 0; j < q.out; ++j)
      for (std::size_t k = 0; k < h; ++k) p.code_sums[j] += static_cast<std::int8_t>(q.codes[j * h + k]);
  }
  return p;
}

PackedWeights pack_fp8_runs(const quant::QuantizedWeights& q) {
  PackedWeights p = pack_weights(q, false);
  p.fp8_runs = true;
  const std::size_t h = q.hidden;
  for (std::size_t j = 0; j < q.out; ++j)
    for (std::size_t t = 0; t + 64 <= h; t += 64)
      for (std::size_t kk = 0; kk < 64; ++kk) p.codes[j * h + t + fp8_run_byte(kk)] = q.codes[j * h + t + kk];
  return p;
}

Int4Path int4_path(const QuantKernels& k, bool bf16, std::size_t group, std::size_t rows, std::size_t hidden) {
  if (!bf16) return Int4Path::fp32;
  const bool amx = group % 64 == 0 && k.int4_tiles;  // the AMX kernel's tiles: groups of 64 and up
  // The limbs kernel takes groups of 32 too: on blocks (AVX2), and on tiles where hidden is whole
  // steps of 64 (a step's two halves are then two groups).
  const bool limbs_group = group % 64 == 0 || (group % 32 == 0 && (!k.int4_limbs_in_tiles || hidden % 64 == 0));
  // More rows go to AMX where it can take them: without it, the limbs kernel beats the vector
  // kernel at every row count (2.6-2.8x at 4 and 8 rows on the CI machine).
  if (limbs_group && k.int4_limbs && (rows <= kInt4LimbRows || !amx)) return Int4Path::limbs;
  if (amx) return Int4Path::amx;
  return k.int4_bf16 ? Int4Path::vector_bf16 : Int4Path::fp32;
}

QuantLayerKernels quant_layer_kernels(const quant::QuantizedWeights& q, bool bf16, std::size_t rows) {
  const auto& k = quant_kernels();
  const quant::Recipe& r = q.recipe;
  QuantLayerKernels out;
  if (r.weights == quant::WeightFormat::int4) out.int4 = int4_path(k, bf16, r.group, rows, q.hidden);
  out.int8_limbs = r.weights == quant::WeightFormat::int8 && k.int8_limbs && q.hidden % kInt8LimbGroup == 0 &&
                   (bf16 || r.activations == quant::ActivationFormat::int8_per_token);
  const bool fp8_bf16 = r.weights == quant::WeightFormat::fp8 && r.weight_only() && bf16 && k.fp8_bf16;
  out.packed = out.int8_limbs ? pack_int8_quads(q)
               : fp8_bf16     ? pack_fp8_runs(q)
                              : pack_weights(q, r.dynamic(), in_tiles(k, out.int4));
  return out;
}

std::string weight_only_kernel_name(const PackedWeights& w, Int4Path path) {
  if (w.format == quant::WeightFormat::int4) switch (path) {
      case Int4Path::limbs:
        if (!w.tiles)
          return "int4 groups x bf16 activations as 16-bit words (two int8 limbs' 254 hi + lo), vpmaddwd, up to " +
                 std::to_string(kAvx2LimbRows) + " rows per pass";
        return "int4 groups x bf16 activations as two int8 limbs per group, vpdpbusd, up to " +
               std::to_string(kLimbPassRows) + " rows per pass";
      case Int4Path::amx:
        return "int4 groups x bf16 activations: codes to bf16 tiles of 16 channels, AMX tdpbf16ps, up to 16 rows per pass";
      case Int4Path::vector_bf16:
        return std::string("int4 groups x bf16 activations: codes to bf16 by ") +
               (w.block == 64 ? "vpternlog and gf2p8affineqb" : "vpermw") + ", vdpbf16ps, several channels per pass";
      case Int4Path::fp32: break;
    }
  if (w.quads)
    return "int8 x bf16 activations as two int8 limbs per group of 64, " + int8_limbs_pass();
  if (w.fp8_runs) return "fp8 e4m3 x bf16 activations: codes to bf16 by vpermi2b, vdpbf16ps, several channels per pass";
  const char* codes = w.format == quant::WeightFormat::int4 ? "int4 groups"
                      : w.format == quant::WeightFormat::int8 ? "int8"
                                                              : "fp8 e4m3";
  return std::string("weight-only GEMV/GEMM, ") + codes + " decoded in the dot product, " + std::to_string(kRowsPerPass) +
         " rows per pass";
}

float* float_scratch(std::size_t n, int slot) {
  thread_local std::vector<float> slots[2];
  auto& v = slots[slot];
  if (v.size() < n) v.resize(n);
  return v.data();
}

std::string int8_limbs_pass() {
  return quant_kernels().int4_limbs_in_tiles
             ? fmt::format("vpdpbusd, {} rows per pass", kLimbPassRows)
             : fmt::format("vpsignb and vpmaddubsw, {} rows per pass", kAvx2Int8LimbRows);
}

std::string int8_dynamic_kernel_name(const QuantKernels& k) {
  const std::string isa = k.isa;
  if (isa == "avx2") return "int8 per-token activations x int8 weights, both widened to s16, vpmaddwd";
  if (isa == "base") return "int8 per-token activations x int8 weights, plain C++ in int32";
  return "int8 per-token activations x int8 weights, vpdpbusd (u8 shift compensated)";
}

void limbs_from_int8(const std::uint8_t* codes, float scale, std::size_t row, std::size_t hidden, XLimbs& x) {
  const std::size_t groups = hidden / kInt8LimbGroup;
  std::memcpy(x.hi.data() + row * hidden, codes, hidden);
  for (std::size_t g = 0; g < groups; ++g) {
    std::int32_t sum = 0;
    for (std::size_t k = g * kInt8LimbGroup; k < (g + 1) * kInt8LimbGroup; ++k) sum += static_cast<std::int8_t>(codes[k]);
    x.hi_sum[row * groups + g] = sum;
    x.lo_sum[row * groups + g] = 0;
    x.scale[row * groups + g] = scale;
  }
}

namespace {
template <class T, class Value>
void sums_of_groups(const T* x, std::size_t hidden, std::size_t group, float* sums, Value value) {
  constexpr std::size_t kLanes = 16;
  for (std::size_t g = 0; g < hidden / group; ++g) {
    const T* v = x + g * group;
    float lane[kLanes] = {};
    std::size_t k = 0;
    for (; k + kLanes <= group; k += kLanes)
      for (std::size_t i = 0; i < kLanes; ++i) lane[i] += value(v[k + i]);
    for (; k < group; ++k) lane[k % kLanes] += value(v[k]);
    float sum = 0;
    for (float l : lane) sum += l;
    sums[g] = sum;
  }
}
}  // namespace

void group_sums(const float* x, std::size_t hidden, std::size_t group, float* sums) {
  sums_of_groups(x, hidden, group, sums, [](float v) { return v; });
}

void group_sums(const std::uint16_t* xb, std::size_t hidden, std::size_t group, float* sums) {
  sums_of_groups(xb, hidden, group, sums, bf16_bits_value);
}

void split_limbs(const std::uint16_t* xb, std::size_t row, std::size_t hidden, std::size_t group, XLimbs& x) {
  quant_kernels().split(xb, row, hidden, group, x);
}

const QuantKernels& quant_kernels() {
  static const QuantKernels k = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512vnni")) {
      QuantKernels k = avx512_quant_kernels();
      // The limbs kernel needs no bf16 arithmetic: AVX-512 VNNI (above), VBMI and GFNI.
      if (__builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("gfni")) {
        k.int4_limbs = vnni_int4;
        k.int8_limbs = vnni_int8;
        k.split = vnni_split_limbs;
      }
      if (__builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512vbmi")) k.fp8_bf16 = avx512bf16_fp8;
      if (__builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("gfni")) {
        k.isa = "avx512_bf16";
        k.int4_bf16 = avx512bf16_int4;
        if (amx::bf16_usable()) {
          k.isa = "avx512_bf16+amx";
          k.int4_bf16 = amx_int4;
          k.int4_tiles = true;
        }
      }
      return k;
    }
    return avx2_quant_usable() ? avx2_quant_kernels() : base_quant_kernels();
  }();
  return k;
}

}  // namespace opmeter::linear
