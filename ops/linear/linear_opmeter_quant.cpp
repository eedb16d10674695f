// opmeter's quantized linear layers on the CPU (every recipe but float8dq: no fp8 GEMM here).
// Setup quantizes W once (QuantLinearOp::quantized_weights) and repacks it for the kernels
// (quant_kernel.hpp), one packed copy per input set: a cold case's calls each read their own set's
// weights, which together exceed the cache as the unquantized impls' do. A call goes through the
// rows in blocks: each block's activations are made fp32 (LayerNorm'd for ln_linear; for int8dq
// quantized per token; bf16 ones the bf16 kernels read in place), then the threads split the
// output channels, each streaming its channels' codes once for the whole block and finishing its
// columns with bias and activation while they are in cache.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "ops/linear/quant_kernel.hpp"
#include "ops/linear/quant_linear.hpp"

namespace opmeter::linear {
namespace {
constexpr std::size_t kRowBlock = 64;       // rows whose weights are decoded once (per pass of 8)
constexpr std::size_t kChannelBlock = 16;   // output channels per unit of a thread's work

class OpmeterQuantLinear : public HostImpl<QuantLinearOp> {
 public:
  void prepare() override {
    const auto s = shape_of(case_);
    recipe_ = recipe();
    // The kernels for these activations and rows, and the weights packed for them.
    auto kernels = quant_layer_kernels(quantized_weights(host_inputs(0)), bf16(), s.rows);
    path_ = kernels.int4;
    int8_limbs_ = kernels.int8_limbs && !recipe_.dynamic();
    dq_limbs_ = kernels.int8_limbs && recipe_.dynamic();  // int8dq's codes as x's one limb
    packed_ = std::move(kernels.packed);
    fp8_bf16_ = packed_.fp8_runs;                  // the layout only fp8_bf16 reads
    weight_copies_.assign(copies() - 1, packed_);  // the same values at other addresses
    held_ = HeldBytes();                           // first, so that the new count never stands beside the old one
    held_ = HeldBytes(copies() * packed_.held_bytes());
    limbs_ = path_ == Int4Path::limbs || int8_limbs_;
    bf16_x_ = path_ != Int4Path::fp32 || int8_limbs_ || fp8_bf16_;
    const std::size_t rows = std::min(kRowBlock, s.rows);
    xs_.assign(rows * s.hidden, 0.f);
    tile_.assign(rows * s.out, 0.f);
    xsum_.assign(packed_.format == quant::WeightFormat::int4 ? rows * (s.hidden / recipe_.group) : 1, 0.f);
    xb_.assign(bf16_x_ && (!bf16() || s.layernorm) ? rows * s.hidden : 0, 0);  // else read in place (run)
    if (limbs_ || dq_limbs_)
      limb_x_.resize(rows, s.hidden, limb_group(),
                     dq_limbs_ ? XLimbs::Form::one_limb : limb_form(quant_kernels(), path_ == Int4Path::limbs));
    if (recipe_.dynamic()) {
      codes_.assign(rows * s.hidden, 0);
      xscale_.assign(rows, 1.f);
    }
  }

  void run(std::size_t copy) override {
    const auto s = shape_of(case_);
    const auto& qk = quant_kernels();
    const auto& tk = tensor::kernels();
    const bool is_bf16 = bf16();
    const void* x = in(copy, kX);
    const float* bias = vec(host_inputs(copy), kBias);
    const float* gamma = s.layernorm ? vec(host_inputs(copy), kGamma) : nullptr;
    const float* beta = s.layernorm ? vec(host_inputs(copy), kBeta) : nullptr;
    char* y = static_cast<char*>(out(copy));
    const std::size_t ybytes = is_bf16 ? 2 : 4, h = s.hidden;
    const std::size_t blocks = (s.out + kChannelBlock - 1) / kChannelBlock;
    const std::size_t groups = packed_.format == quant::WeightFormat::int4 ? h / recipe_.group : 0;
    const PackedWeights& w = copy == 0 ? packed_ : weight_copies_.at(copy - 1);
    // bf16 input is its own rounding: where no LayerNorm comes first, the bf16 kernels read its
    // rows in place (as quant_projection does), and only their group sums and limbs are made here.
    const bool in_place = bf16_x_ && is_bf16 && !s.layernorm;
    for (std::size_t r0 = 0; r0 < s.rows; r0 += kRowBlock) {
      const std::size_t mr = std::min(kRowBlock, s.rows - r0);
      const std::uint16_t* xb = in_place ? static_cast<const std::uint16_t*>(x) + r0 * h : xb_.data();
#pragma omp parallel
      {
#pragma omp for schedule(static)
        for (std::size_t i = 0; i < mr; ++i) {
          if (in_place) {
            if (groups > 0) group_sums(xb + i * h, h, recipe_.group, xsum_.data() + i * groups);
            if (limbs_) split_limbs(xb, i, h, limb_group(), limb_x_);
            continue;
          }
          float* xi = xs_.data() + i * h;
          if (is_bf16) {
            const auto* src = static_cast<const std::uint16_t*>(x) + (r0 + i) * h;
            for (std::size_t k = 0; k < h; ++k) xi[k] = from_bf16(src[k]);
          } else {
            std::memcpy(xi, static_cast<const float*>(x) + (r0 + i) * h, h * sizeof(float));
          }
          if (s.layernorm) tk.layernorm(false, xi, xi, gamma, beta, 1, h);  // nested: this thread only
          if (bf16_x_) {
            // The dot product's operands, rounded as a bf16 model rounds LayerNorm's output; the
            // group sums below are of the same values.
            std::uint16_t* bi = xb_.data() + i * h;
            for (std::size_t k = 0; k < h; ++k) {
              bi[k] = to_bf16(xi[k]);
              xi[k] = from_bf16(bi[k]);
            }
            if (limbs_) split_limbs(xb, i, h, limb_group(), limb_x_);
          }
          if (groups > 0) group_sums(xi, h, recipe_.group, xsum_.data() + i * groups);
        }
        if (recipe_.dynamic()) {
#pragma omp single
          {
            quant::quantize_activations(recipe_, xs_.data(), mr, h, codes_.data(), xscale_.data());
            if (dq_limbs_)  // the codes as x's one limb, against the weights in quads
              for (std::size_t i = 0; i < mr; ++i) limbs_from_int8(codes_.data() + i * h, xscale_[i], i, h, limb_x_);
            else
              for (auto& b : codes_) b ^= 0x80;  // s8 code + 128: int8_dynamic's u8 operand
          }
        }
        // Contiguous channel ranges per thread: each streams one run of codes.
#pragma omp for schedule(static)
        for (std::size_t b = 0; b < blocks; ++b) {
          const std::size_t j0 = b * kChannelBlock, j1 = std::min(s.out, j0 + kChannelBlock);
          if (dq_limbs_) qk.int8_limbs(w, limb_x_, mr, j0, j1, tile_.data(), s.out);
          else if (recipe_.dynamic())
            qk.int8_dynamic(w, codes_.data(), xscale_.data(), mr, j0, j1, tile_.data(), s.out);
          else if (int8_limbs_) qk.int8_limbs(w, limb_x_, mr, j0, j1, tile_.data(), s.out);
          else if (path_ == Int4Path::limbs) qk.int4_limbs(w, limb_x_, xsum_.data(), mr, j0, j1, tile_.data(), s.out);
          else if (path_ != Int4Path::fp32) qk.int4_bf16(w, xb, xsum_.data(), mr, j0, j1, tile_.data(), s.out);
          else if (fp8_bf16_) qk.fp8_bf16(w, xb, mr, j0, j1, tile_.data(), s.out);
          else qk.weight_only(w, xs_.data(), xsum_.data(), mr, j0, j1, tile_.data(), s.out);
          tk.epilogue(s.act, tile_.data() + j0, s.out, bias + j0, is_bf16, y + (r0 * s.out + j0) * ybytes, s.out, mr, j1 - j0);
        }
      }
    }
  }

  std::map<std::string, std::string> details() const override {
    std::map<std::string, std::string> d = {{"isa", quant_kernels().isa}, {"kernel", kernel_name()}};
    if (!weight_copies_.empty())
      d["weight_copies"] = fmt::format("{}: one packed copy per input set, each call reading its own", copies());
    return d;
  }

  std::map<std::string, Metric> metrics() const override {
    return {{"weight_bytes", Metric{double(packed_.bytes()), "B", Better::lower, MetricFormat::bytes}}};
  }

 private:
  std::string kernel_name() const {
    if (dq_limbs_)
      return "int8 per-token activations x int8 weights in quads, " + int8_limbs_pass();
    if (recipe_.dynamic()) return int8_dynamic_kernel_name(quant_kernels());
    return weight_only_kernel_name(packed_, path_);
  }

  quant::Recipe recipe_;
  PackedWeights packed_;                      // read by the calls of input set 0
  std::vector<PackedWeights> weight_copies_;  // sets 1..: the same, elsewhere in memory
  HeldBytes held_;                            // the copies' bytes, in the case's peak memory
  std::vector<float> xs_, xsum_, tile_, xscale_;
  std::vector<std::uint8_t> codes_;
  std::size_t limb_group() const { return int8_limbs_ || dq_limbs_ ? kInt8LimbGroup : recipe_.group; }

  Int4Path path_ = Int4Path::fp32;
  bool int8_limbs_ = false, dq_limbs_ = false, limbs_ = false, bf16_x_ = false, fp8_bf16_ = false;
  std::vector<std::uint16_t> xb_;
  XLimbs limb_x_;
};

Support supports(const Case& c) {
  auto r = quant::parse_recipe(recipe_of(c));
  if (!r) return Support::no(fmt::format("unknown quantization recipe '{}'", recipe_of(c)));
  if (r->activations == quant::ActivationFormat::fp8_per_tensor || r->activations == quant::ActivationFormat::fp8_per_row)
    return Support::no("no fp8 GEMM on CPUs: float8dq runs on GPUs");
  if (training(c)) return Support::no("opmeter_quant times inference only (mode=train: impl onednn_train for the baseline; float8dq in the worker's torch forms on GPUs)");
  if (r->weights == quant::WeightFormat::int4 && shape_of(c).hidden % 32 != 0)
    return Support::no("opmeter_quant's int4 kernels need hidden to be a multiple of 32");
  return Support::yes();
}

const bool registered = [] {
  for (auto& op : linear_ops())
    Registry::global().add(ImplDef{
        .op = op,
        .impl = "opmeter_quant",
        .summary = "quantized weights decoded inside the dot product (int8/int4/fp8 weight-only) and int8 dynamic, on AVX-512 VNNI or AVX2",
        .dtypes = {DType::fp32, DType::bf16},
        .supports = supports,
        .make = [] { return std::make_unique<OpmeterQuantLinear>(); },
        .needs = {kQuant},
    });
  return true;
}();

}  // namespace
}  // namespace opmeter::linear
