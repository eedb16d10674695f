#pragma once
// One declaration per CUDA impl. Each op declares its CUDA impls once, in
// ops/<op>/cuda/<op>_cuda_impls.cpp (cuDNN's: ops/<op>/cudnn/<op>_cudnn_impls.cpp): name, dtypes,
// summary, the device-free checks, optional parameters, and the factory. That file includes no
// CUDA header and is compiled twice: into opmeter, which lists and plans the impls without a
// plugin, driver or GPU (they are `skipped` with the reason), and into the plugin (or the cuDNN
// module), which makes them. Only the factory differs: the plugin's build defines
// OPMETER_CUDA_PLUGIN_SIDE, and OPMETER_CUDA_FACTORY(f()) calls f there and is empty here.
//
//   cuda::Factory cuda_factory();  // defined beside the impl, ops/add/cuda/add_cuda.cpp
//   const cuda::CudaImplRegistrar reg({
//       .op = "add", .impl = "cuda", .summary = "...", .dtypes = {DType::fp32, DType::bf16},
//       .factory = OPMETER_CUDA_FACTORY(cuda_factory()),
//   });
//
// docs/adding-an-op.md (section 2.4) has the whole recipe, and how to convert an impl declared the
// old way (an ImplDef on the host plus a cuda::FactoryRegistrar in the plugin).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "opmeter/case.hpp"
#include "opmeter/op.hpp"
#include "opmeter/registry.hpp"
#include "opmeter/cuda/factory.hpp"

namespace opmeter::cuda {

// One CUDA impl of one op.
struct CudaImpl {
  std::string op;
  std::string impl;
  std::string summary;
  std::vector<DType> dtypes;
  // What no device runs (sizes, parameters): checked without a GPU, so a plan says why.
  std::function<Support(const Case&)> supports;
  // Optional parameters it runs (ImplDef::needs / accepts).
  std::vector<std::string> needs, accepts;
  Factory factory;  // OPMETER_CUDA_FACTORY(...)
  // Which impl a pipeline layer runs when its config names none (ImplDef::preference).
  int preference = 0;
};

// What opmeter registers of a CUDA impl: its ImplDef, on the `cuda` backend, made by the plugin.
ImplDef host_def(const CudaImpl& impl);

// Where each side keeps the declarations: opmeter's registry (src/cuda/cuda_impls.cpp) and the
// plugin's table (src/cuda/plugin/impl_table.cpp). Two names, so that neither binary's copy can
// stand in for the other's when the plugin is loaded into opmeter.
void add_to_host_registry(CudaImpl impl);
void add_to_plugin_table(CudaImpl impl);

// Differences between the CUDA impls opmeter declares and those a plugin can make, one line
// each ("gemm/cublas: declared in opmeter, not in the plugin"); empty when they agree.
std::vector<std::string> impl_table_mismatches(const std::vector<ImplDef>& host, const std::vector<ImplDef>& plugin);

namespace {  // internal linkage: each binary's copy registers on its own side
struct CudaImplRegistrar {
  explicit CudaImplRegistrar(CudaImpl impl) {
#ifdef OPMETER_CUDA_PLUGIN_SIDE
    add_to_plugin_table(std::move(impl));
#else
    add_to_host_registry(std::move(impl));
#endif
  }
};
}  // namespace

}  // namespace opmeter::cuda

#ifdef OPMETER_CUDA_PLUGIN_SIDE
#define OPMETER_CUDA_FACTORY(...) (__VA_ARGS__)
#else
#define OPMETER_CUDA_FACTORY(...) (::opmeter::cuda::Factory{})
#endif
