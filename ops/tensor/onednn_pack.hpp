#pragma once
// Our own packing of bf16 weights into the blocked layout oneDNN's AMX matmul reads them in
// (BA16a64b2a). oneDNN's own reorder to that layout, and the copy its matmul makes of plain
// row-major weights, run several times slower than a streaming copy on a 4096x4096 matrix; this
// packing runs at memcpy speed.
#include <cstddef>
#include <cstdint>

#include <oneapi/dnnl/dnnl.hpp>

namespace opmeter::tensor {

// Whether md (the weights of a matmul, K x N) is the layout pack_amx_bf16 writes: bf16,
// BA16a64b2a, K a multiple of 32 and N of 64 (no padding).
bool is_amx_bf16_packed(const dnnl::memory::desc& md);
// Packs row-major K x N bf16 `src` into `dst` in that layout: element (k, n) goes to
// [n / 64][k / 32][(k % 32) / 2][n % 64][k % 2]. Threads over pairs of rows.
void pack_amx_bf16(const std::uint16_t* src, std::uint16_t* dst, std::size_t k, std::size_t n);

}  // namespace opmeter::tensor
