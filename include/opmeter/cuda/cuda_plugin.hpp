#pragma once
// The boundary between opmeter and its CUDA plugin (libopmeter_cuda.so). Everything that needs
// the CUDA runtime, cuBLAS or NVTX lives in the plugin, so the opmeter binary starts on machines
// without an NVIDIA driver. Both sides are built together, by the same compiler, from this header.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "opmeter/case.hpp"
#include "opmeter/engine.hpp"
#include "opmeter/op.hpp"
#include "opmeter/registry.hpp"

namespace opmeter::cuda {

class Plugin {
 public:
  virtual ~Plugin() = default;
  // Whether cuda:index can run work here; the reason (no driver, no such device) when not.
  virtual Support device(int index) = 0;
  // Whether this device can run the case (dtype by architecture, sizes, library support).
  virtual Support supports(const Case& c) = 0;
  // The impl object of a CUDA case; throws Unsupported when the plugin has none.
  virtual std::unique_ptr<Impl> make(const Case& c) = 0;
  // The impls it can make (the cuDNN module's too, where it loads), as their declarations
  // (include/opmeter/cuda/cuda_impl.hpp) say: opmeter declares the same ones from the same files.
  virtual std::vector<ImplDef> impls() = 0;
  // How samples of the case are timed: CUDA events, L2 flush when cold, graphs, clock check.
  virtual std::unique_ptr<SampleTimer> timer(const Case& c) = 0;
  virtual std::size_t free_memory(int index) = 0;
  // Allocation high-water mark of the plugin's device buffers on a device since the mark.
  virtual void mark_memory(int index) = 0;
  virtual std::size_t memory_peak(int index) = 0;
  // Name, SMs, clocks, memory, L2, ECC, MIG, PCI bus id of one device.
  virtual nlohmann::json device_context(int index) = 0;
  // Driver, runtime and cuBLAS versions.
  virtual nlohmann::json versions() = 0;
  // NVTX range around a case, and the profiler's capture range (--profile).
  virtual void range_push(const std::string& name) = 0;
  virtual void range_pop() = 0;
  virtual void profiler_start() = 0;
  virtual void profiler_stop() = 0;
};

// The plugin's one exported symbol: `extern "C" Plugin* opmeter_cuda_plugin_v1()`.
inline constexpr const char* kPluginEntry = "opmeter_cuda_plugin_v1";
inline constexpr const char* kPluginFile = "libopmeter_cuda.so";

// Loads the plugin once: $OPMETER_CUDA_PLUGIN, else libopmeter_cuda.so beside the executable or
// one directory up. Null when absent; load_reason() says why.
Plugin* plugin();
const std::string& load_reason();

}  // namespace opmeter::cuda

#include "opmeter/sensor.hpp"

namespace opmeter::cuda {
// NVML's handle of cuda:index, matched by PCI bus id (NVML and CUDA may number devices
// differently). Empty, with `why`, without NVML or the device.
std::optional<Nvml::Device> nvml_device(int index, std::string& why);
// The `gpus` and `cuda` context of a run on these devices: what the plugin reports plus NVML's
// power limit, ECC, MIG, clocks and idle power (measured here, once per device).
nlohmann::json gpu_context(const std::vector<int>& indices);
}  // namespace opmeter::cuda
