// The float8 training step of `linear` and `ln_linear_<act>` on CUDA devices, impl
// `cublaslt_fp8_train` (declared in linear_train_cuda_impls.cpp): torchao's Float8Linear recipe
// (quant=float8dq-tensor / float8dq-row, mode=train) on cuBLASLt's fp8 GEMMs.
//   forward   [xhat = LayerNorm(x), mean and rstd kept: our kernel]
//             amax of xhat and of W (per tensor, or per row and per column for rowwise) -> scales
//             xhat, W -> e4m3 codes and their transposed copies x^T, W^T (one read each)
//             z = (xq Wq^T) sx sw + b       fp8 GEMM, scale pointers, BIAS epilogue (or, where
//                                           cuBLASLt has none with these scales, our bias kernel), bf16 z
//             y = act(z)                    our kernel, z kept for the backward
//   backward  dz = dy * act'(z)             our kernel (act=none: dz is dy)
//             amax and column sums of dz -> scales, db; dz -> e5m2 codes and dz^T
//             dx = dzq (W^T)q^T             fp8 GEMM (dgrad)
//             dW = (dz^T)q (x^T)q^T         fp8 GEMM (wgrad)
//             [LayerNorm backward: dx, dgamma, dbeta from dxhat: our kernels]
// Hopper's fp8 GEMM takes only TN (both operands K-contiguous): the transposed copies are made
// in the step, as torchao makes them, and timed with it (fp8_train_plan.hpp has the layouts).
// Every amax, scale and cast runs on the device, so the step never waits for the host; scaling
// disabled for a tensor: scale 1, set in prepare, and no amax pass. The forward makes x^T and
// W^T too (what the backward keeps); phase=backward runs from a forward made at setup.
#include <fmt/format.h>

#include "opmeter/cuda/device_impl.hpp"
#include "ops/gemm/cuda/gemm_cuda_types.hpp"
#include "ops/gemm/cuda/lt_matmul.hpp"
#include "ops/linear/cuda/bias_act_kernel.hpp"
#include "ops/linear/cuda/fp8_train_kernels.hpp"
#include "ops/linear/cuda/linear_train_cuda_base.hpp"
#include "ops/linear/fp8_train_plan.hpp"
#include "ops/linear/quant_linear.hpp"

namespace opmeter::linear {
namespace {
using fp8_train::Format;

// One bf16 tensor's fp8 form: codes, transposed codes and scales ([rows | cols] per row and per
// column of the bf16 tensor when rowwise, else one).
class Fp8Tensor {
 public:
  void allocate(std::size_t rows, std::size_t cols, Format f, bool rowwise, bool dynamic) {
    rows_ = rows, cols_ = cols, format_ = f, rowwise_ = rowwise, dynamic_ = dynamic;
    codes_ = cuda::DeviceBuffer(rows * cols);
    codes_t_ = cuda::DeviceBuffer(rows * cols);
    scales_ = cuda::DeviceBuffer((rowwise ? rows + cols : 1) * sizeof(float));
  }
  // Scaling disabled: every scale 1 (scale_from_amax of 0), once.
  void set_unit_scales(cudaStream_t s) const {
    if (dynamic_) return;
    cuda::check(cudaMemsetAsync(scales_.data(), 0, scales_.bytes(), s), "cudaMemsetAsync");
    fp8_cuda::launch_scales(scale_data(), scale_count(), fp8_train::max_finite(format_), s);
  }
  // Codes and transposed codes of src (rows x cols bf16), with column sums of src into col_sum if given.
  void quantize(const void* src, float* col_sum, cudaStream_t s) const {
    if (dynamic_ || col_sum) {
      fp8_cuda::Reduce r{.col_sum = col_sum};
      if (dynamic_ && rowwise_) {
        r.row_amax = row_scale();
        r.col_amax = col_scale();
      } else if (dynamic_) {
        r.tensor_amax = row_scale();
      }
      fp8_cuda::launch_reduce(src, i64(rows_), i64(cols_), r, s);
      if (dynamic_) fp8_cuda::launch_scales(scale_data(), scale_count(), fp8_train::max_finite(format_), s);
    }
    fp8_cuda::launch_quantize({.src = src,
                               .rows = i64(rows_),
                               .cols = i64(cols_),
                               .row_scale = row_scale(),
                               .col_scale = col_scale(),
                               .rowwise = rowwise_,
                               .format = format_,
                               .codes = static_cast<std::uint8_t*>(codes_.data()),
                               .codes_t = static_cast<std::uint8_t*>(codes_t_.data())},
                              s);
  }
  const void* codes() const { return codes_.data(); }
  const void* codes_t() const { return codes_t_.data(); }
  // The codes' scales (one per row when rowwise) and the transposed codes' (one per column of src).
  float* row_scale() const { return scale_data(); }
  float* col_scale() const { return scale_data() + (rowwise_ ? rows_ : 0); }

 private:
  static std::int64_t i64(std::size_t v) { return static_cast<std::int64_t>(v); }
  float* scale_data() const { return static_cast<float*>(scales_.data()); }
  std::int64_t scale_count() const { return i64(rowwise_ ? rows_ + cols_ : 1); }

  std::size_t rows_ = 0, cols_ = 0;
  Format format_ = Format::e4m3;
  bool rowwise_ = false, dynamic_ = true;
  cuda::DeviceBuffer codes_, codes_t_, scales_;
};

class CublasLtFp8TrainLinear : public LinearTrainCudaBase<QuantLinearOp> {
 public:
  std::map<std::string, std::string> details() const override {
    auto d = forward_.details();
    for (auto& [k, v] : dgrad_.details()) d["dgrad_" + k] = v;
    for (auto& [k, v] : wgrad_.details()) d["wgrad_" + k] = v;
    if (bias_kernel_)
      d["bias"] = "our bias kernel after the GEMM (cuBLASLt offered no BIAS epilogue with these scales)";
    const Float8Knobs k = float8_knobs(case_);
    d["float8"] = fmt::format(
        "e4m3 x and W, {} dz; scales {} (input {}, weight {}, grad {}); our amax / scale / transpose-and-quantize "
        "kernels (x^T, W^T, dz^T made in the step); db as column sums of dz",
        k.rowwise ? "e4m3" : "e5m2", k.rowwise ? "per row (rowwise)" : "per tensor",
        k.scale_input ? "dynamic" : "disabled", k.scale_weight ? "dynamic" : "disabled",
        k.scale_grad ? "dynamic" : "disabled");
    return d;
  }

 private:
  void prepare() override {
    const Shape& s = shape();
    const TrainLayout& l = layout();
    if (bias_.bytes() != s.out * sizeof(std::uint16_t)) bias_ = cuda::DeviceBuffer(s.out * sizeof(std::uint16_t));
    launch_bias_convert(DType::bf16, static_cast<const float*>(in(kBias)), bias_.data(),
                        static_cast<std::int64_t>(s.out), stream());
    cuda::check(cudaGetLastError(), "bias conversion kernel");
    if (!forward_.planned()) {  // the buffers stay where they are: the plans hold
      const Float8Knobs k = float8_knobs(case_);
      x8_.allocate(s.rows, s.hidden, Format::e4m3, k.rowwise, k.scale_input);
      w8_.allocate(s.out, s.hidden, Format::e4m3, k.rowwise, k.scale_weight);
      dz8_.allocate(s.rows, s.out, fp8_train::grad_format(k.rowwise), k.rowwise, k.scale_grad);
      for (auto* t : {&x8_, &w8_, &dz8_}) t->set_unit_scales(stream());
      db_ = cuda::DeviceBuffer(s.out * sizeof(float));
      allocate_kept();
      if (has_act())  // real gradients for the plans' timing runs
        cuda::check(cudaMemcpyAsync(dz_.data(), in(dy_index()), dz_.bytes(), cudaMemcpyDeviceToDevice, stream()), "dz");
      // Real codes and scales for the plans' timing runs.
      x8_.quantize(gemm_x(), nullptr, stream());
      w8_.quantize(in(kW), nullptr, stream());
      dz8_.quantize(dz(), static_cast<float*>(db_.data()), stream());
      const auto gemms = fp8_train::step_gemms(s, k.rowwise);  // the layouts the plans below follow
      const gemm::LtProblem common{.dtype = DType::fp8_e4m3, .row_scales = k.rowwise, .fast_accum = k.fast_accum};
      auto problem = [&](const fp8_train::Gemm& g, const float* a_scale, const float* b_scale) {
        gemm::LtProblem p = common;
        p.M = g.M, p.N = g.N, p.K = g.K;
        p.a_scale = a_scale, p.b_scale = b_scale;
        p.a_e5m2 = g.a.format == Format::e5m2;
        p.b_e5m2 = g.b.format == Format::e5m2;
        return p;
      };
      auto fwd = problem(gemms[0], x8_.row_scale(), w8_.row_scale());
      fwd.epilogue = CUBLASLT_EPILOGUE_BIAS;
      fwd.bias = bias_.data();
      try {
        forward_.plan(fwd, x8_.codes(), w8_.codes(), z(), stream());
      } catch (const Unsupported&) {  // no BIAS epilogue with these scales here: our bias kernel after the GEMM
        fwd.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
        fwd.bias = nullptr;
        forward_.plan(fwd, x8_.codes(), w8_.codes(), z(), stream());
        bias_kernel_ = true;
      }
      dgrad_.plan(problem(gemms[1], dz8_.row_scale(), w8_.col_scale()), dz8_.codes(), w8_.codes_t(), dxhat(), stream());
      wgrad_.plan(problem(gemms[2], dz8_.col_scale(), x8_.col_scale()), dz8_.codes_t(), x8_.codes_t(), section(l.dw),
                  stream());
    }
    if (backward_alone()) forward();  // what the timed backward reads
  }

  void forward_gemm() override {
    const Shape& s = shape();
    x8_.quantize(gemm_x(), nullptr, stream());
    w8_.quantize(in(kW), nullptr, stream());
    forward_.run(x8_.codes(), w8_.codes(), z(), stream());
    if (bias_kernel_)
      launch_bias_add(case_.dtype, z(), static_cast<const float*>(in(kBias)), static_cast<std::int64_t>(s.rows),
                      static_cast<std::int64_t>(s.out), stream());
  }

  void backward_gemms() override {
    const Shape& s = shape();
    const TrainLayout& l = layout();
    dz8_.quantize(dz(), static_cast<float*>(db_.data()), stream());
    dgrad_.run(dz8_.codes(), w8_.codes_t(), dxhat(), stream());
    wgrad_.run(dz8_.codes_t(), x8_.codes_t(), section(l.dw), stream());
    launch_bias_convert(case_.dtype, static_cast<const float*>(db_.data()), section(l.db),
                        static_cast<std::int64_t>(s.out), stream());
  }

  bool bias_kernel_ = false;  // the bias by launch_bias_add where cuBLASLt has no BIAS epilogue for the scales
  gemm::LtMatmul forward_, dgrad_, wgrad_;
  Fp8Tensor x8_, w8_, dz8_;
  cuda::DeviceBuffer bias_;                        // the bias in bf16, cuBLASLt's bias type for a bf16 output
  cuda::DeviceBuffer db_;                          // dz's column sums (fp32), rounded into db
};

}  // namespace

cuda::Factory cublaslt_fp8_train_factory() {
  return {
      .supports =
          [](const Case& c, const cuda::DeviceProps& p) {
            if (auto s = fp8_train::device_support(p.cc(), float8_knobs(c).rowwise, p.prop.name); !s.ok) return s;
            if (auto s = gemm::dtype_support(DType::fp8_e4m3, p, true); !s.ok) return s;
            return cuda::own_kernels_run_on(p);
          },
      .make = [] { return std::make_unique<CublasLtFp8TrainLinear>(); },
  };
}

}  // namespace opmeter::linear
