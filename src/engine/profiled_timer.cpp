#include "engine/profiled_timer.hpp"

namespace opmeter {
namespace {

// The capture range, open while it lives: closed on every way out, a throwing call included.
class CaptureRange {
 public:
  explicit CaptureRange(Backend& backend) : backend_(backend) { backend_.profiler_start(); }
  ~CaptureRange() { backend_.profiler_stop(); }
  CaptureRange(const CaptureRange&) = delete;
  CaptureRange& operator=(const CaptureRange&) = delete;

 private:
  Backend& backend_;
};

}  // namespace

ProfiledTimer::ProfiledTimer(SampleTimer& inner, Backend& backend) : inner_(inner), backend_(backend) {
  inner_.under_profiler();
}

std::optional<double> ProfiledTimer::time(std::size_t calls, const std::function<void()>& call) {
  // Around the whole sample: a graph replay or a worker runs the calls without `call`, and the
  // inner timer, told it is under a profiler, enqueues nothing of its own before them.
  CaptureRange range(backend_);
  return inner_.time(calls, call);
}

}  // namespace opmeter
