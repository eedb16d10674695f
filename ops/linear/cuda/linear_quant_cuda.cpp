// cuda_quant: the quantized linear / ln_linear_<act> on CUDA devices (linear_quant_cuda_impls.cpp).
// Setup draws the spec's inputs, uploads x, b, gamma, beta, quantizes W on the host
// (QuantLinearOp::quantized_weights, cached per W) and uploads it once in the kernels' layout; W
// itself never goes to the device. Each check re-quantizes from the check's W.
//   weight-only: [LayerNorm kernel ->] the mma.sync GEMM decoding codes in registers
//                (quant_weight_only_sm80.cu) [-> split-K reduce with bias and activation]
//   dynamic:     prep + quantize kernels (quant_dynamic.cu) -> cuBLASLt s8 / e4m3 GEMM -> scale,
//                bias and activation epilogue
// Every stage is an NVTX range named "<recipe>:<stage>" (quantize, gemm, epilogue, layernorm; the
// weight-only split-K reduce is inside gemm). The weight-only layer is quant_weight_only_linear.hpp's.
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ops/gemm/cuda/gemm_cuda_types.hpp"
#include "ops/gemm/cuda/lt_matmul.hpp"
#include "ops/linear/cuda/quant_kernels.hpp"
#include "ops/linear/cuda/quant_weight_only_linear.hpp"
#include "ops/linear/quant_gpu_pack.hpp"
#include "ops/linear/quant_linear.hpp"
#include "ops/norm/cuda/norm_kernels.hpp"
#include "opmeter/cuda/device.hpp"

namespace opmeter::linear {
namespace {
using quant::ActivationFormat;
using quant::WeightFormat;

// An NVTX range for the scope.
struct Range {
  explicit Range(const std::string& name) { nvtxRangePushA(name.c_str()); }
  ~Range() { nvtxRangePop(); }
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;
};

class CudaQuantLinear : public Impl, public QuantLinearOp {
 public:
  void setup(const Case& c, const SetupOptions& options) override {
    bind(c);
    device_ = c.device_index();
    stream_ = cuda::stream(device_);
    recipe_ = recipe();
    shape_ = shape_of(case_);
    const auto descs = inputs();
    inputs_.clear();
    for (std::size_t i = 0; i < descs.size(); ++i) inputs_.emplace_back(i == kW ? 1 : descs[i].bytes());
    output_ = cuda::DeviceBuffer(output().bytes());
    for (const char* stage : {"layernorm", "quantize", "gemm", "epilogue"})
      names_[stage] = fmt::format("{}:{}", recipe_.name, stage);
    load(make_inputs(options.seed));
    plan();
    // A cold case in graph mode: more copies of the packed weight, the rest of the inputs shared.
    weight_copies_.clear();
    set_ = 0;
    if (rotates_inputs(c))
      for (std::size_t k = 1; k < options.copies; ++k) {
        auto& w = weight_copies_.emplace_back(weight_only_.copy_weights(stream_));
        w.plan(shape_.rows, cuda::props(device_).prop.multiProcessorCount, ksplit_of(case_));
      }
  }

  // Weight-only recipes read the weight through WeightOnlyLinear, one per copy.
  bool rotates_inputs(const Case& c) const override {
    const auto r = quant::parse_recipe(recipe_of(c));
    return r && r->weight_only();
  }

  void run(std::size_t copy) override {
    set_ = copy <= weight_copies_.size() ? copy : 0;
    launch();
    cuda::check(cudaGetLastError(), "kernel launch");
  }
  void sync() override { cuda::check(cudaStreamSynchronize(stream_), "kernel"); }

  Check verify(std::uint64_t seed) override {
    set_ = 0;
    const auto in = make_inputs(seed);
    load(in);
    HostTensor out(output());
    cuda::fill(output_.data(), poison_byte(out.desc().elem), output_.bytes(), stream_);
    run(0);
    sync();
    cuda::download(out.data(), output_.data(), out.bytes(), stream_);
    return check(in, out, seed);
  }

  std::map<std::string, std::string> details() const override {
    std::map<std::string, std::string> d;
    if (recipe_.dynamic()) {
      d = lt_.details();
      const char* act = recipe_.activations == ActivationFormat::int8_per_token ? "int8 per token"
                        : recipe_.activations == ActivationFormat::fp8_per_row  ? "fp8 e4m3 per token"
                                                                                : "fp8 e4m3 per tensor";
      d["kernel"] = fmt::format("our {} quantize kernel (fp32{}), cuBLASLt {} GEMM, our {} epilogue", act,
                                shape_.layernorm ? " LayerNorm" : "", recipe_.fp8() ? "fp8" : "s8 x s8 -> s32",
                                recipe_.activations == ActivationFormat::fp8_per_tensor
                                    ? "bias / activation (scales by cuBLASLt's scale pointers)"
                                    : "row x channel scale, bias, activation");
    } else {
      d["kernel"] = fmt::format("{} ({})", weight_only_.kernel(), to_string(case_.dtype));
      d["path"] = shape_.rows <= 16 ? "decode (M <= 16): 16-row tiles, K split for the fewest memory round trips"
                                    : "any M: 64-row tiles reuse each decoded weight 4 times";
    }
    if (shape_.layernorm)
      d["layernorm"] = recipe_.dynamic() ? "fp32 in the quantize kernel's prep pass"
                                         : fmt::format("our LayerNorm kernel ({}), through memory", ln_plan_.shape);
    return d;
  }

  std::map<std::string, Metric> metrics() const override {
    return {{"weight_bytes", Metric{double(weight_bytes_), "B", Better::lower, MetricFormat::bytes}}};
  }

 private:
  const void* in(std::size_t i) const { return inputs_.at(i).data(); }

  // Inputs but W to the device; W quantized and uploaded in the kernels' layout.
  void load(const HostTensors& host) {
    for (std::size_t i = 0; i < host.size(); ++i)
      if (i != kW) cuda::upload(inputs_.at(i).data(), host[i].data(), host[i].bytes(), stream_);
    const auto& q = quantized_weights(host);
    if (recipe_.dynamic()) {
      // cuBLASLt reads the canonical layout (W row-major: its column-major K x N, transposed).
      upload_vector(wcodes_, q.codes);
      upload_vector(wscale_, q.scales);
      weight_bytes_ = q.codes.size() + q.scales.size() * sizeof(float);
      return;
    }
    weight_only_.load(recipe_, q, scale_elem(), shape_.rows, stream_, operand_of(case_));
    weight_bytes_ = weight_only_.weight_bytes();
  }

  template <class V>
  void upload_vector(cuda::DeviceBuffer& dst, const std::vector<V>& v) {
    const std::size_t bytes = std::max<std::size_t>(1, v.size() * sizeof(V));
    if (dst.bytes() != bytes) dst = cuda::DeviceBuffer(bytes);
    if (!v.empty()) cuda::upload(dst.data(), v.data(), v.size() * sizeof(V), stream_);
  }

  void plan() {
    const auto& p = cuda::props(device_).prop;
    if (!recipe_.dynamic()) {
      if (shape_.layernorm) {
        ln_plan_ = norm::plan_rows(norm::RowOp::layernorm, case_.dtype, static_cast<std::int64_t>(shape_.rows),
                                   static_cast<int>(shape_.hidden), {p.multiProcessorCount, p.sharedMemPerBlockOptin});
        ln_ = cuda::DeviceBuffer(shape_.rows * shape_.hidden * size_of(case_.dtype));
      }
      weight_only_.plan(shape_.rows, p.multiProcessorCount, ksplit_of(case_));
      return;
    }
    const std::size_t mk = shape_.rows * shape_.hidden;
    xf_ = cuda::DeviceBuffer(mk * sizeof(float));
    rowmax_ = cuda::DeviceBuffer(shape_.rows * sizeof(float));
    xcodes_ = cuda::DeviceBuffer(mk);
    xscale_ = cuda::DeviceBuffer(shape_.rows * sizeof(float));
    const bool s8 = recipe_.activations == ActivationFormat::int8_per_token;
    acc_ = cuda::DeviceBuffer(shape_.rows * shape_.out * (s8 ? 4 : 2));
    quantize();  // valid codes and scales for the plan's timing runs
    const bool tensor = recipe_.activations == ActivationFormat::fp8_per_tensor;
    lt_.plan({.dtype = s8 ? DType::int8 : DType::fp8_e4m3,
              .M = shape_.rows,
              .N = shape_.out,
              .K = shape_.hidden,
              .a_scale = tensor ? static_cast<const float*>(xscale_.data()) : nullptr,
              .b_scale = tensor ? static_cast<const float*>(wscale_.data()) : nullptr},
             xcodes_.data(), wcodes_.data(), acc_.data(), stream_);
  }

  void quantize() {
    const auto M = static_cast<std::int64_t>(shape_.rows), K = static_cast<std::int64_t>(shape_.hidden);
    quant_cuda::launch_prep_rows(case_.dtype, in(kX), shape_.layernorm ? static_cast<const float*>(in(kGamma)) : nullptr,
                                 shape_.layernorm ? static_cast<const float*>(in(kBeta)) : nullptr, shape_.layernorm, M,
                                 K, static_cast<float*>(xf_.data()), static_cast<float*>(rowmax_.data()), stream_);
    quant_cuda::launch_quantize(recipe_.activations != ActivationFormat::int8_per_token,
                                recipe_.activations == ActivationFormat::fp8_per_tensor,
                                static_cast<const float*>(xf_.data()), static_cast<const float*>(rowmax_.data()), M, K,
                                static_cast<std::uint8_t*>(xcodes_.data()), static_cast<float*>(xscale_.data()), stream_);
  }

  void launch() {
    const auto M = static_cast<std::int64_t>(shape_.rows), N = static_cast<std::int64_t>(shape_.out);
    const auto* bias = static_cast<const float*>(in(kBias));
    if (recipe_.dynamic()) {
      {
        Range r(names_["quantize"]);
        quantize();
      }
      {
        Range r(names_["gemm"]);
        lt_.run(xcodes_.data(), wcodes_.data(), acc_.data(), stream_);
      }
      Range r(names_["epilogue"]);
      const bool s8 = recipe_.activations == ActivationFormat::int8_per_token;
      const bool row = recipe_.activations != ActivationFormat::fp8_per_tensor;
      quant_cuda::launch_scale_epilogue(case_.dtype, acc_.data(), s8 ? quant_cuda::AccType::s32 : quant_cuda::AccType::bf16,
                                        row ? static_cast<const float*>(xscale_.data()) : nullptr,
                                        row ? static_cast<const float*>(wscale_.data()) : nullptr, bias, shape_.act, M, N,
                                        output_.data(), stream_);
      return;
    }
    const void* x = in(kX);
    if (shape_.layernorm) {
      Range r(names_["layernorm"]);
      norm::launch_rows(ln_plan_,
                        {.x = in(kX),
                         .y = ln_.data(),
                         .gamma = static_cast<const float*>(in(kGamma)),
                         .beta = static_cast<const float*>(in(kBeta)),
                         .rows = M,
                         .hidden = static_cast<int>(shape_.hidden)},
                        stream_);
      x = ln_.data();
    }
    Range r(names_["gemm"]);  // dequantization fused into the GEMM; a split-K reduce after it
    (set_ == 0 ? weight_only_ : weight_copies_[set_ - 1]).launch(case_.dtype, x, bias, shape_.act, output_.data(), stream_);
  }

  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  quant::Recipe recipe_;
  Shape shape_{};
  std::map<std::string, std::string> names_;
  std::vector<cuda::DeviceBuffer> inputs_;  // W's is a placeholder: W goes up quantized
  cuda::DeviceBuffer output_;
  cuda::DeviceBuffer wcodes_, wscale_;  // codes; channel scales (floats) or int4 group words
  std::size_t weight_bytes_ = 0;
  // weight-only
  quant_cuda::WeightOnlyLinear weight_only_;
  std::vector<quant_cuda::WeightOnlyLinear> weight_copies_;  // sets 1.. of a cold case in graph mode
  std::size_t set_ = 0;                                       // the set the current call reads
  cuda::DeviceBuffer ln_;
  norm::RowPlan ln_plan_;
  // dynamic
  cuda::DeviceBuffer xf_, rowmax_, xcodes_, xscale_, acc_;
  gemm::LtMatmul lt_;
};

Support device_support(const Case& c, const cuda::DeviceProps& p) {
  const auto r = quant::parse_recipe(recipe_of(c));
  if (!r) return Support::no(fmt::format("unknown quantization recipe '{}'", recipe_of(c)));
  if (r->baseline()) return Support::no("cuda_quant runs quantized recipes (the baseline: impl cublaslt)");
  if (training(c))
    return Support::no("cuda_quant times inference only (mode=train: cublaslt_fp8_train for float8dq-tensor / -row, or the "
                       "worker's torch / torch_compile through autograd and torch._scaled_mm)");
  if (auto s = gemm::dtype_support(c.dtype, p, true); !s.ok) return s;
  // Weight-only recipes run our mma.sync GEMM; dynamic ones our CUDA-core passes around cuBLASLt.
  if (auto s = cuda::own_kernels_run_on(p, r->dynamic() ? cuda::Kernels::plain : cuda::Kernels::mma); !s.ok) return s;
  const bool fp8 = r->fp8() || r->activations == ActivationFormat::fp8_per_row ||
                   r->activations == ActivationFormat::fp8_per_tensor;
  if (fp8 && p.cc() < 89)
    return Support::no(fmt::format("{} needs fp8 (e4m3) support, compute capability 8.9 or newer; {} is {}.{}", r->name,
                                   p.prop.name, p.prop.major, p.prop.minor));
  const auto s = shape_of(c);
  if (s.hidden > std::size_t(std::numeric_limits<int>::max()) || s.rows > (std::size_t{1} << 40) || s.out > (std::size_t{1} << 40))
    return Support::no("shape beyond cuda_quant's index range");
  if (r->dynamic()) {
    if (r->activations == ActivationFormat::int8_per_token && (s.hidden % 4 != 0 || s.out % 4 != 0))
      return Support::no(fmt::format("cuBLASLt's int8 GEMM needs hidden and out multiples of 4 (hidden={}, out={})",
                                     s.hidden, s.out));
    if (r->activations != ActivationFormat::int8_per_token && (s.hidden % 16 != 0 || s.out % 8 != 0))
      return Support::no(fmt::format("cuBLASLt's fp8 GEMM needs hidden a multiple of 16 and out of 8 (hidden={}, out={})",
                                     s.hidden, s.out));
    return Support::yes();
  }
  if (auto w = quant_cuda::weight_only_device_support(*r, s.rows, p); !w.ok) return w;
  if (const auto asked = operand_of(c))
    if (auto o = quant_cuda::weight_only_operand_support(*r, s.rows, *asked); !o.ok) return o;
  if (const int ks = ksplit_of(c); ks > 0)
    return quant_cuda::weight_only_split_support(*r, s.rows, s.hidden, s.out, ks);
  return Support::yes();
}

}  // namespace

// The plugin's half of cuda_quant, named by its declarations in linear_quant_cuda_impls.cpp.
cuda::Factory cuda_quant_factory() {
  return {
      .supports = device_support,
      .make = [] { return std::make_unique<CudaQuantLinear>(); },
  };
}

}  // namespace opmeter::linear
