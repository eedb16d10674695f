// Shapes of a device-to-device copy kernel, timed side by side on one GPU, to choose the one
// opmeter's `bandwidth/cuda` uses (docs/BENCHMARKS.md). Hot, CUDA events, median of 50 calls.
// Usage: cuda_copy_variants [MiB per array]   (default 1024)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// Today's kernel: grid-stride loop, one float4 per iteration.
__global__ void grid_stride(const float4* a, float4* b, std::size_t n4) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride) b[i] = a[i];
}

// U float4 per thread, all loads before the stores; one block per 256*U vectors.
template <int U, bool Streaming>
__global__ void unrolled(const float4* a, float4* b, std::size_t n4) {
  const std::size_t base = static_cast<std::size_t>(blockIdx.x) * blockDim.x * U + threadIdx.x;
  float4 v[U];
#pragma unroll
  for (int j = 0; j < U; ++j) {
    std::size_t i = base + static_cast<std::size_t>(j) * blockDim.x;
    if (i < n4) v[j] = Streaming ? __ldcs(a + i) : a[i];
  }
#pragma unroll
  for (int j = 0; j < U; ++j) {
    std::size_t i = base + static_cast<std::size_t>(j) * blockDim.x;
    if (i < n4) {
      if (Streaming) __stcs(b + i, v[j]); else b[i] = v[j];
    }
  }
}

// Persistent grid-stride with U float4 in flight per iteration.
template <int U>
__global__ void grid_stride_unrolled(const float4* a, float4* b, std::size_t n4) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x * U;
  for (std::size_t base = static_cast<std::size_t>(blockIdx.x) * blockDim.x * U + threadIdx.x; base < n4; base += stride) {
    float4 v[U];
#pragma unroll
    for (int j = 0; j < U; ++j) {
      std::size_t i = base + static_cast<std::size_t>(j) * blockDim.x;
      if (i < n4) v[j] = __ldcs(a + i);
    }
#pragma unroll
    for (int j = 0; j < U; ++j) {
      std::size_t i = base + static_cast<std::size_t>(j) * blockDim.x;
      if (i < n4) __stcs(b + i, v[j]);
    }
  }
}

template <class Launch>
double median_gbps(const char* name, std::size_t bytes, Launch launch, cudaStream_t s) {
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "event");
  check(cudaEventCreate(&e1), "event");
  for (int i = 0; i < 10; ++i) launch();
  check(cudaStreamSynchronize(s), "warm-up");
  std::vector<double> gbps;
  for (int i = 0; i < 50; ++i) {
    check(cudaEventRecord(e0, s), "record");
    launch();
    check(cudaEventRecord(e1, s), "record");
    check(cudaEventSynchronize(e1), "sync");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
    gbps.push_back(2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9);
  }
  check(cudaGetLastError(), name);
  std::sort(gbps.begin(), gbps.end());
  std::printf("%-34s %8.1f GB/s (min %.1f, max %.1f)\n", name, gbps[gbps.size() / 2], gbps.front(), gbps.back());
  return gbps[gbps.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  std::size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1024;
  std::size_t bytes = mib << 20, n4 = bytes / 16;
  float4 *a = nullptr, *b = nullptr;
  check(cudaMalloc(&a, bytes), "malloc");
  check(cudaMalloc(&b, bytes), "malloc");
  check(cudaMemset(a, 0x3c, bytes), "memset");
  cudaStream_t s;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  cudaDeviceProp p;
  check(cudaGetDeviceProperties(&p, 0), "props");
  const unsigned sms = static_cast<unsigned>(p.multiProcessorCount);
  std::printf("%s, %u SMs, %zu MiB per array; bytes = read + written\n", p.name, sms, mib);
  auto blocks = [&](int u) { return static_cast<unsigned>((n4 + 256 * u - 1) / (256 * u)); };
  median_gbps("cudaMemcpyAsync D2D", bytes, [&] { cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s); }, s);
  median_gbps("grid-stride x1, 32 blocks/SM", bytes, [&] { grid_stride<<<sms * 32, 256, 0, s>>>(a, b, n4); }, s);
  median_gbps("unrolled x2", bytes, [&] { unrolled<2, false><<<blocks(2), 256, 0, s>>>(a, b, n4); }, s);
  median_gbps("unrolled x4", bytes, [&] { unrolled<4, false><<<blocks(4), 256, 0, s>>>(a, b, n4); }, s);
  median_gbps("unrolled x4 streaming", bytes, [&] { unrolled<4, true><<<blocks(4), 256, 0, s>>>(a, b, n4); }, s);
  median_gbps("unrolled x8 streaming", bytes, [&] { unrolled<8, true><<<blocks(8), 256, 0, s>>>(a, b, n4); }, s);
  median_gbps("grid-stride x4 streaming, 8/SM", bytes, [&] { grid_stride_unrolled<4><<<sms * 8, 256, 0, s>>>(a, b, n4); }, s);
  median_gbps("grid-stride x4 streaming, 16/SM", bytes, [&] { grid_stride_unrolled<4><<<sms * 16, 256, 0, s>>>(a, b, n4); }, s);
  median_gbps("grid-stride x8 streaming, 4/SM", bytes, [&] { grid_stride_unrolled<8><<<sms * 4, 256, 0, s>>>(a, b, n4); }, s);
  return 0;
}
