#include "engine/profiled_timer.hpp"

namespace opmeter {
namespace {

// Opens the capture range at most once; closes it on every way out, a throwing call included.
class CaptureRange {
 public:
  explicit CaptureRange(Backend& backend) : backend_(backend) {}
  ~CaptureRange() {
    if (open_) backend_.profiler_stop();
  }
  CaptureRange(const CaptureRange&) = delete;
  CaptureRange& operator=(const CaptureRange&) = delete;
  void open() {
    if (open_) return;
    backend_.profiler_start();
    open_ = true;
  }

 private:
  Backend& backend_;
  bool open_ = false;
};

}  // namespace

ProfiledTimer::ProfiledTimer(SampleTimer& inner, Backend& backend) : inner_(inner), backend_(backend) {
  inner_.under_profiler();
}

std::optional<double> ProfiledTimer::time(std::size_t calls, const std::function<void()>& call) {
  // Around the whole sample: a graph replay or a worker runs the calls without `call`, and the
  // inner timer, told it is under a profiler, enqueues nothing of its own before them.
  CaptureRange range(backend_);
  range.open();
  return inner_.time(calls, call);
}

}  // namespace opmeter
