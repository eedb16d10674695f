// A case that fails while the CUDA timer captures a graph must not fail the cases after it: the
// decision of what a case found on its stream (src/cuda/plugin/stream_cleanup.hpp) on the CPU,
// and on a GPU the timer's capture guard itself.
#include <gtest/gtest.h>

#include <stdexcept>

#include "opmeter/cuda/cuda_plugin.hpp"
#include "opmeter/case.hpp"
#include "cuda/plugin/stream_cleanup.hpp"

using namespace opmeter;
using cuda::CaptureState;
using cuda::StreamState;

TEST(CudaStreamCleanup, ACleanStreamNeedsNoNote) {
  EXPECT_EQ(cuda::cleanup_note(StreamState{}), "");
  EXPECT_FALSE(cuda::broken_context(StreamState{}, 0));
}

TEST(CudaStreamCleanup, AnOpenCaptureAndAPendingErrorAreNamed) {
  EXPECT_EQ(cuda::cleanup_note({.capture = CaptureState::active}),
            "ended a CUDA graph capture an earlier case left open (its partial graph destroyed)");
  EXPECT_EQ(cuda::cleanup_note({.capture = CaptureState::invalidated, .pending_error = "cudaErrorStreamCaptureInvalidated"}),
            "ended a CUDA graph capture an earlier case left invalidated (its partial graph destroyed); cleared a "
            "pending CUDA error (cudaErrorStreamCaptureInvalidated)");
  EXPECT_EQ(cuda::cleanup_note({.pending_error = "cudaErrorInvalidConfiguration"}),
            "cleared a pending CUDA error (cudaErrorInvalidConfiguration)");
  EXPECT_FALSE(cuda::broken_context({.capture = CaptureState::active, .pending_error = "x"}, 0));
}

TEST(CudaStreamCleanup, AStickyErrorSaysTheDeviceIsLostAndHowToGoOn) {
  auto why = cuda::broken_context({.sticky_error = "cudaErrorIllegalAddress: an illegal memory access"}, 1);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("cuda:1"), std::string::npos) << *why;
  EXPECT_NE(why->find("cudaErrorIllegalAddress"), std::string::npos) << *why;
  EXPECT_NE(why->find("--isolate"), std::string::npos) << *why;
}

TEST(CudaStreamCleanup, ACallThatThrowsDuringCaptureLeavesTheStreamUsable) {
  auto* p = cuda::plugin();
  if (!p) GTEST_SKIP() << "no CUDA plugin: " << cuda::load_reason();
  if (auto d = p->device(0); !d.ok) GTEST_SKIP() << "no CUDA device: " << d.reason;
  constexpr int kCalls = 4;
  {
    auto graphed = p->timer(parse_case("add/cuda/fp32/batch=1,seq=1,hidden=64/device=cuda:0,graph=4"));
    int calls = 0;
    // The timer first issues the calls on the stream (launch costs), then captures them: throw
    // in the middle of the capture.
    auto failing = [&] {
      if (++calls == kCalls + 2) throw std::runtime_error("a call failed while captured");
    };
    EXPECT_THROW(graphed->time(kCalls, failing), std::runtime_error);
    EXPECT_EQ(calls, kCalls + 2);
  }
  // The next case's timer: its stream must not be capturing any more (a synchronize would fail).
  auto next = p->timer(parse_case("add/cuda/fp32/batch=1,seq=1,hidden=64/device=cuda:0,hot"));
  std::optional<double> s;
  ASSERT_NO_THROW(s = next->time(1, [] {}));
  ASSERT_TRUE(s);
  EXPECT_GE(*s, 0.0);
  // The capture guard closed the capture itself: nothing was left for the start-of-case cleanup.
  EXPECT_FALSE(next->details().contains("stream_cleanup")) << next->details().at("stream_cleanup");
}
