// The collective op: parameters, work model, bus bandwidth, expected results.
#include "ops/collective/collective.hpp"

#include <array>
#include <cstdlib>
#include <map>
#include <string>

#include <fmt/format.h>

#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"
#include "opmeter/result.hpp"

namespace opmeter::collective {
namespace {

constexpr std::array<const char*, 6> kNames = {"allreduce", "allgather", "reduce_scatter", "alltoall", "broadcast",
                                               "sendrecv"};

std::size_t elem_size(const Case& c) { return size_of(c.dtype); }

// On one rank a collective moves nothing between ranks: a bandwidth would be the call's overhead
// (in place, where the library returns at once: 64 MiB "in" 150 ns) or a local copy's speed.
std::string one_rank_note(const Result& r) {
  auto ranks = r.details.find("ranks");
  if (ranks == r.details.end() || ranks->second != "1") return "";
  if (in_place(r.kase))
    return fmt::format("one rank: no data crosses ranks, and in place {} has nothing to do; the time is the call's overhead",
                       r.kase.impl);
  return "one rank: no data crosses ranks; the time is the call's overhead and a copy within the rank";
}

OpDef collective_op() {
  OpDef op;
  op.name = "collective";
  op.summary = "allreduce, allgather, reduce_scatter, alltoall, broadcast, sendrecv over the ranks of mpirun/srun";
  op.params = {"kind", "bytes", "inplace"};
  op.example = {{"kind", "allreduce"}, {"bytes", "4096"}, {"inplace", "0"}};
  op.defaults = op.example;
  // One of each kind, from one fp64 element to a MiB, each a whole number of elements of every
  // dtype (a block-wise kind skips sizes that do not split over the launch's ranks, with the reason).
  op.check_shapes = {{{"kind", "allreduce"}, {"bytes", "8"}, {"inplace", "0"}},
                     {{"kind", "allreduce"}, {"bytes", "1048576"}, {"inplace", "1"}},
                     {{"kind", "allgather"}, {"bytes", "4608"}, {"inplace", "1"}},
                     {{"kind", "reduce_scatter"}, {"bytes", "4608"}, {"inplace", "0"}},
                     {{"kind", "alltoall"}, {"bytes", "4608"}, {"inplace", "1"}},
                     {{"kind", "broadcast"}, {"bytes", "24"}, {"inplace", "0"}},
                     {{"kind", "sendrecv"}, {"bytes", "40"}, {"inplace", "0"}}};
  op.uses_memory = false;  // nothing to make cold; no memory ceiling
  op.every_rank = true;    // every rank takes part in every case
  op.work = [](const Case& c) { return Work{0, static_cast<double>(message_bytes(c)), 0}; };  // GB/s = algbw
  op.footprint = [](const Case& c) { return 2.0 * static_cast<double>(message_bytes(c)); };
  op.validate = [](const Case& c) {
    kind_of(c);
    in_place(c);
    if (message_bytes(c) % elem_size(c) != 0)  // message_bytes itself refuses bytes <= 0
      throw CaseError(fmt::format("collective: bytes={} must be a positive multiple of {}'s {} bytes", c.get("bytes"),
                                  to_string(c.dtype), elem_size(c)));
  };
  op.no_rate = [](const Result& r) { return one_rank_note(r); };
  op.derived_metrics = [](const Result& r) {
    std::map<std::string, Metric> out;
    auto ranks = r.details.find("ranks");
    if (ranks == r.details.end() || r.gbps <= 0) return out;
    const double factor = bus_factor(kind_of(r.kase), std::atoi(ranks->second.c_str()));
    out["algbw_gbps"] = {.value = r.gbps, .unit = "GB/s", .better = Better::higher};
    out["busbw_gbps"] = {.value = r.gbps * factor, .unit = "GB/s", .better = Better::higher};
    return out;
  };
  return op;
}
OpRegistrar reg_collective(collective_op());

}  // namespace

std::optional<Kind> parse_kind(std::string_view name) {
  for (std::size_t i = 0; i < kNames.size(); ++i)
    if (name == kNames[i]) return static_cast<Kind>(i);
  return std::nullopt;
}

const char* kind_name(Kind k) { return kNames[static_cast<std::size_t>(k)]; }

Kind kind_of(const Case& c) {
  if (auto k = parse_kind(c.get("kind"))) return *k;
  throw CaseError(fmt::format("collective: kind={} is not one of allreduce, allgather, reduce_scatter, alltoall, "
                              "broadcast, sendrecv", c.get("kind")));
}

std::size_t message_bytes(const Case& c) {
  auto b = c.get_int("bytes");
  if (b <= 0) throw CaseError(fmt::format("collective: bytes={} must be positive", b));
  return static_cast<std::size_t>(b);
}

bool in_place(const Case& c) {
  const auto& v = c.get("inplace");
  if (v != "0" && v != "1") throw CaseError(fmt::format("collective: inplace={} must be 0 or 1", v));
  return v == "1";
}

std::size_t elements(const Case& c) { return message_bytes(c) / elem_size(c); }

double bus_factor(Kind k, int n) {
  switch (k) {
    case Kind::allreduce: return 2.0 * (n - 1) / n;
    case Kind::allgather:
    case Kind::reduce_scatter:
    case Kind::alltoall: return static_cast<double>(n - 1) / n;
    case Kind::broadcast:
    case Kind::sendrecv: return 1.0;
  }
  return 1.0;
}

Counts counts(Kind k, std::size_t e, int n) {
  const std::size_t block = e / static_cast<std::size_t>(n);
  switch (k) {
    case Kind::allgather: return {block, e};
    case Kind::reduce_scatter: return {e, block};
    default: return {e, e};
  }
}

double input_value(int rank, std::size_t i) {
  return static_cast<double>((static_cast<std::size_t>(rank) * 7 + i * 3) % 11) - 5.0;
}

double expected(Kind k, int rank, int n, std::size_t i, std::size_t e) {
  const std::size_t block = e / static_cast<std::size_t>(n);
  double sum = 0;
  switch (k) {
    case Kind::allreduce:
      for (int r = 0; r < n; ++r) sum += input_value(r, i);
      return sum;
    case Kind::allgather: return input_value(static_cast<int>(i / block), i % block);
    case Kind::reduce_scatter:
      for (int r = 0; r < n; ++r) sum += input_value(r, rank * block + i);
      return sum;
    case Kind::alltoall: return input_value(static_cast<int>(i / block), rank * block + i % block);
    case Kind::broadcast: return input_value(0, i);
    case Kind::sendrecv: return input_value((rank + n - 1) % n, i);
  }
  return 0;
}

}  // namespace opmeter::collective
