#include "cuda/plugin/timer.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>

#include <fmt/format.h>

#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "engine/graph_timing.hpp"
#include "cuda/plugin/l2_flush.hpp"
#include "cuda/plugin/launch_hold.hpp"
#include "cuda/plugin/stream_cleanup.hpp"

namespace opmeter::cuda {
namespace {
// Samples of at most this many calls are held until all are issued: more could fill the launch
// queue while the hold kernel waits (nvbench's limit is alike); larger batches amortize the cost.
constexpr std::size_t kMaxHeldCalls = 128;
constexpr unsigned long long kHoldTimeoutNs = 100'000'000;  // never hang: give up after 0.1 s

// What clean_stream_for_case() had to clean on each device, for the case's timer to report.
std::mutex g_notes_mutex;
std::map<int, std::string> g_cleanup_notes;

std::string take_cleanup_note(int device) {
  std::lock_guard lock(g_notes_mutex);
  return std::exchange(g_cleanup_notes[device], "");
}

// Ends a capture on `s` (whatever its state) and destroys the partial graph; clears the error an
// abandoned capture leaves pending.
void end_capture(cudaStream_t s) {
  cudaGraph_t partial = nullptr;
  cudaStreamEndCapture(s, &partial);
  if (partial) cudaGraphDestroy(partial);
  cudaGetLastError();
}

// A capture in progress until closed; ended and its partial graph destroyed on every other way out.
class CaptureScope {
 public:
  explicit CaptureScope(cudaStream_t s) : s_(s) {
    check(cudaStreamBeginCapture(s_, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  }
  ~CaptureScope() {
    if (s_) end_capture(s_);
  }
  CaptureScope(const CaptureScope&) = delete;
  CaptureScope& operator=(const CaptureScope&) = delete;
  // The captured graph (the caller owns it); throws when the capture failed.
  cudaGraph_t close() {
    cudaStream_t s = std::exchange(s_, nullptr);
    cudaGraph_t graph = nullptr;
    if (cudaError_t e = cudaStreamEndCapture(s, &graph); e != cudaSuccess) {
      if (graph) cudaGraphDestroy(graph);
      cudaGetLastError();
      check(e, "cudaStreamEndCapture (is every call capturable?)");
    }
    return graph;
  }

 private:
  cudaStream_t s_;
};

// Lets a held stream go on every way out of a sample, so a call that throws leaves no hold
// kernel spinning until its timeout.
struct HoldRelease {
  volatile int* flag;
  ~HoldRelease() {
    if (flag) *flag = 1;
  }
};

class Event {
 public:
  Event() { check(cudaEventCreate(&e_), "cudaEventCreate"); }
  ~Event() { cudaEventDestroy(e_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_{};
};

class CudaTimer : public SampleTimer {
 public:
  explicit CudaTimer(const Case& c)
      : device_(c.device_index()), stream_(stream(device_)), cold_(!c.hot && c.setting_int("graph") == 0), graph_launches_(static_cast<int>(c.setting_int("graph"))),
        default_mhz_(props(device_).clock_khz / 1000.0) {
    // The plugin cleaned the stream at the start of the case (clean_stream_for_case); what it had
    // to clean is reported with the case. Within the case every capture closes itself (CaptureScope).
    cleanup_note_ = take_cleanup_note(device_);
    if (cold_) l2_.emplace(device_);
    void *host = nullptr, *device = nullptr;
    check(cudaHostAlloc(&host, 2 * sizeof(int), cudaHostAllocMapped), "cudaHostAlloc(mapped)");
    hold_ = static_cast<volatile int*>(host);
    check(cudaHostGetDevicePointer(&device, host, 0), "cudaHostGetDevicePointer");
    hold_device_ = static_cast<const volatile int*>(device);
  }
  ~CudaTimer() override {
    release_graph();
    if (hold_) cudaFreeHost(const_cast<int*>(hold_));
  }

  std::size_t fixed_batch() const override { return graph_launches_ > 0 ? graph_launches_ : cold_ ? 1 : 0; }
  void under_profiler() override { profiled_ = true; }

  std::optional<double> time(std::size_t calls, const std::function<void()>& call) override {
    if (graph_launches_ > 0 && !exec_) capture(calls, call);
    if (cold_ && !profiled_) {
      l2_->enqueue(stream_);
      check(cudaCtxResetPersistingL2Cache(), "cudaCtxResetPersistingL2Cache");
    }
    bool held = !profiled_ && (exec_ || calls <= kMaxHeldCalls);
    if (held) {
      hold_[0] = 0;  // release flag
      hold_[1] = 0;  // timed out
      if (auto off = launch_hold(hold_device_, const_cast<int*>(hold_device_) + 1, kHoldTimeoutNs, stream_); !off.empty()) {
        held = false;  // this sample includes launch gaps: the details say so
        if (hold_counts_.off++ == 0) hold_counts_.off_reason = off;
      }
    }
    HoldRelease release{held ? hold_ : nullptr};
    check(cudaEventRecord(start_.get(), stream_), "cudaEventRecord");
    if (exec_) {
      check(cudaGraphLaunch(exec_, stream_), "cudaGraphLaunch");
    } else {
      for (std::size_t i = 0; i < calls; ++i) call();
    }
    check(cudaEventRecord(stop_.get(), stream_), "cudaEventRecord");
    if (held) {
      std::atomic_thread_fence(std::memory_order_seq_cst);
      hold_[0] = 1;
      ++hold_counts_.held;
    }
    check(cudaStreamSynchronize(stream_), "the timed calls");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start_.get(), stop_.get()), "cudaEventElapsedTime");
    if (held && hold_[1]) ++hold_counts_.timed_out;  // the sample then includes launch gaps
    return ms * 1e-3;
  }

  std::map<std::string, std::string> details() const override {
    std::string timing = "cuda events, hot";
    if (cold_) timing = "cuda events, L2 flushed before each sample (by a read: no dirty lines)";
    else if (exec_) timing = "cuda events around one CUDA graph";
    std::map<std::string, std::string> d = {{"timing", timing},
                                            {"sm_clock_default_mhz", fmt::format("{:.0f}", default_mhz_)}};
    if (cold_) d["l2_flush_bytes"] = std::to_string(l2_->bytes());
    if (!cleanup_note_.empty()) d["stream_cleanup"] = cleanup_note_;
    d["launch_hold"] = hold_detail(hold_counts_);
    if (exec_) {
      d["graph_launches"] = std::to_string(graph_launches_);
      d["host_launch_overhead_us"] = fmt::format("{:.3f}", launch_.host_per_launch_s * 1e6);
      d["stream_per_launch_us"] = fmt::format("{:.3f}", launch_.stream_per_launch_s * 1e6);
    }
    return d;
  }

 private:
  // Captures `calls` launches into one graph; on the way, times the same launches issued one by
  // one on the stream (host enqueue cost and per-launch time with launch gaps).
  void capture(std::size_t calls, const std::function<void()>& call) {
    using Clock = std::chrono::steady_clock;
    check(cudaStreamSynchronize(stream_), "before graph capture");
    check(cudaEventRecord(start_.get(), stream_), "cudaEventRecord");
    auto t0 = Clock::now();
    for (std::size_t i = 0; i < calls; ++i) call();
    auto t1 = Clock::now();
    check(cudaEventRecord(stop_.get(), stream_), "cudaEventRecord");
    check(cudaStreamSynchronize(stream_), "stream launches");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start_.get(), stop_.get()), "cudaEventElapsedTime");
    launch_ = launch_costs(std::chrono::duration<double>(t1 - t0).count(), ms * 1e-3, calls);

    release_graph();  // a capture that failed before left nothing to reuse
    CaptureScope scope(stream_);
    for (std::size_t i = 0; i < calls; ++i) call();
    graph_ = scope.close();
    try {
      check(cudaGraphInstantiate(&exec_, graph_, 0), "cudaGraphInstantiate");
      check(cudaGraphUpload(exec_, stream_), "cudaGraphUpload");
    } catch (...) {
      release_graph();
      throw;
    }
  }

  void release_graph() {
    if (exec_) cudaGraphExecDestroy(std::exchange(exec_, nullptr));
    if (graph_) cudaGraphDestroy(std::exchange(graph_, nullptr));
  }

  int device_;
  cudaStream_t stream_;
  bool cold_;
  bool profiled_ = false;  // under_profiler(): the profiler serializes launches and flushes caches itself
  int graph_launches_;
  double default_mhz_;
  std::optional<L2Flush> l2_;  // cold samples only
  volatile int* hold_ = nullptr;          // [release, timed out], host-mapped
  const volatile int* hold_device_ = nullptr;
  HoldCounts hold_counts_;
  Event start_, stop_;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  LaunchCosts launch_;
  std::string cleanup_note_;  // what had to be cleaned before this case, if anything
};

}  // namespace

std::string clean_stream(int device) {
  cudaStream_t s = stream(device);
  StreamState state;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(s, &capture) == cudaSuccess && capture != cudaStreamCaptureStatusNone) {
    state.capture = capture == cudaStreamCaptureStatusActive ? CaptureState::active : CaptureState::invalidated;
    end_capture(s);
  }
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) state.pending_error = cudaGetErrorName(e);
  // What is still wrong after that is sticky: the context is lost (an illegal address, a trap).
  if (cudaError_t e = cudaStreamSynchronize(s); e != cudaSuccess) {
    state.sticky_error = fmt::format("{}: {}", cudaGetErrorName(e), cudaGetErrorString(e));
    cudaGetLastError();
  }
  if (auto why = broken_context(state, device)) throw std::runtime_error(*why);
  return cleanup_note(state);
}

void clean_stream_for_case(int device) {
  std::string note = clean_stream(device);
  std::lock_guard lock(g_notes_mutex);
  g_cleanup_notes[device] = note;  // replaces a note no timer took (its case ended before timing)
}

std::unique_ptr<SampleTimer> make_timer(const Case& c) { return std::make_unique<CudaTimer>(c); }

}  // namespace opmeter::cuda
