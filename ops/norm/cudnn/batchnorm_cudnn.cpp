// batchnorm impl `cudnn`: cuDNN's inference BatchNorm (cudnnBatchNormalizationForwardInference,
// spatial mode). The rows x hidden activations are an NCHW tensor of rows images with hidden
// channels of 1 x 1: mean, var, gamma and beta are per channel, in fp32 for every data type.
#include <climits>
#include <memory>

#include <fmt/format.h>

#include "ops/norm/norm.hpp"
#include "ops/tensor/kernels.hpp"
#include "opmeter/cuda/cudnn_graph.hpp"
#include "opmeter/cuda/device_impl.hpp"

namespace opmeter::norm {
namespace {

class TensorDescriptor {
 public:
  TensorDescriptor() { cudnn::check(cudnnCreateTensorDescriptor(&d_), "cudnnCreateTensorDescriptor"); }
  ~TensorDescriptor() { cudnnDestroyTensorDescriptor(d_); }
  TensorDescriptor(const TensorDescriptor&) = delete;
  TensorDescriptor& operator=(const TensorDescriptor&) = delete;
  cudnnTensorDescriptor_t get() const { return d_; }

 private:
  cudnnTensorDescriptor_t d_ = nullptr;
};

class CudnnBatchnorm : public cuda::DeviceImpl<NormOp> {
 public:
  CudnnBatchnorm() : DeviceImpl(Kind::batchnorm) {}
  std::map<std::string, std::string> details() const override {
    return {{"call", "cudnnBatchNormalizationForwardInference, CUDNN_BATCHNORM_SPATIAL, NCHW rows x hidden x 1 x 1"}};
  }

 private:
  void prepare() override {
    if (handle_) return;
    handle_ = std::make_unique<cudnn::Handle>(stream());
    x_ = std::make_unique<TensorDescriptor>();
    params_ = std::make_unique<TensorDescriptor>();
    cudnn::check(cudnnSetTensor4dDescriptor(x_->get(), CUDNN_TENSOR_NCHW, cudnn::data_type(case_.dtype), int(out_rows()),
                                            int(out_cols()), 1, 1),
                 "cudnnSetTensor4dDescriptor");
    cudnn::check(cudnnDeriveBNTensorDescriptor(params_->get(), x_->get(), CUDNN_BATCHNORM_SPATIAL),
                 "cudnnDeriveBNTensorDescriptor");
  }

  void launch() override {
    const float one = 1, zero = 0;
    // Inputs: x, mean, var, gamma, beta (norm.hpp).
    cudnn::check(cudnnBatchNormalizationForwardInference(handle_->get(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, x_->get(),
                                                         in(0), x_->get(), out(), params_->get(), in(3), in(4), in(1),
                                                         in(2), double(tensor::kNormEps)),
                 "cudnnBatchNormalizationForwardInference");
  }

  std::unique_ptr<cudnn::Handle> handle_;
  std::unique_ptr<TensorDescriptor> x_, params_;
};

Support supported(const Case& c, const cuda::DeviceProps&) {
  const double elements = double(tensor::rows_of(c)) * double(tensor::hidden_of(c));
  if (tensor::rows_of(c) > std::size_t(INT_MAX) || tensor::hidden_of(c) > std::size_t(INT_MAX) || elements >= 0x1p31)
    return Support::no("cuDNN's legacy tensor descriptors take fewer than 2^31 elements");
  return Support::yes();
}

}  // namespace

// The plugin's half of this impl, named by its declaration in norm_cudnn_impls.cpp.
cuda::Factory cudnn_factory() {
  return {
      .supports = supported,
      .make = [] { return std::make_unique<CudnnBatchnorm>(); },
  };
}

}  // namespace opmeter::norm
