// The unfused conv's per-channel pass (channel_pass.hpp). A block takes whole planes (one image's
// channel: n * channels of them, grid-strided), reads the channel's parameters once per plane and
// streams the plane with scalar accesses (a plane of any size and alignment).
#include "ops/conv/cudnn/channel_pass.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "ops/linear/cuda/linear_act_math.cuh"
#include "opmeter/cuda/float_convert.cuh"

namespace opmeter::conv {
namespace {
using tensor::Act;

template <class T, Act A>
__global__ void channel_pass(T* y, ChannelPass p, std::int64_t planes, std::int64_t channels, std::int64_t plane) {
  for (std::int64_t q = blockIdx.x; q < planes; q += gridDim.x) {
    const std::int64_t c = q % channels;
    float scale = 1.f, shift = p.bias ? p.bias[c] : 0.f;
    if (p.mean) {
      scale = p.gamma[c] / sqrtf(p.var[c] + tensor::kNormEps);  // IEEE sqrt and division: as the reference
      shift = (shift - p.mean[c]) * scale + p.beta[c];
    }
    T* row = y + q * plane;
    for (std::int64_t i = threadIdx.x; i < plane; i += blockDim.x)
      row[i] = cuda::narrow<T>(linear::activate<A>(cuda::widen(row[i]) * scale + shift));
  }
}

template <class T>
void launch_typed(void* y, const ChannelPass& p, std::int64_t planes, std::int64_t channels, std::int64_t plane,
                  unsigned grid, unsigned threads, cudaStream_t s) {
  auto* t = static_cast<T*>(y);
  switch (p.act) {
#define OPMETER_CHANNEL_PASS(A) \
  case A: channel_pass<T, A><<<grid, threads, 0, s>>>(t, p, planes, channels, plane); return;
    OPMETER_CHANNEL_PASS(Act::none)
    OPMETER_CHANNEL_PASS(Act::relu)
    OPMETER_CHANNEL_PASS(Act::relu6)
    OPMETER_CHANNEL_PASS(Act::leaky_relu)
    OPMETER_CHANNEL_PASS(Act::gelu)
    OPMETER_CHANNEL_PASS(Act::gelu_tanh)
    OPMETER_CHANNEL_PASS(Act::silu)
    OPMETER_CHANNEL_PASS(Act::sigmoid)
    OPMETER_CHANNEL_PASS(Act::hardswish)
#undef OPMETER_CHANNEL_PASS
  }
  throw std::runtime_error("channel pass: unknown activation");
}

}  // namespace

void launch_channel_pass(DType d, void* y, const ChannelPass& p, std::int64_t images, std::int64_t channels,
                         std::int64_t plane, int sms, cudaStream_t s) {
  if (!p.bias && !p.mean && p.act == Act::none) return;
  if (p.mean && !(p.var && p.gamma && p.beta))
    throw std::invalid_argument("channel pass: BatchNorm without all its parameters");
  if (images < 1 || channels < 1 || plane < 1)
    throw std::invalid_argument(fmt::format("channel pass over {} x {} x {}", images, channels, plane));
  const std::int64_t planes = images * channels;
  // Narrow planes (7 x 7) take a warp; wide ones 256 threads. A few waves of blocks, looping over the rest.
  const unsigned threads = static_cast<unsigned>(std::clamp<std::int64_t>((plane + 31) / 32 * 32, 32, 256));
  const unsigned grid = static_cast<unsigned>(std::min<std::int64_t>(planes, std::int64_t(std::max(sms, 1)) * 32));
  switch (d) {
    case DType::fp16: launch_typed<__half>(y, p, planes, channels, plane, grid, threads, s); break;
    case DType::bf16: launch_typed<__nv_bfloat16>(y, p, planes, channels, plane, grid, threads, s); break;
    case DType::fp32: launch_typed<float>(y, p, planes, channels, plane, grid, threads, s); break;
    default: throw std::invalid_argument(fmt::format("channel pass: no kernel for {}", to_string(d)));
  }
  if (auto e = cudaGetLastError(); e != cudaSuccess)
    throw std::runtime_error(fmt::format("channel pass kernel: {}", cudaGetErrorString(e)));
}

}  // namespace opmeter::conv
