#pragma once
// Where one 16-byte move of cuda/head_layout.cu reads and writes: the i-th move (i over batch x
// heads x seq x head_dim / 8, the 8-element piece fastest, then the position in the sequence,
// the head, the batch) as element offsets in the row layout (rows = batch * seq, heads side by
// side, `row_stride` elements a row) and in the head layout (batch x heads x seq x head_dim).
// Plain C++ as well, so that the CPU tests check the mapping the GPU kernels use.
#include <cstdint>

#ifdef __CUDACC__
#define OPMETER_HOST_DEVICE __host__ __device__
#else
#define OPMETER_HOST_DEVICE
#endif

namespace opmeter::transformer {

inline constexpr int kHeadMoveElems = 8;  // 2-byte elements per 16-byte move

struct MoveOffsets {
  std::int64_t row_elem;
  std::int64_t head_elem;
};

OPMETER_HOST_DEVICE inline MoveOffsets move_offsets(std::int64_t i, int seq, int heads, int head_dim,
                                                    std::int64_t row_stride) {
  const int chunks = head_dim / kHeadMoveElems;
  const int c = static_cast<int>(i % chunks);
  std::int64_t rest = i / chunks;
  const int t = static_cast<int>(rest % seq);
  rest /= seq;
  const int h = static_cast<int>(rest % heads);
  const std::int64_t b = rest / heads;
  const std::int64_t piece = std::int64_t(c) * kHeadMoveElems;
  return {(b * seq + t) * row_stride + std::int64_t(h) * head_dim + piece,
          ((b * heads + h) * seq + t) * std::int64_t(head_dim) + piece};
}

}  // namespace opmeter::transformer

#undef OPMETER_HOST_DEVICE
