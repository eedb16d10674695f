#pragma once
// Where a rank's data lies for one collective call on device buffers, as NCCL takes them
// (nccl-tests' layout): the elements of the input and output buffers, and in place, where the
// input sits inside the output buffer (allgather: this rank's block; reduce_scatter: the whole
// buffer, the result at this rank's block); and what the mpi and nccl impls share: the size and
// exactness checks and the poisoned fill. Pure arithmetic, tested without a GPU.
#include <cstddef>
#include <limits>
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

// Why a message of `elements` does not split into one equal block per rank for kind `k`
// (allgather, reduce_scatter and alltoall exchange blocks); empty when it does or needs none.
std::string block_split_reason(Kind k, std::size_t elements, int ranks);

// A rank's buffers before a call, written through the impl's own put_send(i, value) and
// put_out(i, value): its inputs (input_value) into the send buffer and, in place, into the output
// buffer at send_offset (broadcast: the root's only); NaN into every other output element, so an
// unwritten one shows. MPI places the input as NCCL does (only in-place reduce_scatter's result
// differs, at 0 there, which the fill does not touch).
template <class PutSend, class PutOut>
void fill_poisoned(Kind k, const Layout& l, int rank, bool in_place, PutSend&& put_send, PutOut&& put_out) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (std::size_t i = 0; i < l.buffer; ++i) put_out(i, nan);
  for (std::size_t i = 0; i < l.send; ++i) put_send(i, input_value(rank, i));
  if (in_place && (k != Kind::broadcast || rank == 0))
    for (std::size_t i = 0; i < l.send; ++i) put_out(l.send_offset + i, input_value(rank, i));
}

// Why a reduction over `ranks` ranks is not exact in `dtype` (its partial sums of inputs in
// [-5, 5] pass the integers the type holds exactly: fp16 2048, bf16 256); empty when it is.
std::string inexact_sum_reason(Kind k, DType dtype, int ranks);

}  // namespace opmeter::collective
