#pragma once
// run --profile: one more sample of a case runs inside the profiler's capture range (CUDA's
// cudaProfilerStart/Stop, which Nsight Compute and Nsight Systems open on with
// --profile-from-start off). The inner timer is told it runs under a profiler, so it enqueues
// nothing of its own around the calls (a launch-hold kernel, an L2 flush): a hold kernel in the
// range would spin until its timeout in every replay pass (Nsight Compute serializes launches, so
// the host that would release it waits on it), and Nsight Compute flushes caches itself.
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
