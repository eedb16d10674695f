// Finds and loads the CUDA plugin at most once. Absent plugin, driver or device: CUDA cases are
// `skipped` with the reason, and everything else runs.
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include <fmt/format.h>

#include "opmeter/cuda/cuda_plugin.hpp"

namespace opmeter::cuda {
namespace {

struct Loaded {
  Plugin* plugin = nullptr;
  std::string reason;
};

#ifdef OPMETER_HAVE_CUDA  // only a build with CUDA looks for the plugin
std::vector<std::string> candidates() {
  if (const char* env = std::getenv("OPMETER_CUDA_PLUGIN"); env && *env) return {env};
  namespace fs = std::filesystem;
  std::error_code ec;
  auto exe_dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  if (ec) return {kPluginFile};
  return {(exe_dir / kPluginFile).string(), (exe_dir.parent_path() / kPluginFile).string()};
}
#endif

Loaded load() {
#ifndef OPMETER_HAVE_CUDA
  return {nullptr, "this opmeter was built without CUDA (CMake found no CUDA toolkit)"};
#else
  std::string tried;
  for (auto& path : candidates()) {
    if (path.find('/') != std::string::npos && !std::filesystem::exists(path)) {
      tried += (tried.empty() ? "" : ", ") + path;
      continue;
    }
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) return {nullptr, fmt::format("the CUDA plugin {} does not load: {}", path, dlerror())};
    auto entry = reinterpret_cast<Plugin* (*)()>(dlsym(handle, kPluginEntry));
    if (!entry) return {nullptr, fmt::format("{} is not an opmeter CUDA plugin (no {})", path, kPluginEntry)};
    return {entry(), ""};
  }
  return {nullptr, fmt::format("the CUDA plugin was not found (looked for {}; set OPMETER_CUDA_PLUGIN)", tried)};
#endif
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

}  // namespace

Plugin* plugin() { return loaded().plugin; }
const std::string& load_reason() { return loaded().reason; }

}  // namespace opmeter::cuda
