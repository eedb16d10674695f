#include "cuda/plugin/cudnn_module.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

namespace opmeter::cuda {
namespace {

std::string module_path() {
  if (const char* env = std::getenv("OPMETER_CUDNN_MODULE"); env && *env) return env;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cudnn_module), &info) && info.dli_fname)
    return (std::filesystem::path(info.dli_fname).parent_path() / kCudnnModuleFile).string();
  return kCudnnModuleFile;
}

CudnnModule load() {
  const std::string path = module_path();
  if (path.find('/') != std::string::npos && !std::filesystem::exists(path))
    return {false, fmt::format("the cuDNN module {} was not found (this opmeter was built without cuDNN, or set "
                               "OPMETER_CUDNN_MODULE)", path), ""};
  // RTLD_LOCAL: the module's symbols serve only itself; it finds this plugin's by its soname.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return {false, fmt::format("the cuDNN module does not load: {}", dlerror()), ""};
  auto version = reinterpret_cast<const char* (*)()>(dlsym(handle, "opmeter_cudnn_version"));
  if (!version) return {false, fmt::format("{} is not opmeter's cuDNN module (no opmeter_cudnn_version)", path), ""};
  return {true, "", version()};
}

}  // namespace

bool is_cudnn_impl(const std::string& impl) { return impl == "cudnn" || impl.starts_with("cudnn_"); }

const CudnnModule& cudnn_module() {
  static const CudnnModule m = load();  // thread-safe, once
  return m;
}

}  // namespace opmeter::cuda
