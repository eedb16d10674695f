#pragma once
// Whether one of opmeter's CUDA kernels can run on a GPU: by what its instructions need (mma.sync
// m16n8k16 needs compute capability 8.0, fp8 8.9, wgmma exactly 9.0 with sm_90a code) and by the
// machine code or PTX the plugin carries for it (CMakeLists.txt builds each group of kernels for
// its own list of architectures). Pure: the plugin asks it with the device's compute capability,
// the tests with any.
#include <string>
#include <string_view>
#include <vector>

#include "opmeter/op.hpp"

namespace opmeter::cuda {

// What a kernel's instructions need.
struct KernelNeeds {
  int min_cc = 0;              // compute capability as major * 10 + minor (8.0 -> 80)
  std::string_view what;       // the instructions, for the reason ("mma.sync m16n8k16, cp.async")
  bool arch_specific = false;  // 'a' code (sm_90a): runs on its own compute capability only
};

// The code a group of kernels was built as: machine code (SASS) per architecture, PTX of one.
struct BuiltArchs {
  std::vector<int> sass;  // e.g. {75, 80, 90, 100, 120}
  int ptx = 0;            // 0: none
  bool arch_specific = false;  // built as 'a' code (sm_90a)
};

// opmeter's own kernels come in groups by what their instructions need; CMakeLists.txt builds
// each group for its own architectures (OPMETER_CUDA_ARCHS_PLAIN, _MMA, _SM90A).
enum class Kernels {
  plain,    // CUDA cores only: every architecture the plugin is built for (sm_75 on)
  mma,      // mma.sync m16n8k16 fp16/bf16, tf32 / int8 mma, ldmatrix, cp.async: 8.0 (*_sm80.cu)
  fp8_mma,  // fp8 (e4m3) mma.sync: 8.9 (in *_sm80.cu, its code in the sm_89+ images only)
  wgmma,    // Hopper's warpgroup MMA: sm_90a code, compute capability 9.0 only (*_sm90a.cu)
};
KernelNeeds needs_of(Kernels k);

// CMake's CUDA_ARCHITECTURES spelling: "75-real;80-real;90a-real;120-virtual;89" (plain N is
// both real and virtual), ';' or ',' between entries. Unknown entries are ignored.
BuiltArchs parse_cuda_architectures(std::string_view list);

// "sm_75, sm_80, sm_90 and PTX compute_120".
std::string describe(const BuiltArchs& built);

// Whether code of `built` loads on a GPU of compute capability `cc`: SASS of the same major
// version and no newer minor one (sm_80 runs on 8.6 and 8.9; 'a' code on its own cc only), or
// PTX no newer than the GPU (the driver compiles it).
bool has_image_for(const BuiltArchs& built, int cc);

// Yes when the kernel's needs are met and the plugin carries code for the GPU; else why not:
// "<what> needs compute capability 8.0 or newer; this GPU is sm_75" or "built for sm_80, ...;
// this GPU is sm_75".
Support kernel_runs_on(const KernelNeeds& needs, const BuiltArchs& built, int cc);

}  // namespace opmeter::cuda
