#pragma once
// cuDNN is optional twice: its impls live in their own module, libopmeter_cudnn.so (built only
// where CMake finds libcudnn), which this plugin loads on the first use of a cuDNN impl. Without
// the module or libcudnn.so.9 every other CUDA impl still runs, and cuDNN cases are `skipped`
// with the loader's reason. The module's static registrars add its factories to this plugin's
// table (it links this plugin by its soname).
#include <string>

namespace opmeter::cuda {

inline constexpr const char* kCudnnModuleFile = "libopmeter_cudnn.so";

struct CudnnModule {
  bool loaded = false;
  std::string reason;   // why not, when not loaded
  std::string version;  // cuDNN's run-time version, e.g. "9.14.0", when loaded
};

// Impls of the module: `cudnn` and `cudnn_*`.
bool is_cudnn_impl(const std::string& impl);

// Loads the module once: $OPMETER_CUDNN_MODULE, else libopmeter_cudnn.so beside this plugin.
const CudnnModule& cudnn_module();

}  // namespace opmeter::cuda
