// The embedding gather: each row copied by a group of threads, groups sized to the row (a power
// of two, 1 to 256 threads) so that narrow rows do not leave most of a block idle.
#include <algorithm>

#include "ops/embedding/cuda/embedding_kernel.hpp"

namespace opmeter::embedding {
namespace {
constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = 1 << 16;  // enough to fill any GPU; the loop strides over the rest

// U: the unit one access copies (uint4, unsigned, unsigned short). `group` threads per row.
template <class U>
__global__ void gather_kernel(const std::int32_t* __restrict__ ids, const U* __restrict__ table, U* __restrict__ out,
                              std::int64_t rows, std::int64_t units, std::int64_t vocab, int group) {
  const int rows_per_block = kThreads / group;
  const int lane = static_cast<int>(threadIdx.x) % group;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * rows_per_block;
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * rows_per_block + threadIdx.x / group; r < rows;
       r += step) {
    const std::int64_t id = __ldg(ids + r);
    if (id < 0 || id >= vocab) continue;
    const U* src = table + id * units;
    U* dst = out + r * units;
    for (std::int64_t u = lane; u < units; u += group) dst[u] = src[u];
  }
}

template <class U>
void gather(const std::int32_t* ids, const void* table, void* out, std::int64_t rows, std::int64_t row_bytes,
            std::int64_t vocab, cudaStream_t s) {
  const std::int64_t units = row_bytes / static_cast<std::int64_t>(sizeof(U));
  int group = 1;
  while (group < kThreads && group < units) group *= 2;
  const std::int64_t rows_per_block = kThreads / group;
  const std::int64_t blocks = std::min(kMaxBlocks, std::max<std::int64_t>(1, (rows + rows_per_block - 1) / rows_per_block));
  gather_kernel<U><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(ids, static_cast<const U*>(table), static_cast<U*>(out),
                                                                      rows, units, vocab, group);
}

}  // namespace

void launch_gather(const std::int32_t* ids, const void* table, void* out, std::int64_t rows, std::int64_t row_bytes,
                  std::int64_t elem_bytes, std::int64_t vocab, cudaStream_t s) {
  if (row_bytes % 16 == 0) {
    gather<uint4>(ids, table, out, rows, row_bytes, vocab, s);
  } else if (elem_bytes == 4) {
    gather<unsigned>(ids, table, out, rows, row_bytes, vocab, s);
  } else {
    gather<unsigned short>(ids, table, out, rows, row_bytes, vocab, s);
  }
}

}  // namespace opmeter::embedding
