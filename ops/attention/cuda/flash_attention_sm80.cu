// Flash-attention forward with mma.sync (m16n8k16, fp32 accumulation), ldmatrix and cp.async.
//
// One block = 8 warps = 128 query rows of one (batch, head); each warp owns 16 rows. The block
// walks the key tiles (64 keys each) through shared memory, double-buffered: while the warps
// compute on tile t, cp.async brings tile t+1. Per tile and warp:
//   S = Q K^T        16 x 64 scores in registers (mma accumulator fragments);
//   mask             keys past seq, and keys above the diagonal when causal, become -inf;
//   online softmax   running row max m and sum l; O and l are rescaled by exp(m_old - m_new);
//   O += P V         P goes from accumulator fragments straight into A fragments (bf16/fp16).
// At the end O / l is written. Causal: the block stops at the last key tile its rows can see,
// and a warp skips tiles wholly above its own rows.
//
// Fragment layouts (PTX ISA, mma.m16n8k16 with 16-bit A/B): lane = 4 g + t (g = lane / 4,
// t = lane % 4). A (16x16, row): a0 = (g, 2t..2t+1), a1 = (g+8, 2t..), a2 = (g, 8+2t..),
// a3 = (g+8, 8+2t..). B (16x8, col): b0 = (k 2t..2t+1, n g), b1 = (k 8+2t.., n g). C (16x8 fp32):
// c0,c1 = (g, 2t..2t+1), c2,c3 = (g+8, 2t..). ldmatrix gives lane (g, 2t..2t+1) of each 8x8
// matrix (with .trans: (2t..2t+1, g)), which is how the loads below are addressed.
//
// Shared memory rows are head_dim + 8 elements long: 16 bytes of padding put the 8 rows one
// ldmatrix phase reads in 8 distinct 4-bank groups (no bank conflicts), and keep every row
// 16-byte aligned for cp.async.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "ops/attention/cuda/flash_attention.hpp"
#include "opmeter/cuda/device.hpp"

namespace opmeter::attention {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kBlockM = kWarps * 16;  // query rows per block
constexpr int kBlockN = 64;           // keys per tile
constexpr float kLog2e = 1.4426950408889634f;
static_assert(kBlockM == 2 * kBlockN, "the Q tile fills exactly the second K/V buffer");

template <int D>
struct Layout {
  static constexpr int kStride = D + 8;              // elements per shared-memory row
  static constexpr int kKv = kBlockN * kStride;       // elements of one K or V tile
  static constexpr int kElems = 4 * kKv;              // K0 V0 K1 V1; Q borrows K1 V1 at the start
  static constexpr int kBytes = kElems * 2;
  static_assert(kBlockM * kStride == 2 * kKv, "Q tile size");
  static_assert((kStride * 2) % 16 == 0, "rows must stay 16-byte aligned");
};

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, asynchronous; with valid = false it writes 16 zero bytes instead
// (src-size 0: nothing is read, but the address given is still a valid one).
__device__ __forceinline__ void cp_async_16(std::uint32_t dst, const void* src, bool valid) {
  const int bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}

// c += a * b for one 16x8x16 tile.
template <class T>
__device__ __forceinline__ void mma(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Two floats rounded to T and packed, `lo` in the low half (the lower column of a fragment pair).
template <class T>
__device__ __forceinline__ std::uint32_t pack2(float lo, float hi) {
  std::uint32_t u;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    memcpy(&u, &v, sizeof u);
  } else {
    const __half2 v = __floats2half2_rn(lo, hi);
    memcpy(&u, &v, sizeof u);
  }
  return u;
}

// 2^x; 2^-inf = +0, so masked scores give probability 0.
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Rows [row0, row0 + Rows) of a seq x D tensor into shared memory (row stride Layout<D>::kStride),
// asynchronously. Rows past seq are zero-filled: their scores are masked anyway, and zero V rows
// keep 0 * V finite.
template <int Rows, int D, class T>
__device__ __forceinline__ void load_rows(T* dst, const T* src, int row0, int seq) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  static_assert((Rows * kChunks) % kThreads == 0, "every thread copies the same number of chunks");
#pragma unroll
  for (int i = 0; i < Rows * kChunks / kThreads; ++i) {
    const int c = i * kThreads + static_cast<int>(threadIdx.x);
    const int r = c / kChunks, col = (c % kChunks) * 8;
    const bool valid = row0 + r < seq;
    const T* from = valid ? src + static_cast<std::int64_t>(row0 + r) * D + col : src;
    cp_async_16(smem_addr(dst + r * Layout<D>::kStride + col), from, valid);
  }
}

template <class T, int D>
__global__ void __launch_bounds__(kThreads) flash_forward(const T* __restrict__ q, const T* __restrict__ k,
                                                           const T* __restrict__ v, T* __restrict__ o, int seq,
                                                           float scale_log2, bool causal) {
  using L = Layout<D>;
  constexpr int S = L::kStride;
  constexpr int kNTiles = kBlockN / 8;  // score fragments (8 keys each) per row group
  constexpr int kDTiles = D / 8;        // output fragments (8 columns each)
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* const smem = reinterpret_cast<T*>(smem_raw);
  T* const q_smem = smem + 2 * L::kKv;  // buffer 1, free until the first prefetch into it

  // Heads along x (up to 2^31 - 1 blocks); query tiles along y, the last (longest when causal)
  // first, so the long blocks start early and the short ones fill the tail.
  const std::int64_t head_offset = static_cast<std::int64_t>(blockIdx.x) * seq * D;
  q += head_offset;
  k += head_offset;
  v += head_offset;
  o += head_offset;
  const int q0 = static_cast<int>(gridDim.y - 1 - blockIdx.y) * kBlockM;  // < seq: gridDim.y = ceil(seq / kBlockM)
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int g = lane / 4, t4 = lane % 4;
  const int warp_row0 = q0 + warp * 16;  // this warp's rows: warp_row0 .. warp_row0 + 15
  const int block_last_row = min(q0 + kBlockM, seq) - 1;
  const int tiles = (causal ? block_last_row : seq - 1) / kBlockN + 1;

  load_rows<kBlockM, D>(q_smem, q, q0, seq);
  load_rows<kBlockN, D>(smem, k, 0, seq);
  load_rows<kBlockN, D>(smem + L::kKv, v, 0, seq);
  cp_async_commit();
  cp_async_wait_all();
  __syncthreads();

  // The warp's 16 query rows as A fragments, in registers for the whole walk over keys.
  std::uint32_t qf[D / 16][4];
#pragma unroll
  for (int ks = 0; ks < D / 16; ++ks)
    ldmatrix_x4(qf[ks], smem_addr(q_smem + (warp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * S + ks * 16 + (lane >> 4) * 8));
  __syncthreads();  // every warp has its Q before tile 1 overwrites buffer 1

  float acc[kDTiles][4];
#pragma unroll
  for (int j = 0; j < kDTiles; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
  float row_max[2] = {-INFINITY, -INFINITY};  // rows g and g + 8, in raw score units
  float row_sum[2] = {0.0f, 0.0f};            // this thread's share; summed over the quad at the end

  for (int tile = 0; tile < tiles; ++tile) {
    const int buf = tile & 1;
    if (tile + 1 < tiles) {  // prefetch the next tile into the buffer tile - 1 used (all warps are done with it)
      T* next = smem + (buf ^ 1) * 2 * L::kKv;
      load_rows<kBlockN, D>(next, k, (tile + 1) * kBlockN, seq);
      load_rows<kBlockN, D>(next + L::kKv, v, (tile + 1) * kBlockN, seq);
      cp_async_commit();
    }
    const T* const k_tile = smem + buf * 2 * L::kKv;
    const T* const v_tile = k_tile + L::kKv;
    const int key0 = tile * kBlockN;

    // Rows past seq (tail block) have nothing to compute; causal tiles above all of this warp's
    // rows add nothing.
    if (warp_row0 < seq && (!causal || key0 <= warp_row0 + 15)) {
      float s[kNTiles][4];
#pragma unroll
      for (int j = 0; j < kNTiles; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
      // S = Q K^T: B (16 of d x 8 keys) is K's rows as stored; one x4 load gives two key groups.
#pragma unroll
      for (int ks = 0; ks < D / 16; ++ks)
#pragma unroll
        for (int np = 0; np < kBlockN / 16; ++np) {
          std::uint32_t b[4];
          ldmatrix_x4(b, smem_addr(k_tile + (np * 16 + (lane & 7) + (lane >> 4) * 8) * S + ks * 16 + ((lane >> 3) & 1) * 8));
          mma<T>(s[2 * np], qf[ks], b[0], b[1]);
          mma<T>(s[2 * np + 1], qf[ks], b[2], b[3]);
        }

      if (key0 + kBlockN > seq || (causal && key0 + kBlockN - 1 > warp_row0)) {
#pragma unroll
        for (int j = 0; j < kNTiles; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int key = key0 + j * 8 + t4 * 2 + (e & 1);
            const int row = warp_row0 + g + (e >> 1) * 8;
            if (key >= seq || (causal && key > row)) s[j][e] = -INFINITY;
          }
      }

      // Online softmax: the four threads of a quad hold one row's 64 scores between them.
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float mx = -INFINITY;
#pragma unroll
        for (int j = 0; j < kNTiles; ++j) mx = fmaxf(mx, fmaxf(s[j][2 * h], s[j][2 * h + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float new_max = fmaxf(row_max[h], mx);
        // A row with every key so far masked keeps max -inf: subtract 0 then, never -inf - -inf.
        const float base = new_max == -INFINITY ? 0.0f : new_max * scale_log2;
        const float alpha = exp2_approx(row_max[h] * scale_log2 - base);  // 0 on the first visible tile
        row_max[h] = new_max;
        float sum = 0.0f;
#pragma unroll
        for (int j = 0; j < kNTiles; ++j)
#pragma unroll
          for (int e = 2 * h; e < 2 * h + 2; ++e) {
            const float p = exp2_approx(fmaf(s[j][e], scale_log2, -base));
            s[j][e] = p;
            sum += p;
          }
        row_sum[h] = row_sum[h] * alpha + sum;
#pragma unroll
        for (int j = 0; j < kDTiles; ++j) {
          acc[j][2 * h] *= alpha;
          acc[j][2 * h + 1] *= alpha;
        }
      }

      // O += P V: P's accumulator fragments of keys 16 kk .. 16 kk + 15 are the A fragment;
      // B (16 keys x 8 of d) comes from V's rows through ldmatrix.trans.
#pragma unroll
      for (int kk = 0; kk < kBlockN / 16; ++kk) {
        const std::uint32_t a[4] = {pack2<T>(s[2 * kk][0], s[2 * kk][1]), pack2<T>(s[2 * kk][2], s[2 * kk][3]),
                                    pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                                    pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
        for (int dp = 0; dp < D / 16; ++dp) {
          std::uint32_t b[4];
          ldmatrix_x4_trans(b, smem_addr(v_tile + (kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * S + dp * 16 +
                                         (lane >> 4) * 8));
          mma<T>(acc[2 * dp], a, b[0], b[1]);
          mma<T>(acc[2 * dp + 1], a, b[2], b[3]);
        }
      }
    }

    if (tile + 1 < tiles) cp_async_wait_all();
    // The next tile is visible to every warp, and no warp still reads this buffer when the next
    // iteration's prefetch overwrites it.
    __syncthreads();
  }

#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float total = row_sum[h];
    total += __shfl_xor_sync(0xffffffffu, total, 1);
    total += __shfl_xor_sync(0xffffffffu, total, 2);
    const float inv = total > 0.0f ? 1.0f / total : 0.0f;
    const int row = warp_row0 + g + h * 8;
    if (row < seq) {
      T* out_row = o + static_cast<std::int64_t>(row) * D + t4 * 2;
#pragma unroll
      for (int j = 0; j < kDTiles; ++j) {
        const std::uint32_t packed = pack2<T>(acc[j][2 * h] * inv, acc[j][2 * h + 1] * inv);
        memcpy(out_row + j * 8, &packed, sizeof packed);  // 4-byte aligned: even column, even D
      }
    }
  }
}

template <class T, int D>
void set_shared_limit() {
  cuda::check(cudaFuncSetAttribute(flash_forward<T, D>, cudaFuncAttributeMaxDynamicSharedMemorySize, Layout<D>::kBytes),
              "cudaFuncSetAttribute (flash attention shared memory)");
}

template <class T, int D>
void launch(const FlashArgs& a, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(a.heads_total), static_cast<unsigned>((a.seq + kBlockM - 1) / kBlockM));
  flash_forward<T, D><<<grid, kThreads, Layout<D>::kBytes, stream>>>(
      static_cast<const T*>(a.q), static_cast<const T*>(a.k), static_cast<const T*>(a.v), static_cast<T*>(a.o), a.seq,
      a.scale * kLog2e, a.causal);
}

template <class T>
void launch_dim(const FlashArgs& a, cudaStream_t stream) {
  if (a.head_dim == 64) launch<T, 64>(a, stream);
  else launch<T, 128>(a, stream);
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

}  // namespace

bool flash_head_dim_built(int head_dim) { return head_dim == 64 || head_dim == 128; }

std::size_t flash_shared_bytes(int head_dim) {
  return head_dim == 64 ? Layout<64>::kBytes : head_dim == 128 ? Layout<128>::kBytes : 0;
}

void flash_prepare(DType dtype, int head_dim) {
  if (!flash_head_dim_built(head_dim)) throw std::invalid_argument("flash attention: head_dim " + std::to_string(head_dim) + " not built");
  if (dtype == DType::bf16) {
    if (head_dim == 64) set_shared_limit<__nv_bfloat16, 64>();
    else set_shared_limit<__nv_bfloat16, 128>();
  } else if (dtype == DType::fp16) {
    if (head_dim == 64) set_shared_limit<__half, 64>();
    else set_shared_limit<__half, 128>();
  } else {
    throw std::invalid_argument("flash attention: bf16 and fp16 only");
  }
}

void launch_flash_attention(DType dtype, const FlashArgs& a, cudaStream_t stream) {
  if (!flash_head_dim_built(a.head_dim)) throw std::invalid_argument("flash attention: head_dim " + std::to_string(a.head_dim) + " not built");
  if (a.seq < 1 || a.heads_total < 1 || a.heads_total > 0x7fffffff) throw std::invalid_argument("flash attention: bad shape");
  if (!aligned16(a.q) || !aligned16(a.k) || !aligned16(a.v) || !aligned16(a.o))
    throw std::invalid_argument("flash attention: tensors must be 16-byte aligned");
  if (dtype == DType::bf16) launch_dim<__nv_bfloat16>(a, stream);
  else if (dtype == DType::fp16) launch_dim<__half>(a, stream);
  else throw std::invalid_argument("flash attention: bf16 and fp16 only");
}

}  // namespace opmeter::attention
