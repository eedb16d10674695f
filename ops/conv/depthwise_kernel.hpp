#pragma once
// opmeter's CPU depthwise convolution, one (image, channel) plane at a time (conv2d impl
// `opmeter`, conv_opmeter.cpp). Compiled once per ISA (depthwise_<isa>.cpp), chosen at run time.
#include <cstddef>

namespace opmeter::conv {

// One plane's geometry: a square h x h input, r x r kernel, oh x oh output.
struct PlaneGeometry {
  std::size_t h, r, stride, pad, oh;
  // Floats per phase row of the staged input and per accumulator row (both padded so that whole
  // vectors of outputs never read or write past them).
  std::size_t phase_row() const;
  std::size_t acc_row() const;
  std::size_t scratch_floats() const;  // the staged, zero-padded, phase-split input plane
  std::size_t acc_floats() const { return oh * acc_row(); }
};

// acc[oy * acc_row() + ox] = bias + sum over the kernel of w[r][q] * x[oy*stride + r - pad][ox*stride + q - pad],
// x one plane of fp32 or bf16 (`bf16`), w the plane's r x r fp32 weights, in fp32.
// `scratch` holds scratch_floats() floats, `acc` acc_floats().
using DepthwisePlaneFn = void (*)(const PlaneGeometry& g, bool bf16, const void* x, const float* w, float bias,
                                  float* scratch, float* acc);

DepthwisePlaneFn depthwise_plane_avx512();
DepthwisePlaneFn depthwise_plane_avx2();
DepthwisePlaneFn depthwise_plane_base();
struct DepthwiseKernel {
  const char* isa;
  DepthwisePlaneFn plane;
};
const DepthwiseKernel& depthwise_kernel();  // the best this CPU runs

}  // namespace opmeter::conv
