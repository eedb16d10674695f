#pragma once
// Where a rank's data lies for one collective call on device buffers, as NCCL takes them
// (nccl-tests' layout): the elements of the input and output buffers, and in place, where the
// input sits inside the output buffer (allgather: this rank's block; reduce_scatter: the whole
// buffer, the result at this rank's block). Pure arithmetic, tested without a GPU.
#include <cstddef>
#include <string>

#include "opmeter/dtype.hpp"
#include "ops/collective/collective.hpp"

namespace opmeter::collective {

struct Layout {
  std::size_t send = 0;         // elements of the input this rank supplies
  std::size_t recv = 0;         // elements of the result this rank gets
  std::size_t buffer = 0;       // elements of the output buffer (in place: the only buffer)
  std::size_t send_offset = 0;  // in place: where the input starts in the buffer
  std::size_t recv_offset = 0;  // where the result starts in the buffer
};
// `elements` of the message (nccl-tests' size) on `ranks`, for rank `rank`.
Layout device_layout(Kind k, std::size_t elements, int ranks, int rank, bool in_place);

// Why a reduction over `ranks` ranks is not exact in `dtype` (its partial sums of inputs in
// [-5, 5] pass the integers the type holds exactly: fp16 2048, bf16 256); empty when it is.
std::string inexact_sum_reason(Kind k, DType dtype, int ranks);

}  // namespace opmeter::collective
