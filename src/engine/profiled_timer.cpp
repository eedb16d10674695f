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
  CaptureRange range(backend_);
  return inner_.time(calls, [&] {
    range.open();
    call();
  });
}

}  // namespace opmeter
