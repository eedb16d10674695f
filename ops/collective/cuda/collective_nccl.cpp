// impl `nccl`: NCCL's collectives on device buffers, one process per GPU. Each process makes one
// NCCL communicator per device, at its first case there, and keeps it for the run (comm_cache.hpp):
// rank 0 makes NCCL's unique id and hands it to the others through the launch's communicator (a
// bounded broadcast); a process alone is one rank. Timed as nccl-tests does: CUDA events around back-to-back calls on
// one stream, the slowest rank's time. Inputs are small integers, so every result is exact: it is
// copied back and checked element by element on every rank, outside the timed loop.
// Built where the toolkit has NCCL's header (nccl.h); without it the impl is `skipped`, saying so.
#include "opmeter/cuda/device.hpp"

#if __has_include(<nccl.h>)
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "opmeter/dtype.hpp"
#include "opmeter/engine.hpp"
#include "ops/collective/collective.hpp"
#include "ops/collective/collective_layout.hpp"
#include "ops/collective/comm_cache.hpp"
#include "ops/collective/cuda/nccl_api.hpp"
#include "engine/launch_comm.hpp"
#include "scale/shard.hpp"

namespace opmeter::collective {
namespace {

ncclDataType_t nccl_type(DType d) {
  switch (d) {
    case DType::fp64: return ncclFloat64;
    case DType::fp16: return ncclFloat16;
    case DType::bf16: return ncclBfloat16;
    default: return ncclFloat32;
  }
}

// Elements of one dtype on the host, read and written as doubles.
class HostElements {
 public:
  HostElements(DType d, std::size_t n) : dtype_(d), bytes_(n * size_of(d)) {}
  void* data() { return bytes_.data(); }
  std::size_t bytes() const { return bytes_.size(); }
  double get(std::size_t i) const {
    const unsigned char* p = bytes_.data() + i * size_of(dtype_);
    switch (dtype_) {
      case DType::fp64: { double v; std::memcpy(&v, p, 8); return v; }
      case DType::fp16: { std::uint16_t v; std::memcpy(&v, p, 2); return from_fp16(v); }
      case DType::bf16: { std::uint16_t v; std::memcpy(&v, p, 2); return from_bf16(v); }
      default: { float v; std::memcpy(&v, p, 4); return v; }
    }
  }
  void put(std::size_t i, double v) {
    unsigned char* p = bytes_.data() + i * size_of(dtype_);
    const float f = static_cast<float>(v);
    switch (dtype_) {
      case DType::fp64: std::memcpy(p, &v, 8); break;
      case DType::fp16: { std::uint16_t h = to_fp16(f); std::memcpy(p, &h, 2); break; }
      case DType::bf16: { std::uint16_t h = to_bf16(f); std::memcpy(p, &h, 2); break; }
      default: std::memcpy(p, &f, 4); break;
    }
  }

 private:
  DType dtype_;
  std::vector<unsigned char> bytes_;
};

// CUDA events around the calls on the impl's stream; every rank starts the sample together and
// reports the slowest rank's time, and every decision of the engine's loop is the launch's.
class NcclTimer final : public SampleTimer {
 public:
  NcclTimer(int device, cudaStream_t s, scale::LaunchComm* comm) : stream_(s), comm_(comm) {
    cuda::check(cudaSetDevice(device), "cudaSetDevice");
    cuda::check(cudaEventCreate(&start_), "cudaEventCreate");
    cuda::check(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  ~NcclTimer() override {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  std::optional<double> time(std::size_t calls, const std::function<void()>& call) override {
    any(false);  // a barrier: no rank's events start while another is still on its last sample
    cuda::check(cudaEventRecord(start_, stream_), "cudaEventRecord");
    for (std::size_t i = 0; i < calls; ++i) call();
    cuda::check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
    cuda::check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
    float ms = 0;
    cuda::check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return largest(ms * 1e-3);
  }
  bool any(bool yes) override { return comm_ ? comm_->any(yes) : yes; }
  double largest(double value) override { return comm_ ? comm_->largest(value) : value; }
  std::map<std::string, std::string> details() const override {
    return {{"timer", "CUDA events around back-to-back calls on one stream; the slowest rank's time"}};
  }

 private:
  cudaStream_t stream_;
  scale::LaunchComm* comm_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

// The process's NCCL communicators, one per device, destroyed at exit. First called after the
// CUDA runtime started, so it is destroyed before the runtime's own end.
CommCache<ncclComm_t>& nccl_comms() {
  static CommCache<ncclComm_t> comms([](ncclComm_t c, bool broken) {
    const NcclApi& api = NcclApi::get();
    broken ? api.CommAbort(c) : api.CommDestroy(c);
  });
  return comms;
}

class NcclCollective final : public Impl {
 public:
  void setup(const Case& c, const SetupOptions&) override {
    const NcclApi& api = NcclApi::get();
    comm_ = scale::launch_comm();
    rank_ = comm_ ? comm_->rank() : 0;
    ranks_ = comm_ ? comm_->size() : 1;
    kind_ = kind_of(c);
    dtype_ = c.dtype;
    in_place_ = in_place(c);
    e_ = elements(c);
    // Every rank learns whether all can go on: one that cannot would leave the others waiting.
    std::string why = api.reason;
    if (why.empty()) why = block_split_reason(kind_, e_, ranks_);
    if (why.empty()) why = inexact_sum_reason(kind_, dtype_, ranks_);
    if (comm_ ? comm_->any(!why.empty()) : !why.empty())
      throw Unsupported(why.empty() ? "another rank of the launch cannot run this case" : why);

    device_ = c.device_index();
    stream_ = cuda::stream(device_);  // makes the device current
    layout_ = device_layout(kind_, e_, ranks_, rank_, in_place_);
    recv_ = cuda::DeviceBuffer(layout_.buffer * size_of(dtype_));
    if (!in_place_) send_ = cuda::DeviceBuffer(std::max<std::size_t>(layout_.send, 1) * size_of(dtype_));
    auto any_rank = [this](bool yes) { return comm_ ? comm_->any(yes) : yes; };
    const std::size_t made_before = nccl_comms().made();
    nccl_ = nccl_comms().get(device_, any_rank, [&] {
      ncclUniqueId id{};
      if (rank_ == 0) api.check(api.GetUniqueId(&id), "ncclGetUniqueId");
      if (comm_) comm_->broadcast(&id, sizeof id, 0);
      ncclComm_t made = nullptr;
      api.check(api.CommInitRank(&made, ranks_, id, rank_), "ncclCommInitRank");
      return made;
    });
    made_now_ = nccl_comms().made() != made_before;
    fill();
  }

  // An NCCL error may leave the communicator broken: the next case makes a new one.
  void run(std::size_t) override {
    try {
      call();
    } catch (...) {
      nccl_comms().drop(device_);
      throw;
    }
  }

  void sync() override { cuda::check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

  Check verify(std::uint64_t) override {
    fill();
    run(0);
    sync();
    HostElements got(dtype_, layout_.buffer);
    cuda::download(got.data(), recv_.data(), got.bytes(), stream_);
    Check check;
    check.tolerance = 0;  // integer inputs: every result is exact
    std::size_t worst_at = 0;
    for (std::size_t i = 0; i < layout_.recv; ++i) {
      const double g = got.get(layout_.recv_offset + i), want = expected(kind_, rank_, ranks_, i, e_);
      const double err = std::isnan(g) ? std::numeric_limits<double>::infinity() : std::fabs(g - want);
      if (err > check.max_error) check.max_error = err, worst_at = i;
    }
    // Every rank learns the worst: all of them go on to time the case, or none does.
    const double worst = comm_ ? comm_->largest(check.max_error) : check.max_error;
    check.ok = worst <= check.tolerance;
    check.detail = check.ok ? fmt::format("{} elements exact on each of {} ranks", layout_.recv, ranks_)
                            : fmt::format("rank {}: output[{}] = {} (expected {}); worst error over all ranks {}", rank_,
                                          worst_at, got.get(layout_.recv_offset + worst_at),
                                          expected(kind_, rank_, ranks_, worst_at, e_), worst);
    check.max_error = worst;
    return check;
  }

  std::map<std::string, std::string> details() const override {
    const NcclApi& api = NcclApi::get();
    char bus[32] = {};
    cudaDeviceGetPCIBusId(bus, sizeof bus, device_);
    std::map<std::string, std::string> d = {
        {"ranks", std::to_string(ranks_)},
        {"nccl", fmt::format("{}.{}.{}", api.version / 10000, api.version / 100 % 100, api.version % 100)},
        {"pci_bus_id", bus}};
    d["nccl_comm"] = made_now_ ? "made for this case" : "kept from an earlier case on this device";
    if (kind_ == Kind::alltoall) d["alltoall"] = api.AlltoAll ? "ncclAlltoAll" : "grouped ncclSend/ncclRecv";
    return d;
  }

  std::unique_ptr<SampleTimer> own_timer(const Case&) override {
    return std::make_unique<NcclTimer>(device_, stream_, comm_);
  }

 private:
  void call() {
    const NcclApi& api = NcclApi::get();
    const ncclDataType_t t = nccl_type(dtype_);
    const std::size_t es = size_of(dtype_), block = e_ / static_cast<std::size_t>(ranks_);
    auto* out = static_cast<char*>(recv_.data());
    const char* in = in_place_ ? out : static_cast<const char*>(send_.data());
    switch (kind_) {
      case Kind::allreduce: api.check(api.AllReduce(in, out, e_, t, ncclSum, nccl_, stream_), "ncclAllReduce"); break;
      case Kind::allgather:
        api.check(api.AllGather(in + layout_.send_offset * es, out, block, t, nccl_, stream_), "ncclAllGather");
        break;
      case Kind::reduce_scatter:
        api.check(api.ReduceScatter(in, out + layout_.recv_offset * es, block, t, ncclSum, nccl_, stream_),
                  "ncclReduceScatter");
        break;
      case Kind::alltoall:
        if (api.AlltoAll) {
          api.check(api.AlltoAll(in, out, block, t, nccl_, stream_), "ncclAlltoAll");
          break;
        }
        api.check(api.GroupStart(), "ncclGroupStart");  // before NCCL 2.28: nccl-tests' grouped form
        for (int r = 0; r < ranks_; ++r) {
          api.check(api.Send(in + r * block * es, block, t, r, nccl_, stream_), "ncclSend");
          api.check(api.Recv(out + r * block * es, block, t, r, nccl_, stream_), "ncclRecv");
        }
        api.check(api.GroupEnd(), "ncclGroupEnd");
        break;
      case Kind::broadcast: api.check(api.Broadcast(in, out, e_, t, 0, nccl_, stream_), "ncclBroadcast"); break;
      case Kind::sendrecv:  // a ring: to the next rank, from the previous one
        api.check(api.GroupStart(), "ncclGroupStart");
        api.check(api.Send(in, e_, t, (rank_ + 1) % ranks_, nccl_, stream_), "ncclSend");
        api.check(api.Recv(out, e_, t, (rank_ + ranks_ - 1) % ranks_, nccl_, stream_), "ncclRecv");
        api.check(api.GroupEnd(), "ncclGroupEnd");
        break;
    }
  }

  // The inputs and the poisoned output (fill_poisoned), staged on the host.
  void fill() {
    HostElements send(dtype_, std::max<std::size_t>(layout_.send, 1)), recv(dtype_, layout_.buffer);
    fill_poisoned(
        kind_, layout_, rank_, in_place_, [&](std::size_t i, double v) { send.put(i, v); },
        [&](std::size_t i, double v) { recv.put(i, v); });
    cuda::upload(recv_.data(), recv.data(), recv.bytes(), stream_);
    if (!in_place_) cuda::upload(send_.data(), send.data(), send.bytes(), stream_);
  }

  scale::LaunchComm* comm_ = nullptr;
  int rank_ = 0, ranks_ = 1, device_ = 0;
  Kind kind_ = Kind::allreduce;
  DType dtype_ = DType::fp32;
  bool in_place_ = false, made_now_ = false;
  std::size_t e_ = 0;
  Layout layout_;
  cudaStream_t stream_ = nullptr;
  cuda::DeviceBuffer send_, recv_;
  ncclComm_t nccl_ = nullptr;  // the process's, for device_ (nccl_comms)
};

}  // namespace

// The plugin's half of the nccl impl, named by its declaration in collective_cuda_impls.cpp.
cuda::Factory nccl_factory() {
  return {
      .supports = [](const Case&, const cuda::DeviceProps&) {
        const NcclApi& api = NcclApi::get();
        return api.reason.empty() ? Support::yes() : Support::no(api.reason);
      },
      .make = [] { return std::make_unique<NcclCollective>(); },
  };
}

}  // namespace opmeter::collective

#else  // no nccl.h where the plugin was built

namespace opmeter::collective {
cuda::Factory nccl_factory() {
  return {
      .supports = [](const Case&, const cuda::DeviceProps&) {
        return Support::no("this CUDA plugin was built without NCCL (no nccl.h in the CUDA toolkit)");
      },
      .make = [] { return std::unique_ptr<Impl>(); },
  };
}
}  // namespace opmeter::collective

#endif
