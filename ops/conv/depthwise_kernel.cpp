// The depthwise plane kernel's geometry and its choice of ISA at run time.
#include <algorithm>

#include "ops/conv/depthwise_kernel.hpp"

namespace opmeter::conv {
namespace {
// Rows are padded to whole vectors of the widest ISA (16 floats), which covers the narrower ones.
constexpr std::size_t kWidest = 16;
std::size_t round_up(std::size_t v, std::size_t m) { return (v + m - 1) / m * m; }
}  // namespace

std::size_t PlaneGeometry::acc_row() const { return round_up(oh, kWidest); }

std::size_t PlaneGeometry::phase_row() const {
  // A phase row holds every padded column of its phase, and whatever the last (partly used)
  // vector of outputs reads beyond them: acc_row() outputs shifted by up to (r - 1) / stride.
  const std::size_t padded = h + 2 * pad;
  return std::max((padded + stride - 1) / stride, acc_row() + (r - 1) / stride);
}

std::size_t PlaneGeometry::scratch_floats() const { return ((oh - 1) * stride + r) * stride * phase_row(); }

const DepthwiseKernel& depthwise_kernel() {
  static const DepthwiseKernel k = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
      return DepthwiseKernel{"avx512", depthwise_plane_avx512()};
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return DepthwiseKernel{"avx2", depthwise_plane_avx2()};
    return DepthwiseKernel{"base", depthwise_plane_base()};
  }();
  return k;
}

}  // namespace opmeter::conv
