// impl `mpi`: the collectives of the MPI library opmeter is built with (OpenMPI), on host buffers,
// over MPI_COMM_WORLD. Every wait on the other ranks outside the timed calls is bounded
// (mpi_world.hpp); the ranks agree before each case that all of them run it (engine/rank_gate.hpp).
// Built only where CMake finds MPI (its own object library, so the rest of opmeter neither
// includes nor links it), and runs only under a launcher.
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "opmeter/engine.hpp"
#include "opmeter/registry.hpp"
#include "ops/collective/collective.hpp"
#include "ops/collective/collective_layout.hpp"
#include "ops/collective/mpi_world.hpp"
#include "scale/shard.hpp"

namespace opmeter::collective {
namespace {

// A test-only fault on one rank, so tests can make the ranks disagree:
// OPMETER_TEST_RANK_FAULT=WHAT:RANK:KIND, WHAT one of refuse (the case is unsupported there),
// fail (its setup throws), stall (its setup sleeps 10 minutes: a hung rank) or stall_sampling
// (it hangs in the sampling loop, after every rank voted). Read by nothing else.
bool test_fault(const char* what, int rank, Kind kind) {
  const char* v = std::getenv("OPMETER_TEST_RANK_FAULT");
  return v && std::string(v) == fmt::format("{}:{}:{}", what, rank, kind_name(kind));
}

// Each sample starts together (a barrier) and lasts as long as its slowest rank, as nccl-tests
// reports; every decision of the engine's loop is taken by all ranks (SampleTimer::any).
class MpiTimer : public SampleTimer {
 public:
  explicit MpiTimer(bool stall) : stall_(stall) {}
  std::optional<double> time(std::size_t calls, const std::function<void()>& call) override {
    MPI_Request barrier;
    MPI_Ibarrier(MPI_COMM_WORLD, &barrier);
    wait_or_lose(barrier, "the barrier before a sample");
    const double t0 = MPI_Wtime();
    for (std::size_t i = 0; i < calls; ++i) call();
    return largest(MPI_Wtime() - t0);
  }
  bool any(bool yes) override {
    if (stall_) std::this_thread::sleep_for(std::chrono::minutes(10));  // the test hook's hung rank
    return any_rank(yes, "a decision of the sampling loop");
  }
  double largest(double value) override { return largest_over_ranks(value, "a decision of the sampling loop"); }

 private:
  bool stall_ = false;
};

class MpiCollective : public Impl {
 public:
  void setup(const Case& c, const SetupOptions&) override {
    ensure_mpi();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks_);
    kind_ = kind_of(c);
    if (test_fault("fail", rank_, kind_)) throw std::runtime_error("setup failed (OPMETER_TEST_RANK_FAULT, a test hook)");
    if (test_fault("stall", rank_, kind_)) std::this_thread::sleep_for(std::chrono::minutes(10));
    in_place_ = in_place(c);
    fp64_ = c.dtype == DType::fp64;
    type_ = fp64_ ? MPI_DOUBLE : MPI_FLOAT;
    e_ = elements(c);
    if (auto why = block_split_reason(kind_, e_, ranks_); !why.empty()) throw Unsupported(why);
    counts_ = counts(kind_, e_, ranks_);
    send_.assign(e_ * (fp64_ ? 8 : 4), 0);
    recv_.assign(e_ * (fp64_ ? 8 : 4), 0);
    fill();
  }

  void run(std::size_t) override {
    const int block = static_cast<int>(e_ / static_cast<std::size_t>(ranks_)), e = static_cast<int>(e_);
    const void* in = in_place_ ? MPI_IN_PLACE : send_.data();
    void* out = recv_.data();
    switch (kind_) {
      case Kind::allreduce: MPI_Allreduce(in, out, e, type_, MPI_SUM, MPI_COMM_WORLD); break;
      case Kind::allgather: MPI_Allgather(in, block, type_, out, block, type_, MPI_COMM_WORLD); break;
      case Kind::reduce_scatter: MPI_Reduce_scatter_block(in, out, block, type_, MPI_SUM, MPI_COMM_WORLD); break;
      case Kind::alltoall: MPI_Alltoall(in, block, type_, out, block, type_, MPI_COMM_WORLD); break;
      case Kind::broadcast:  // the root sends its input; the others receive into their output
        MPI_Bcast(rank_ == 0 ? send_.data() : out, e, type_, 0, MPI_COMM_WORLD);
        break;
      case Kind::sendrecv:
        MPI_Sendrecv(send_.data(), e, type_, (rank_ + 1) % ranks_, 0, out, e, type_, (rank_ + ranks_ - 1) % ranks_, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        break;
    }
  }

  Check verify(std::uint64_t) override {
    fill();
    run(0);
    Check check;
    check.tolerance = 0;  // integer inputs: every sum is exact
    const std::size_t n = kind_ == Kind::broadcast && rank_ == 0 ? 0 : counts_.recv;
    std::size_t worst_at = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double got = get(recv_, i), want = expected(kind_, rank_, ranks_, i, e_);
      const double err = std::isnan(got) ? std::numeric_limits<double>::infinity() : std::fabs(got - want);
      if (err > check.max_error) check.max_error = err, worst_at = i;
    }
    // Every rank learns the worst: all of them go on to time the case, or none does.
    const double worst = largest_over_ranks(check.max_error, "the check's worst error over the ranks");
    check.ok = worst <= check.tolerance;
    check.max_error = worst;
    check.detail = check.ok ? fmt::format("{} elements exact on each of {} ranks", counts_.recv, ranks_)
                            : fmt::format("rank {}: output[{}] = {} (expected {}); worst error over all ranks {}", rank_,
                                          worst_at, get(recv_, worst_at), expected(kind_, rank_, ranks_, worst_at, e_), worst);
    return check;
  }

  std::map<std::string, std::string> details() const override {
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int len = 0;
    MPI_Get_library_version(version, &len);
    std::string v(version, static_cast<std::size_t>(len));
    return {{"ranks", std::to_string(ranks_)}, {"mpi", v.substr(0, v.find_first_of(",\n"))}};
  }

  std::unique_ptr<SampleTimer> own_timer(const Case&) override {
    return std::make_unique<MpiTimer>(test_fault("stall_sampling", rank_, kind_));
  }

 private:
  double get(const std::vector<unsigned char>& b, std::size_t i) const {
    if (fp64_) {
      double v;
      std::memcpy(&v, b.data() + 8 * i, 8);
      return v;
    }
    float v;
    std::memcpy(&v, b.data() + 4 * i, 4);
    return v;
  }
  void put(std::vector<unsigned char>& b, std::size_t i, double v) {
    if (fp64_) std::memcpy(b.data() + 8 * i, &v, 8);
    else {
      float f = static_cast<float>(v);
      std::memcpy(b.data() + 4 * i, &f, 4);
    }
  }
  // The inputs and the poisoned output (fill_poisoned).
  void fill() {
    fill_poisoned(
        kind_, device_layout(kind_, e_, ranks_, rank_, in_place_), rank_, in_place_,
        [this](std::size_t i, double v) { put(send_, i, v); }, [this](std::size_t i, double v) { put(recv_, i, v); });
  }

  int rank_ = 0, ranks_ = 1;
  Kind kind_ = Kind::allreduce;
  bool in_place_ = false, fp64_ = false;
  MPI_Datatype type_ = MPI_FLOAT;
  std::size_t e_ = 0;
  Counts counts_;
  std::vector<unsigned char> send_, recv_;
};

ImplRegistrar reg({
    .op = "collective",
    .impl = "mpi",
    .summary = "the MPI library's collectives (OpenMPI) on host buffers, one process per rank",
    .dtypes = {DType::fp32, DType::fp64},
    .supports =
        [](const Case& c) {
          if (!scale::shard_from_env(scale::process_env()))
            return Support::no("collectives run under a launcher: mpirun -np N (or srun) opmeter run ...");
          auto k = kind_of(c);
          if (test_fault("refuse", scale::shard_from_env(scale::process_env())->rank, k))
            return Support::no("refused by OPMETER_TEST_RANK_FAULT (a test hook)");
          if (in_place(c) && (k == Kind::broadcast || k == Kind::sendrecv))
            return Support::no(fmt::format("{} has no in-place form here (inplace=0)", kind_name(k)));
          return Support::yes();
        },
    .make = [] { return std::make_unique<MpiCollective>(); },
});

}  // namespace
}  // namespace opmeter::collective
