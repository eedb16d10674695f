#include "ops/collective/collective_layout.hpp"

#include <fmt/format.h>

namespace opmeter::collective {

Layout device_layout(Kind k, std::size_t e, int ranks, int rank, bool in_place) {
  const std::size_t block = e / static_cast<std::size_t>(ranks), at = block * static_cast<std::size_t>(rank);
  const Counts n = counts(k, e, ranks);
  Layout l{.send = n.send, .recv = n.recv, .buffer = e};
  if (k == Kind::reduce_scatter) {
    l.buffer = in_place ? e : block;  // NCCL's in-place form: the result lands at this rank's block
    l.recv_offset = in_place ? at : 0;
  }
  if (k == Kind::allgather && in_place) l.send_offset = at;  // the input is this rank's block of the output
  return l;
}

std::string block_split_reason(Kind k, std::size_t e, int ranks) {
  const bool blocks = k == Kind::allgather || k == Kind::reduce_scatter || k == Kind::alltoall;
  if (!blocks || e % static_cast<std::size_t>(ranks) == 0) return "";
  return fmt::format("{} elements do not split into {} equal blocks", e, ranks);
}

std::string inexact_sum_reason(Kind k, DType dtype, int ranks) {
  if (k != Kind::allreduce && k != Kind::reduce_scatter) return "";
  // Integers up to 2^(mantissa bits + 1) are exact: fp16 11 bits, bf16 8, fp32 24, fp64 53.
  const double exact = dtype == DType::fp16 ? 2048 : dtype == DType::bf16 ? 256 : dtype == DType::fp32 ? 16777216 : 9e15;
  const double largest = 5.0 * ranks;  // inputs are integers in [-5, 5]
  if (largest <= exact) return "";
  return fmt::format("sums of {} ranks' inputs reach {}, past the integers {} holds exactly ({})", ranks, largest,
                     to_string(dtype), exact);
}

}  // namespace opmeter::collective
