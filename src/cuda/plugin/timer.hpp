#pragma once
// How the engine times a sample on a CUDA device: CUDA events around the calls; for cold
// samples L2 is flushed (by a read, l2_flush.hpp) and persisting L2 lines reset first; in graph
// mode the calls are one captured CUDA graph of back-to-back launches; a hold kernel keeps the
// host's launch cost out of samples of few calls. Whether the GPU slowed down is NVML's to say
// (TelemetryTimer, runner).
#include <memory>
#include <string>

#include "opmeter/engine.hpp"
#include "opmeter/cuda/device.hpp"

namespace opmeter::cuda {
std::unique_ptr<SampleTimer> make_timer(const Case& c);

// Starts a case from a clean stream: ends a CUDA graph capture an earlier case left open on the
// device's stream (destroying its partial graph) and clears a pending CUDA error (stream_cleanup.hpp).
// Returns what had to be cleaned, empty when nothing; throws std::runtime_error when the device
// has a sticky error (no case can run on it in this process any more).
std::string clean_stream(int device);
// clean_stream at the start of a case (the plugin's make()); what it cleaned goes into the
// details of the case's timer.
void clean_stream_for_case(int device);
}  // namespace opmeter::cuda
