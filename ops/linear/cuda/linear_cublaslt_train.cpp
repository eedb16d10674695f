// The training step of `linear` (act=none) on CUDA devices through cuBLASLt, impl
// `cublaslt_train` (declared for planning in ops/linear/linear_train_cuda_impls.cpp):
//   forward   y = x W^T + b            one matmul, BIAS epilogue
//   backward  dx = dy W                one matmul, W read as stored (K x N row-major)
//             dW = dy^T x, db = sum dy one matmul, dy and x read as stored, BGRADB epilogue
//                                      (the bias gradient as the reduction of dy over rows)
// With act=none dz = dy, so the backward reads only x, W and dy: phase=backward needs no saved
// forward. Every check runs the whole step, whatever `phase` times.
#include <fmt/format.h>

#include "ops/gemm/cuda/gemm_cuda_types.hpp"
#include "ops/gemm/cuda/lt_matmul.hpp"
#include "ops/linear/cuda/bias_act_kernel.hpp"
#include "ops/linear/linear.hpp"
#include "src/cuda/plugin/device_impl.hpp"

namespace opmeter::linear {
namespace {

class CublasLtTrainLinear : public cuda::DeviceImpl<LinearOp> {
 public:
  Check verify(std::uint64_t seed) override {
    checking_ = true;
    Check c = cuda::DeviceImpl<LinearOp>::verify(seed);
    checking_ = false;
    return c;
  }

  std::map<std::string, std::string> details() const override {
    auto d = forward_.details();
    for (auto& [k, v] : wgrad_.details()) d["wgrad_" + k] = v;
    d["dgrad"] = "cuBLASLt, dy W with W read as stored";
    return d;
  }

 private:
  char* section(std::size_t offset) const { return static_cast<char*>(out()) + offset * size_of(case_.dtype); }

  void prepare() override {
    const Shape s = shape_of(case_);
    const TrainLayout l = train_layout(s);
    const void* bias = in(kBias);
    if (case_.dtype != DType::fp32) {  // cuBLASLt's bias has y's type
      if (bias_.bytes() != s.out * size_of(case_.dtype)) bias_ = cuda::DeviceBuffer(s.out * size_of(case_.dtype));
      launch_bias_convert(case_.dtype, static_cast<const float*>(in(kBias)), bias_.data(), static_cast<std::int64_t>(s.out),
                          stream());
      cuda::check(cudaGetLastError(), "bias conversion kernel");
      bias = bias_.data();
    }
    if (forward_.planned()) return;  // the buffers stay where they are: the plans hold
    const void* dy = in(dy_index());
    forward_.plan({.dtype = case_.dtype, .M = s.rows, .N = s.out, .K = s.hidden, .epilogue = CUBLASLT_EPILOGUE_BIAS, .bias = bias},
                  in(kX), in(kW), section(l.y), stream());
    dgrad_.plan({.dtype = case_.dtype, .M = s.rows, .N = s.hidden, .K = s.out, .b_transposed = true}, dy, in(kW),
                section(l.dx), stream());
    wgrad_.plan({.dtype = case_.dtype,
                 .M = s.out,
                 .N = s.hidden,
                 .K = s.rows,
                 .epilogue = CUBLASLT_EPILOGUE_BGRADB,
                 .bias = section(l.db),
                 .a_transposed = true,
                 .b_transposed = true},
                dy, in(kX), section(l.dw), stream());
  }

  void launch() override {
    const TrainLayout l = train_layout(shape_of(case_));
    const Phase p = checking_ ? Phase::step : phase_of(case_);
    if (p != Phase::backward) forward_.run(in(kX), in(kW), section(l.y), stream());
    if (p == Phase::forward) return;
    dgrad_.run(in(dy_index()), in(kW), section(l.dx), stream());
    wgrad_.run(in(dy_index()), in(kX), section(l.dw), stream());
  }

  bool checking_ = false;
  gemm::LtMatmul forward_, dgrad_, wgrad_;
  cuda::DeviceBuffer bias_;  // fp16 / bf16: the bias in y's type
};

const bool registered = [] {
  cuda::FactoryRegistrar({
      .op = "linear",
      .impl = "cublaslt_train",
      .supports = [](const Case& c, const cuda::DeviceProps& p) {
        if (auto s = gemm::dtype_support(c.dtype, p, true); !s.ok) return s;
        return cuda::own_kernels_run_on(p);
      },
      .make = [] { return std::make_unique<CublasLtTrainLinear>(); },
  });
  return true;
}();

}  // namespace
}  // namespace opmeter::linear
