#pragma once
// Our own packing of bf16 weights into the blocked layout oneDNN's AMX matmul reads them in
// (BA16a64b2a). oneDNN's own reorder to that layout, and the copy its matmul makes of plain
// row-major weights, run several times slower than a streaming copy on a 4096x4096 matrix; this
// packing runs at memcpy speed.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

namespace opmeter::tensor {

// Whether md (the weights of a matmul, K x N) is the layout pack_amx_bf16 writes: bf16,
// BA16a64b2a, K a multiple of 32 and N of 64 (no padding).
bool is_amx_bf16_packed(const dnnl::memory::desc& md);
// Packs row-major K x N bf16 `src` into `dst` in that layout: element (k, n) goes to
// [n / 64][k / 32][(k % 32) / 2][n % 64][k % 2]. Threads over pairs of rows.
void pack_amx_bf16(const std::uint16_t* src, std::uint16_t* dst, std::size_t k, std::size_t n);

}  // namespace opmeter::tensor

namespace opmeter::tensor {

// dst (m x n, row-major) = src (m x k, row-major) x B, B packed by pack_amx_bf16, all bf16, in
// column slabs of dst: oneDNN 2.6's matmul on packed weights streams the whole B once per block
// of rows (1.4x the time of the same GEMM on plain transposed weights at 512x4096x4096);
// a slab of B sized for the L2 cache stays there for every block of rows. The threads share out
// the slabs, each running a one-thread matmul on its own (one parallel region: a multi-threaded
// matmul per slab would join the threads once per slab, which on a loaded machine costs more
// than the slabs save). Each slab is computed into the thread's scratch slab, then copied into
// place (a matmul writing into strided columns falls back to oneDNN's reference kernel).
class PackedSlabMatmul {
 public:
  PackedSlabMatmul() = default;
  // slab_bytes: the most bytes of B in a slab (a slab is at least 64 columns).
  PackedSlabMatmul(std::size_t m, std::size_t k, std::size_t n, std::size_t slab_bytes = 1 << 20);
  // Whether oneDNN runs a kernel of its own for the slabs (not its reference one).
  bool fast() const;
  std::string impl() const { return impl_; }
  std::size_t slab() const { return slab_; }
  void run(const void* src, const std::uint16_t* packed_b, void* dst);

 private:
  std::size_t m_ = 0, k_ = 0, n_ = 0, slab_ = 0;
  int threads_ = 1;
  dnnl::memory::desc src_md_, b_md_, slab_md_, scratchpad_md_;
  dnnl::matmul matmul_;  // made for one thread
  std::string impl_;
  std::vector<dnnl::stream> streams_;                 // one per thread
  std::vector<std::vector<std::uint16_t>> scratch_;  // one slab per thread
  std::vector<dnnl::memory> scratchpads_;             // oneDNN's scratchpad, one per thread
};

}  // namespace opmeter::tensor
