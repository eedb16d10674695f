// The CUDA plugin's entry point: device checks, impls, timers, context and profiler hooks.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_profiler_api.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>

#include <fmt/format.h>

#include "opmeter/cuda/cuda_plugin.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/cuda/cuda_impl.hpp"
#include "cuda/plugin/cudnn_module.hpp"
#include "opmeter/cuda/device.hpp"
#include "cuda/plugin/timer.hpp"

namespace opmeter::cuda {
namespace {

std::string version_string(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

// The factory of a case's impl; cuDNN impls load the cuDNN module first (their declarations are
// there). Null with `why` when there is none.
const Factory* factory_of(const Case& c, std::string& why) {
  if (is_cudnn_impl(c.impl)) {
    const CudnnModule& m = cudnn_module();
    if (!m.loaded) {
      why = m.reason;
      return nullptr;
    }
  }
  const CudaImpl* impl = find_impl(c.op, c.impl);
  if (!impl || !impl->factory.make) {
    why = fmt::format("this CUDA plugin has no {}/{}", c.op, c.impl);
    return nullptr;
  }
  return &impl->factory;
}

class CudaPlugin final : public Plugin {
 public:
  Support device(int index) override {
    if (void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL); !driver)
      return Support::no("no NVIDIA driver on this machine (libcuda.so.1 not found)");
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
      cudaGetLastError();
      return Support::no(fmt::format("no usable NVIDIA driver or GPU: {} ({})", cudaGetErrorString(e), cudaGetErrorName(e)));
    }
    if (index >= count) return Support::no(fmt::format("no device cuda:{} (this machine has {} CUDA device{})", index, count, count == 1 ? "" : "s"));
    return Support::yes();
  }

  Support supports(const Case& c) override {
    std::string why;
    const Factory* f = factory_of(c, why);
    if (!f) return Support::no(why);
    return f->supports ? f->supports(c, props(c.device_index())) : Support::yes();
  }

  std::unique_ptr<Impl> make(const Case& c) override {
    std::string why;
    const Factory* f = factory_of(c, why);
    if (!f) throw Unsupported(why);
    clean_stream_for_case(c.device_index());  // a failed earlier case must not fail this one
    return f->make();
  }

  std::unique_ptr<SampleTimer> timer(const Case& c) override { return make_timer(c); }

  std::vector<ImplDef> impls() override {
    cudnn_module();  // its declarations join the table when it loads
    std::vector<ImplDef> out;
    for (const CudaImpl* i : plugin_impls())
      out.push_back({.op = i->op, .impl = i->impl, .backends = {"cuda"}, .summary = i->summary, .dtypes = i->dtypes,
                     .needs = i->needs, .accepts = i->accepts});
    return out;
  }

  std::size_t free_memory(int index) override {
    check(cudaSetDevice(index), "cudaSetDevice");
    std::size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    return free;
  }

  void mark_memory(int index) override { cuda::mark_memory(index); }
  std::size_t memory_peak(int index) override { return cuda::memory_peak(index); }

  nlohmann::json device_context(int index) override {
    const auto& p = props(index);
    char bus[32] = {};
    cudaDeviceGetPCIBusId(bus, sizeof bus, index);
    return {{"name", p.prop.name},
            {"compute_capability", fmt::format("{}.{}", p.prop.major, p.prop.minor)},
            {"sms", p.prop.multiProcessorCount},
            {"sm_clock_default_mhz", p.clock_khz / 1000},
            {"mem_clock_default_mhz", p.mem_clock_khz / 1000},
            {"memory_bytes", p.prop.totalGlobalMem},
            {"memory_bus_bits", p.prop.memoryBusWidth},
            {"l2_bytes", p.prop.l2CacheSize},
            {"persisting_l2_max_bytes", p.prop.persistingL2CacheMaxSize},
            {"ecc", p.prop.ECCEnabled != 0},
            {"pci_bus_id", bus}};
  }

  nlohmann::json versions() override {
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    int major = 0, minor = 0, patch = 0;
    cublasGetProperty(MAJOR_VERSION, &major);
    cublasGetProperty(MINOR_VERSION, &minor);
    cublasGetProperty(PATCH_LEVEL, &patch);
    nlohmann::json v = {{"driver_api", version_string(driver)},
                        {"runtime", version_string(runtime)},
                        {"cublas", fmt::format("{}.{}.{}", major, minor, patch)},
                        {"cublaslt", std::to_string(cublasLtGetVersion())}};
    // cuDNN's version where its module loads (loading it costs a dlopen, no GPU work).
    const CudnnModule& cudnn = cudnn_module();
    if (cudnn.loaded)
      v["cudnn"] = cudnn.version;
    else
      v["cudnn_unavailable"] = cudnn.reason;
    return v;
  }

  void range_push(const std::string& name) override { nvtxRangePushA(name.c_str()); }
  void range_pop() override { nvtxRangePop(); }
  void profiler_start() override { cudaProfilerStart(); }
  void profiler_stop() override { cudaProfilerStop(); }
};

}  // namespace
}  // namespace opmeter::cuda

extern "C" __attribute__((visibility("default"))) opmeter::cuda::Plugin* opmeter_cuda_plugin_v1() {
  static opmeter::cuda::CudaPlugin plugin;
  return &plugin;
}
