// Per-sample cost of opmeter's sampling loop with an empty op and one call per sample: two clock
// reads, the running statistics, the stopping rule and the virtual call. Target: <= 100 ns.
#include <chrono>
#include <cstdio>

#include "opmeter/engine.hpp"

namespace {
class EmptyImpl : public opmeter::Impl {
 public:
  void setup(const opmeter::Case&, const opmeter::SetupOptions&) override {}
  void run(std::size_t) override {}
  opmeter::Check verify(std::uint64_t) override { return {true, 0, 0, ""}; }
};
}  // namespace

int main() {
  EmptyImpl impl;
  opmeter::Stopping s;
  s.fixed_samples = 2'000'000;
  s.fixed_batch = 1;
  s.warmup_calls = 1000;
  for (int rep = 0; rep < 3; ++rep) {
    auto m = opmeter::measure(impl, 1, s);
    std::printf("empty op, batch 1: %.1f ns per sample (loop wall time / samples), clock read %.1f ns\n",
                m.elapsed_s / static_cast<double>(m.samples.size()) * 1e9, opmeter::timer_overhead_s() * 1e9);
  }
}
