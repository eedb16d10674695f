#include "cuda/plugin/l2_flush.hpp"

#include <algorithm>

namespace opmeter::cuda {
namespace {
constexpr unsigned kThreads = 256;
constexpr unsigned kNever = 0x9e3779b9u;  // no sum of the zeroed buffer's words is this

// Reads every 16 bytes once through L2 (ld.global.cg: L2 at normal priority, so the lines read
// displace what was there; a streaming load would mark them first to go). The store behind a
// test the buffer never passes keeps the compiler from dropping the loads.
__global__ void read_through_l2(const uint4* buffer, std::size_t n, unsigned* sink) {
  unsigned sum = 0;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    uint4 v = __ldcg(buffer + i);
    sum += v.x + v.y + v.z + v.w;
  }
  if (sum == kNever) sink[blockIdx.x] = sum;
}

std::size_t l2_flush_bytes(std::size_t l2_bytes) { return std::max<std::size_t>(2 * l2_bytes, std::size_t{2} << 20); }
}  // namespace

L2Flush::L2Flush(int device)
    : buffer_(l2_flush_bytes(static_cast<std::size_t>(std::max(props(device).prop.l2CacheSize, 0))), /*counted=*/false) {
  blocks_ = static_cast<unsigned>(std::max(props(device).prop.multiProcessorCount, 1)) * 4;
  sink_ = DeviceBuffer(blocks_ * sizeof(unsigned), /*counted=*/false);
  check(cudaMemsetAsync(buffer_.data(), 0, buffer_.bytes(), stream(device)), "L2 flush buffer");
  enqueue(stream(device));  // the memset's dirty lines go now, not in the first cold sample
  check(cudaStreamSynchronize(stream(device)), "L2 flush buffer");
}

void L2Flush::enqueue(cudaStream_t s) {
  read_through_l2<<<blocks_, kThreads, 0, s>>>(static_cast<const uint4*>(buffer_.data()), buffer_.bytes() / sizeof(uint4),
                                               static_cast<unsigned*>(sink_.data()));
  check(cudaGetLastError(), "L2 flush");
}

}  // namespace opmeter::cuda
