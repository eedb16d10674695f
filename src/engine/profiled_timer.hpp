#pragma once
// run --profile: the one timed sample of a case runs inside the profiler's capture range (CUDA's
// cudaProfilerStart/Stop, which Nsight Compute and Nsight Systems open on with
// --profile-from-start off). The range opens at the first call, not before the sample: what a
// device timer enqueues ahead of the calls (a launch-hold kernel, an L2 flush) stays out of it,
// and the inner timer is told it runs under a profiler, so it enqueues neither. A hold kernel
// inside the range would spin until its timeout in every replay pass: Nsight Compute serializes
// launches, so the host that would release it waits on it.
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "opmeter/backend.hpp"
#include "opmeter/engine.hpp"

namespace opmeter {

class ProfiledTimer : public SampleTimer {
 public:
  ProfiledTimer(SampleTimer& inner, Backend& backend);
  std::optional<double> time(std::size_t calls, const std::function<void()>& call) override;
  std::size_t fixed_batch() const override { return 1; }
  std::optional<double> last_call_seconds() const override { return inner_.last_call_seconds(); }
  std::map<std::string, std::string> details() const override { return inner_.details(); }
  bool any(bool yes) override { return inner_.any(yes); }
  double largest(double value) override { return inner_.largest(value); }

 private:
  SampleTimer& inner_;
  Backend& backend_;
};

}  // namespace opmeter
