#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "opmeter/dtype.hpp"

namespace opmeter::pool {

// The geometry a launch needs (pool.hpp's Shape in 64-bit integers).
struct PoolGeometry {
  std::int64_t planes, h, k, stride, pad, oh;
  bool is_max;
};

// y = pool(x) for planes x h x h inputs, planes x oh x oh outputs, fp32 / fp16 / bf16 storage,
// fp32 math: a thread per output element (grid-stride), its window clipped to the image.
void launch_pool(DType d, const PoolGeometry& g, const void* x, void* y, cudaStream_t s);
// Global average (k == h, pad 0, oh 1): a warp per plane, lanes striding the plane, then a
// shuffle reduction. Deterministic: the order of additions depends only on h.
void launch_global_avg(DType d, std::int64_t planes, std::int64_t hw, const void* x, void* y, cudaStream_t s);

}  // namespace opmeter::pool
