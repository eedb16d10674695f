#pragma once
// What a case found on its device's stream before it started, and what that means: a pure
// decision (no CUDA types) so the tests can check it without a GPU. The plugin has one stream
// per device for the whole process: a capture a failed case left open, or an error it left
// pending, would otherwise fail every later case on that device.
#include <optional>
#include <string>

namespace opmeter::cuda {

enum class CaptureState { none, active, invalidated };

struct StreamState {
  CaptureState capture = CaptureState::none;  // cudaStreamIsCapturing before the case
  std::string pending_error;                  // cudaGetLastError's name, empty when none
  std::string sticky_error;                   // what the stream still returns after that, empty when usable
};

// What had to be cleaned, for the result's details; empty when the stream was clean.
inline std::string cleanup_note(const StreamState& s) {
  std::string note;
  if (s.capture != CaptureState::none)
    note = std::string("ended a CUDA graph capture an earlier case left ") +
           (s.capture == CaptureState::active ? "open" : "invalidated") + " (its partial graph destroyed)";
  if (!s.pending_error.empty())
    note += (note.empty() ? "" : "; ") + std::string("cleared a pending CUDA error (") + s.pending_error + ")";
  return note;
}

// Why no case can run on the device any more (a sticky error: the CUDA context is lost until the
// process ends); none when the stream is usable.
inline std::optional<std::string> broken_context(const StreamState& s, int device) {
  if (s.sticky_error.empty()) return std::nullopt;
  return "cuda:" + std::to_string(device) + " is unusable in this process after an earlier case's error (" +
         s.sticky_error + "): later cases need a fresh process (run with --isolate)";
}

}  // namespace opmeter::cuda
