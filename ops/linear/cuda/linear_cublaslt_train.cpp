// The training step of `linear` and `ln_linear_<act>` on CUDA devices through cuBLASLt, impl
// `cublaslt_train` (declared for planning in ops/linear/linear_train_cuda_impls.cpp):
//   forward   [xhat = LayerNorm(x), mean and rstd kept: our kernel]
//             z = xhat W^T + b            one matmul, BIAS epilogue (into y itself for act=none)
//             y = act(z)               our kernel, z kept for the backward
//   backward  dz = dy * act'(z)        our kernel (act=none: dz is dy)
//             dx = dz W                one matmul, W read as stored (K x N row-major)
//             dW = dz^T xhat, db = sum dz  one matmul, dz and xhat read as stored, BGRADB epilogue
//                                      (the bias gradient as the reduction of dz over rows)
//             [LayerNorm backward: dx, dgamma, dbeta from dxhat: our kernels]
// phase=backward runs from a forward made at setup. Every check runs the whole step, whatever
// `phase` times.
#include <fmt/format.h>

#include "ops/gemm/cuda/gemm_cuda_types.hpp"
#include "ops/gemm/cuda/lt_matmul.hpp"
#include "ops/linear/cuda/bias_act_kernel.hpp"
#include "ops/linear/cuda/linear_train_cuda_base.hpp"
#include "ops/linear/linear.hpp"
#include "opmeter/cuda/device_impl.hpp"

namespace opmeter::linear {
namespace {

class CublasLtTrainLinear : public LinearTrainCudaBase<LinearOp> {
 public:
  std::map<std::string, std::string> details() const override {
    auto d = forward_.details();
    for (auto& [k, v] : wgrad_.details()) d["wgrad_" + k] = v;
    d["dgrad"] = "cuBLASLt, dy W with W read as stored";
    return d;
  }

 private:
  void prepare() override {
    const Shape& s = shape();
    const TrainLayout& l = layout();
    const void* bias = in(kBias);
    if (case_.dtype != DType::fp32) {  // cuBLASLt's bias has y's type
      if (bias_.bytes() != s.out * size_of(case_.dtype)) bias_ = cuda::DeviceBuffer(s.out * size_of(case_.dtype));
      launch_bias_convert(case_.dtype, static_cast<const float*>(in(kBias)), bias_.data(), static_cast<std::int64_t>(s.out),
                          stream());
      cuda::check(cudaGetLastError(), "bias conversion kernel");
      bias = bias_.data();
    }
    if (!forward_.planned()) {  // the buffers stay where they are: the plans hold
      allocate_kept();
      forward_.plan({.dtype = case_.dtype, .M = s.rows, .N = s.out, .K = s.hidden, .epilogue = CUBLASLT_EPILOGUE_BIAS, .bias = bias},
                    gemm_x(), in(kW), z(), stream());
      dgrad_.plan({.dtype = case_.dtype, .M = s.rows, .N = s.hidden, .K = s.out, .b_transposed = true}, dz(), in(kW),
                  dxhat(), stream());
      wgrad_.plan({.dtype = case_.dtype,
                   .M = s.out,
                   .N = s.hidden,
                   .K = s.rows,
                   .epilogue = CUBLASLT_EPILOGUE_BGRADB,
                   .bias = section(l.db),
                   .a_transposed = true,
                   .b_transposed = true},
                  dz(), gemm_x(), section(l.dw), stream());
    }
    if ((has_act() || layernorm()) && backward_alone()) forward();  // what the timed backward reads
  }

  void forward_gemm() override { forward_.run(gemm_x(), in(kW), z(), stream()); }

  void backward_gemms() override {
    dgrad_.run(dz(), in(kW), dxhat(), stream());
    wgrad_.run(dz(), gemm_x(), section(layout().dw), stream());  // db too (BGRADB)
  }

  gemm::LtMatmul forward_, dgrad_, wgrad_;
  cuda::DeviceBuffer bias_;    // fp16 / bf16: the bias in y's type
};

}  // namespace

cuda::Factory cublaslt_train_factory() {
  return {
      .supports = [](const Case& c, const cuda::DeviceProps& p) {
        if (auto s = gemm::dtype_support(c.dtype, p, true); !s.ok) return s;
        return cuda::own_kernels_run_on(p);
      },
      .make = [] { return std::make_unique<CublasLtTrainLinear>(); },
  };
}

}  // namespace opmeter::linear
