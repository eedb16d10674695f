// The split of the QKV projection into heads and the merge of the heads back into rows
// (head_layout.hpp): 16-byte moves, one per 8 elements of a head's row, grid-stride.
#include "ops/transformer/cuda/head_layout.hpp"
#include "ops/transformer/head_layout_index.hpp"

#include <algorithm>
#include <initializer_list>
#include <stdexcept>
#include <string>

namespace opmeter::transformer {
namespace {

constexpr int kVec = kHeadMoveElems;
constexpr int kThreads = 256;

__global__ void split_qkv(const uint4* __restrict__ qkv, uint4* __restrict__ q, uint4* __restrict__ k,
                          uint4* __restrict__ v, std::int64_t n, int seq, int heads, int head_dim) {
  const std::int64_t hidden = std::int64_t(heads) * head_dim;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const MoveOffsets x = move_offsets(i, seq, heads, head_dim, 3 * hidden);
    const std::int64_t dst = x.head_elem / kVec;
    q[dst] = qkv[x.row_elem / kVec];
    k[dst] = qkv[(x.row_elem + hidden) / kVec];
    v[dst] = qkv[(x.row_elem + 2 * hidden) / kVec];
  }
}

__global__ void merge_heads(const uint4* __restrict__ o, uint4* __restrict__ rows, std::int64_t n, int seq, int heads,
                            int head_dim) {
  const std::int64_t hidden = std::int64_t(heads) * head_dim;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const MoveOffsets x = move_offsets(i, seq, heads, head_dim, hidden);
    rows[x.row_elem / kVec] = o[x.head_elem / kVec];
  }
}

void check_args(const HeadLayout& l, std::initializer_list<const void*> pointers) {
  if (l.head_dim <= 0 || l.head_dim % kVec != 0)
    throw std::invalid_argument("head layout: head_dim " + std::to_string(l.head_dim) + " is not a multiple of 8");
  if (l.batch <= 0 || l.seq <= 0 || l.heads <= 0) throw std::invalid_argument("head layout: empty shape");
  for (const void* p : pointers)
    if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0)
      throw std::invalid_argument("head layout: a tensor is not 16-byte aligned");
}

// Moves of one tensor; the grid covers them (capped, the loop takes the rest).
std::int64_t moves(const HeadLayout& l) { return l.batch * l.seq * l.heads * (l.head_dim / kVec); }
unsigned blocks_for(std::int64_t n) {
  return static_cast<unsigned>(std::clamp<std::int64_t>((n + kThreads - 1) / kThreads, 1, 1 << 16));
}

}  // namespace

void launch_split_qkv(const HeadLayout& l, const void* qkv, void* q, void* k, void* v, cudaStream_t s) {
  check_args(l, {qkv, q, k, v});
  const std::int64_t n = moves(l);
  split_qkv<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const uint4*>(qkv), static_cast<uint4*>(q),
                                               static_cast<uint4*>(k), static_cast<uint4*>(v), n, l.seq, l.heads,
                                               l.head_dim);
}

void launch_merge_heads(const HeadLayout& l, const void* o, void* rows, cudaStream_t s) {
  check_args(l, {o, rows});
  const std::int64_t n = moves(l);
  merge_heads<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const uint4*>(o), static_cast<uint4*>(rows), n, l.seq,
                                                 l.heads, l.head_dim);
}

}  // namespace opmeter::transformer
