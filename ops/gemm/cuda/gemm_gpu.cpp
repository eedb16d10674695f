#include "ops/gemm/cuda/gemm_gpu.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace opmeter::gemm {
namespace {
constexpr int kCublasStatusNotSupported = 15;  // CUBLAS_STATUS_NOT_SUPPORTED
}  // namespace

void check_cublas(int status, const char* what, const char* status_text) {
  if (status == 0) return;
  auto message = fmt::format("{}: {} (status {})", what, status_text ? status_text : "cuBLAS error", status);
  if (status == kCublasStatusNotSupported) throw Unsupported(message);
  throw std::runtime_error(message);
}

void GpuGemm::setup(const Case& c, const SetupOptions& options) {
  bind(c);
  device_ = c.device_index();
  stream_ = cuda::stream(device_);
  auto in = inputs();
  a_ = cuda::DeviceBuffer(in[kA].bytes());
  b_ = cuda::DeviceBuffer(in[kB].bytes());
  c_ = cuda::DeviceBuffer(output().bytes());
  set_ = 0;
  upload_inputs(*this, options.seed, io());
  copies_.clear();
  for (std::size_t k = 1; k < options.copies; ++k) copies_.emplace_back(cuda::copy_of(a_, stream_), cuda::copy_of(b_, stream_));
  prepare();
}

DeviceIo GpuGemm::io() {
  return {.upload = [this](std::size_t i, const HostTensor& t) { cuda::upload(i == kA ? a() : b(), t.data(), t.bytes(), stream_); },
          .fill_output = [this](int byte) { cuda::fill(c(), byte, c_.bytes(), stream_); },
          .download_output = [this](HostTensor& t) { cuda::download(t.data(), c(), t.bytes(), stream_); }};
}

void GpuGemm::sync() { cuda::check(cudaStreamSynchronize(stream_), "GEMM"); }

Check GpuGemm::verify(std::uint64_t seed) {
  set_ = 0;  // the check's inputs go to set 0
  return verify_on_device(*this, seed, io(), [this] {
    run(0);
    sync();
  });
}

}  // namespace opmeter::gemm
