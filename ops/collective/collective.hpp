#pragma once
// Collectives: allreduce, allgather, reduce_scatter, alltoall, broadcast and sendrecv (the
// activation hand-off between pipeline stages) of a message of `bytes` over every rank of a
// launch, in place or out of place. Reported as nccl-tests reports them: the time (the slowest
// rank's), algbw = bytes / time (the GB/s of the op's work) and busbw = algbw x bus_factor.
// Inputs are small integers that differ per rank, so every sum is exact and the result is checked
// element by element on every rank.
#include <cstddef>
#include <optional>
#include <string_view>

#include "opmeter/case.hpp"

namespace opmeter::collective {

enum class Kind { allreduce, allgather, reduce_scatter, alltoall, broadcast, sendrecv };
std::optional<Kind> parse_kind(std::string_view name);
const char* kind_name(Kind k);

Kind kind_of(const Case& c);
std::size_t message_bytes(const Case& c);  // nccl-tests' size: the largest buffer a rank holds
bool in_place(const Case& c);
std::size_t elements(const Case& c);       // message_bytes / the dtype's size

// nccl-tests' bus bandwidth factor on n ranks (doc/PERFORMANCE.md there): allreduce 2(n-1)/n;
// allgather, reduce_scatter, alltoall (n-1)/n; broadcast and sendrecv 1.
double bus_factor(Kind k, int ranks);

// Elements each rank sends and receives for a message of `elements` on n ranks (a block is
// elements / n).
struct Counts {
  std::size_t send = 0, recv = 0;
};
Counts counts(Kind k, std::size_t elements, int ranks);

// Rank r's input at element i: an integer in [-5, 5], exact in every float type and in any sum
// of a few thousand ranks.
double input_value(int rank, std::size_t i);
// What rank `rank` of `ranks` must hold at output element i (broadcast's root is rank 0;
// sendrecv passes to the next rank in a ring).
double expected(Kind k, int rank, int ranks, std::size_t i, std::size_t elements);

}  // namespace opmeter::collective
