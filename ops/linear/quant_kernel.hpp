#pragma once
// opmeter's CPU kernels for quantized linear layers (impl `opmeter_quant`): weight-only GEMV/GEMM
// that dequantizes inside the dot product (int8, int4 with groups, fp8 e4m3), and the int8
// dynamic GEMM (int8 activations per token x int8 weights, s32 accumulation). Weights are
// repacked once from quant::QuantizedWeights into the layout below; each output channel's codes
// are contiguous, so a thread's channels are one sequential stream read once per call, and the
// rows of a block (up to kRowsPerPass at a time) share each decoded chunk. Compiled per ISA
// (quant_kernel_<isa>.cpp), chosen at run time.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ops/linear/quant/quantize.hpp"

namespace opmeter::linear {

// The kernels' layout of a layer's quantized weights (out x hidden).
//   int8 / fp8: codes[j * hidden + k] as in QuantizedWeights; scales[j] fp32 (per channel).
//   int4:       per channel j, hidden / 2 bytes in blocks of B = `block` weights (64 where the
//               group allows, else 32): block b (k = Bb .. Bb + B - 1) is B / 2 bytes, byte
//               i = q[Bb + i] | q[Bb + B/2 + i] << 4, so that one load's low nibbles and high
//               nibbles are each a contiguous run of x (a 32-byte load feeds 64 weights);
//               group g's scale and zero in group_scales / group_zeros as fp32 or bf16 bits.
//   int4 in tiles (`tiles`: blocks of 64, bf16 activations, for the AMX and limbs kernels): channels in
//               blocks of 16 (the last padded with code 0, scale 0), a block's codes in steps of
//               64 weights (512 bytes): byte 32 c + 2 i + p of step t holds channel i's weights
//               k = 64 t + 2 c + p (low nibble) and k + 32 (high nibble), c < 16, p < 2. Decoded,
//               the low nibbles of its 32 bytes are row c of tile B0 (k = 64 t .. 64 t + 31 as 16
//               pairs x 16 channels, AMX's VNNI layout), the high ones row c of B1 (the next 32).
//               Group parameters as [block][group][16 channels].
//   int8 in quads (`quads`: bf16 activations, for the limbs kernel; hidden a multiple
//               of 64): channels in blocks of 16 (the last padded with code 0, scale 0), a
//               block's codes in hidden / 4 runs of 64 bytes: byte 4 i + r of run t is channel
//               i's code at k = 4 t + r plus 128 (an unsigned byte, vpdpbusd's first operand).
//   fp8 in runs (`fp8_runs`: bf16 activations, for the AVX512_BF16 kernel): as fp8, but each
//               channel's whole runs of 64 codes reordered, byte fp8_run_byte(kk) of a run holding
//               k = 64 t + kk, so that the two byte unpacks of a 64-byte load give k in order; the
//               last partial run as it is.
//   int8 dynamic: as int8, plus code_sums[j] = sum_k code(j, k) (the u8 shift's compensation).
struct PackedWeights {
  quant::WeightFormat format = quant::WeightFormat::int8;
  std::size_t out = 0, hidden = 0, group = 0;
  std::size_t block = 32;  // int4: weights per block of the layout above (32 or 64)
  bool tiles = false;      // int4: the tile layout above
  bool quads = false;      // int8: the quad layout above
  bool fp8_runs = false;   // fp8: the runs of 64 above
  std::vector<std::uint8_t> codes;
  std::vector<float> scales;
  bool bf16_group_params = false;
  std::vector<std::uint8_t> group_scales, group_zeros;  // fp32 or bf16 values, one per (j, g)
  std::vector<std::int32_t> code_sums;
  // Bytes a call streams: codes and scales (and zeros) as stored.
  std::size_t bytes() const;
  // Bytes held: those and int8dq's code sums.
  std::size_t held_bytes() const { return bytes() + code_sums.size() * sizeof(std::int32_t); }
  float group_scale(std::size_t j, std::size_t g) const { return param(group_scales, param_index(j, g)); }
  float group_zero(std::size_t j, std::size_t g) const { return param(group_zeros, param_index(j, g)); }
  std::size_t param_index(std::size_t j, std::size_t g) const {
    const std::size_t groups = hidden / group;
    return tiles ? (j / 16 * groups + g) * 16 + j % 16 : j * groups + g;
  }
  // int4: the code of weight (j, k) in the layout above.
  unsigned int4_code(std::size_t j, std::size_t k) const {
    if (tiles) {
      const std::size_t kk = k % 64;
      const std::uint8_t b = codes[j / 16 * 8 * hidden + 512 * (k / 64) + 32 * (kk % 32 / 2) + 2 * (j % 16) + kk % 2];
      return kk < 32 ? b & 0xfu : b >> 4;
    }
    const std::uint8_t b = codes[(j * hidden + k - k % block) / 2 + k % (block / 2)];
    return k % block < block / 2 ? b & 0xfu : b >> 4;
  }

 private:
  float param(const std::vector<std::uint8_t>& v, std::size_t i) const;
};

// The canonical weights in the kernels' layout; int4 needs hidden % 32 == 0 (blocks of 64 where
// the group is a multiple of 64). int4_tiles: in tiles where hidden % 64 == 0 (callers ask for
// them where int4_path says a tile kernel runs).
PackedWeights pack_weights(const quant::QuantizedWeights& q, bool int8_dynamic, bool int4_tiles = false);
// int8 weight-only weights in quads (the limbs kernel's layout above); hidden % 64 == 0.
PackedWeights pack_int8_quads(const quant::QuantizedWeights& q);
// fp8 weights in runs of 64 (fp8_runs above).
PackedWeights pack_fp8_runs(const quant::QuantizedWeights& q);
// Where k (kk < 64) of a run of fp8 codes sits in the run: within each 16-byte lane L of the
// 64-byte load, bytes 0-7 hold k = 8 L .. 8 L + 7 and bytes 8-15 k = 32 + 8 L .. 32 + 8 L + 7
// (vpunpcklbw / vpunpckhbw take each lane's low / high 8 bytes).
constexpr std::size_t fp8_run_byte(std::size_t kk) { return 16 * (kk % 32 / 8) + 8 * (kk / 32) + kk % 8; }

constexpr std::size_t kRowsPerPass = 8;
// Channels per pass for R rows in the vdpbf16ps kernels (int4_bf16, fp8_bf16): about 8
// accumulators in flight, within 32 registers.
template <std::size_t R>
constexpr std::size_t kBf16ChannelsPerPass = R == 1   ? 8
                                             : R == 2 ? 4
                                             : R <= 4 ? 2
                                                      : 1;

// bf16 activations of a few rows as two int8 limbs per group (split_limbs: quant_kernel_limbs.cpp
// on AVX-512, quant_kernel_avx2.cpp on AVX2):
// x = scale (hi + lo / 254), scale = max|x| / 127 over the group, at most scale / 508 from x.
struct XLimbs {
  // The form the layer's kernel reads x in (limb_form), the one form resize allocates and split
  // fills (rows x hidden of int8 or int16: unused memory, and a store per value, otherwise):
  //   limbs: hi and lo (the VNNI kernels', the AVX2 int8 kernel's);
  //   one_limb: hi alone, int8 activation codes (limbs_from_int8; the int8 kernels skip lo);
  //   words: word = 254 hi + lo alone (the AVX2 int4 kernel's).
  enum class Form { limbs, one_limb, words };
  std::vector<std::int8_t> hi, lo;           // rows x hidden, for limbs (hi alone for one_limb)
  std::vector<std::int16_t> word;            // rows x hidden, for words
  std::vector<float> scale;                  // rows x groups
  std::vector<std::int32_t> hi_sum, lo_sum;  // rows x groups: the limbs' sums (the int8 kernel's u8 shift)
  Form form = Form::limbs;
  bool one_limb() const { return form == Form::one_limb; }
  // Set here, before the threads fill the rows.
  void resize(std::size_t rows, std::size_t hidden, std::size_t group, Form f) {
    form = f;
    hi.resize(f == Form::words ? 0 : rows * hidden);
    lo.resize(f == Form::limbs ? rows * hidden : 0);
    word.resize(f == Form::words ? rows * hidden : 0);
    scale.resize(rows * (hidden / group));
    hi_sum.resize(scale.size());
    lo_sum.resize(scale.size());
  }
};
// The limbs' group for int8 weights (per-channel scales: any group would do; 64 is one run of the
// quad layout's 16 loads).
constexpr std::size_t kInt8LimbGroup = 64;
// Rows up to which int4 layers take the limbs kernel: its vpdpbusd count grows with the rows,
// the AMX kernel's one tdpbf16ps serves up to 16. bench/quant_int4_gemv 8192 3584 64 100 M, one
// thread, CI machine: limbs / AMX 1.60x at M = 1, 1.25x at 2, 1.09x at 3, 0.88x at 4.
constexpr std::size_t kInt4LimbRows = 3;
// Rows per pass of the VNNI limbs kernels (int4 and int8): four rows' accumulators (16 for int4)
// fit the 32 registers, and a fourth row in the same pass shares the pass's loads and decodes.
constexpr std::size_t kLimbPassRows = 4;

struct QuantKernels {
  const char* isa;
  // Weight-only: c[m * ldc + j] = sum_k x[m * hidden + k] * w(j, k) for m < rows, j0 <= j < j1,
  // x in fp32, the weights dequantized on the fly (per-channel scales applied). int4: xsum holds
  // each row's sums of x over each group (rows x hidden / group): the zero points' term
  // -z s sum(x) is taken once per group, so the inner loop is one FMA per weight.
  void (*weight_only)(const PackedWeights& w, const float* x, const float* xsum, std::size_t rows, std::size_t j0,
                      std::size_t j1, float* c, std::size_t ldc);
  // int8 dynamic: xu[m * hidden + k] = activation code + 128 (u8), xscale[m] its scale;
  // c[m * ldc + j] = xscale[m] * scales[j] * sum_k code_x * code_w.
  void (*int8_dynamic)(const PackedWeights& w, const std::uint8_t* xu, const float* xscale, std::size_t rows,
                       std::size_t j0, std::size_t j1, float* c, std::size_t ldc);
  // int4 with bf16 activations (xb: bf16 bits, rows x hidden; xsum: their group sums as for
  // weight_only): the codes 0..15 are exact bf16 values, so x * q is a bf16 dot product
  // (vdpbf16ps) and only the group's scale and zero point are applied in fp32. Null where the CPU
  // has no AVX512_BF16 or no GFNI: bf16 activations then take weight_only in fp32.
  void (*int4_bf16)(const PackedWeights& w, const std::uint16_t* xb, const float* xsum, std::size_t rows, std::size_t j0,
                    std::size_t j1, float* c, std::size_t ldc);
  // Whether int4_bf16 runs weights packed in tiles (AMX) faster than in blocks.
  bool int4_tiles = false;
  // int4 with bf16 activations as int8 limbs (XLimbs), any rows (int4_path says when): in tiles
  // (groups of 32 and up), vpdpbusd, passes of kLimbPassRows where the CPU has AVX-512 VNNI, VBMI
  // and GFNI; in blocks (of 64, or 32 for groups of 32), vpmaddwd on the limbs' words, passes of
  // kAvx2LimbRows on AVX2 (int4_limbs_in_tiles says which); else null.
  void (*int4_limbs)(const PackedWeights& w, const XLimbs& x, const float* xsum, std::size_t rows, std::size_t j0,
                     std::size_t j1, float* c, std::size_t ldc) = nullptr;
  // int8 weight-only in quads with bf16 activations as int8 limbs in groups of kInt8LimbGroup
  // (any rows, in passes of kLimbPassRows or kAvx2Int8LimbRows): vpdpbusd (VNNI) or vpmaddubsw (AVX2), where
  // int4_limbs is; else null.
  void (*int8_limbs)(const PackedWeights& w, const XLimbs& x, std::size_t rows, std::size_t j0, std::size_t j1, float* c,
                     std::size_t ldc) = nullptr;
  // fp8 weight-only with bf16 activations (xb: bf16 bits, rows x hidden) on weights in runs
  // (fp8_runs): e4m3 codes are exact bf16 numbers, so x w is a bf16 dot product (vdpbf16ps).
  // Where the CPU has AVX512_BF16 and VBMI; else null (bf16 activations take weight_only in fp32).
  void (*fp8_bf16)(const PackedWeights& w, const std::uint16_t* xb, std::size_t rows, std::size_t j0, std::size_t j1,
                   float* c, std::size_t ldc) = nullptr;
  // Whether int4_limbs reads weights in tiles (the VNNI kernel) or in blocks (the AVX2 one).
  bool int4_limbs_in_tiles = true;
  // Whether int4_limbs reads x as words (XLimbs::Form::words: the AVX2 kernel), not as limbs.
  bool int4_limbs_words = false;
  // split_limbs on this ISA, into x's form (the forms its kernels read); null where int4_limbs is null.
  void (*split)(const std::uint16_t* xb, std::size_t row, std::size_t hidden, std::size_t group, XLimbs& x) = nullptr;
};
// The form bf16 x takes for the limbs kernel of int4 (else int8) weights on these kernels (int8dq's
// codes: one_limb).
inline XLimbs::Form limb_form(const QuantKernels& k, bool int4) {
  return int4 && k.int4_limbs_words ? XLimbs::Form::words : XLimbs::Form::limbs;
}

// Which kernel an int4 layer runs for its activations (bf16 or fp32), group and rows, on these
// kernels; amx reads the weights in tiles, limbs in tiles or blocks (in_tiles), the others in
// blocks.
//   limbs: bf16, groups of 32 and up (of 32 on tiles only where hidden % 64 == 0), up to
//          kInt4LimbRows rows (any, where the AMX kernel cannot take the layer), where int4_limbs
//          is (on the quiet CI machine it read at 91-109% of a plain read of the same bytes at
//          M = 1, 1.5-1.9x the AMX kernel: docs/BENCHMARKS.md); in tiles or blocks as
//          int4_limbs_in_tiles says;
//   amx: bf16, groups of 64 and up, more rows, where the AMX kernel is (int4_tiles);
//   vector_bf16: bf16 where int4_bf16 is; fp32: the rest (weight_only).
enum class Int4Path { limbs, amx, vector_bf16, fp32 };
Int4Path int4_path(const QuantKernels& k, bool bf16, std::size_t group, std::size_t rows, std::size_t hidden);
inline bool in_tiles(const QuantKernels& k, Int4Path p) {
  return p == Int4Path::amx || (p == Int4Path::limbs && k.int4_limbs_in_tiles);
}

// A quantized layer's kernels on this CPU and its weights packed for them, for its activations
// (bf16 or fp32) and rows: one choice for linear's opmeter_quant and transformer_block's
// projections.
//   int4: int4_path's kernel.
//   int8 weights: the limbs kernel on quads (int8_limbs) where the CPU has it, hidden is a
//   multiple of 64 and the activations become int8 limbs: split from bf16 (int8wo) or int8dq's
//   codes (any dtype), at every row count (quiet CI machine, int8wo: 1.5x the fp32 kernel at
//   M = 1, 1.9x at 2, 2.4x at 3, 3.3-3.9x from 4 to 64 rows: docs/BENCHMARKS.md).
//   fp8 weights: fp8_bf16 on weights in runs (packed.fp8_runs) where the CPU has it and the
//   activations are bf16.
struct QuantLayerKernels {
  Int4Path int4 = Int4Path::fp32;
  bool int8_limbs = false;
  PackedWeights packed;
};
QuantLayerKernels quant_layer_kernels(const quant::QuantizedWeights& q, bool bf16, std::size_t rows);

QuantKernels avx512_quant_kernels();
// AVX2 + FMA (quant_kernel_avx2.cpp), for CPUs without AVX-512 VNNI: weight_only and
// int8_dynamic on 8 lanes, and int4_limbs on weights in blocks of 64 (vpmaddwd); no int4_bf16.
QuantKernels avx2_quant_kernels();
// Rows per pass of the AVX2 limbs kernels: int4 in blocks of 64, int8 in quads.
constexpr std::size_t kAvx2LimbRows = 4, kAvx2Int8LimbRows = 2;
// How this CPU's int8 limbs kernel multiplies, and its rows per pass, for kernel names:
// "vpdpbusd, 4 rows per pass" (VNNI) or "vpsignb and vpmaddubsw, 2 rows per pass" (AVX2).
std::string int8_limbs_pass();
// This thread's scratch of at least n values, for the kernels compiled with ISA flags: a
// std::vector's members instantiated in those files could be the copies the linker keeps for the
// whole program, and carry their instructions to CPUs without them (quant_kernel.cpp has no flags).
float* float_scratch(std::size_t n, int slot);
inline bool avx2_quant_usable() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
QuantKernels base_quant_kernels();
// int4_bf16 with AVX512_BF16 and GFNI (quant_kernel_avx512bf16.cpp).
void avx512bf16_int4(const PackedWeights& w, const std::uint16_t* xb, const float* xsum, std::size_t rows, std::size_t j0,
                     std::size_t j1, float* c, std::size_t ldc);
// fp8_bf16 with AVX512_BF16 and VBMI (quant_kernel_fp8_bf16.cpp).
void avx512bf16_fp8(const PackedWeights& w, const std::uint16_t* xb, std::size_t rows, std::size_t j0, std::size_t j1,
                    float* c, std::size_t ldc);
// int4_bf16 on AMX tiles for weights packed in tiles, else avx512bf16_int4 (quant_kernel_amx.cpp);
// usable where amx::bf16_usable() (ops/tensor/amx.hpp).
void amx_int4(const PackedWeights& w, const std::uint16_t* xb, const float* xsum, std::size_t rows, std::size_t j0,
              std::size_t j1, float* c, std::size_t ldc);
// Row `row` of xb (bf16 bits, rows x hidden) into x's limbs (x sized for it), group by group, with
// quant_kernels().split (callable where int4_limbs is).
void split_limbs(const std::uint16_t* xb, std::size_t row, std::size_t hidden, std::size_t group, XLimbs& x);
// int8 activation codes of row `row` (int8dq's, one scale per row, within -127..127 as
// quantize_activations clamps them: the AVX2 kernel's vpsignb cannot negate -128) as x's hi limbs
// alone (no lo limb: the int8 kernel then skips it), with their group sums; x sized for kInt8LimbGroup, one
// limb (XLimbs::Form::one_limb).
void limbs_from_int8(const std::uint8_t* codes, float scale, std::size_t row, std::size_t hidden, XLimbs& x);
// Each group's sum of a row of x (fp32, or bf16 bits), sums[g] for g < hidden / group: the int4
// zero points' term (QuantKernels::weight_only's xsum). In 16 partial sums, which the compiler
// vectorizes: one running sum is a chain of dependent adds (2 us of a 240 us layer at K = 8192).
void group_sums(const float* x, std::size_t hidden, std::size_t group, float* sums);
void group_sums(const std::uint16_t* xb, std::size_t hidden, std::size_t group, float* sums);
// int4_limbs, int8_limbs and split on AVX-512 VNNI (quant_kernel_limbs.cpp).
void vnni_split_limbs(const std::uint16_t* xb, std::size_t row, std::size_t hidden, std::size_t group, XLimbs& x);
void vnni_int4(const PackedWeights& w, const XLimbs& x, const float* xsum, std::size_t rows, std::size_t j0,
               std::size_t j1, float* c, std::size_t ldc);
void vnni_int8(const PackedWeights& w, const XLimbs& x, std::size_t rows, std::size_t j0, std::size_t j1, float* c,
               std::size_t ldc);
const QuantKernels& quant_kernels();  // the best this CPU runs
// What a weight-only layer on these packed weights runs (details.kernel); path: int4's.
std::string weight_only_kernel_name(const PackedWeights& w, Int4Path path);
// What int8_dynamic runs on these kernels (details.kernel).
std::string int8_dynamic_kernel_name(const QuantKernels& k);

// Shared by every ISA: one e4m3 byte's value (NaN codes never occur: scales keep |w| <= 448).
inline float e4m3_value(std::uint8_t b) {
  // The 7 magnitude bits placed under fp32's exponent give 2^(e-127)(1 + m/8) (a denormal for
  // e4m3's subnormals); scaled by 2^120 that is e4m3's 2^(e-7)(1 + m/8), subnormals included.
  std::uint32_t bits = (std::uint32_t(b & 0x7f) << 20) | (std::uint32_t(b & 0x80) << 24);
  float f;
  __builtin_memcpy(&f, &bits, sizeof f);
  return f * 0x1p120f;
}
inline float bf16_bits_value(std::uint16_t v) {
  std::uint32_t bits = std::uint32_t(v) << 16;
  float f;
  __builtin_memcpy(&f, &bits, sizeof f);
  return f;
}
// Group g's scale or zero from a packed array of bf16 or fp32 values (read inline by the
// kernels: a call per group would spill their accumulators).
inline float group_param(const std::uint8_t* p, std::size_t g, bool bf16) {
  if (bf16) {
    std::uint16_t b;
    __builtin_memcpy(&b, p + 2 * g, 2);
    return bf16_bits_value(b);
  }
  float f;
  __builtin_memcpy(&f, p + 4 * g, 4);
  return f;
}

}  // namespace opmeter::linear
