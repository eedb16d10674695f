// The cuDNN module's entry: what the CUDA plugin asks of it once loaded. Its impls register
// themselves (ops/<op>/cudnn/<op>_cudnn_impls.cpp, see include/opmeter/cuda/cuda_impl.hpp).
#include <cudnn.h>

#include <string>

#include <fmt/format.h>

// cuDNN's run-time version, "major.minor.patch" (the library loaded, not the headers built with).
extern "C" __attribute__((visibility("default"))) const char* opmeter_cudnn_version() {
  static const std::string version = [] {
    std::size_t v = cudnnGetVersion();  // 9.x: major * 10000 + minor * 100 + patch
    return fmt::format("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100);
  }();
  return version.c_str();
}
