#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace opmeter::embedding {

// out[r, :] = table[ids[r], :] for r < rows, rows of row_bytes bytes (a bit copy: the dtype does
// not matter). 16-byte copies when row_bytes is a multiple of 16 (every row then starts 16-byte
// aligned in cudaMalloc'd buffers), else copies of elem_bytes (2 or 4). An id outside [0, vocab)
// leaves its row unwritten (the check reports it) instead of reading outside the table.
void launch_gather(const std::int32_t* ids, const void* table, void* out, std::int64_t rows, std::int64_t row_bytes,
                  std::int64_t elem_bytes, std::int64_t vocab, cudaStream_t s);

}  // namespace opmeter::embedding
