#pragma once
// How the engine times a sample on a CUDA device: CUDA events around the calls; for cold
// samples L2 is flushed and persisting L2 lines reset first; in graph mode the calls are one
// captured CUDA graph of back-to-back launches; a hold kernel keeps the host's launch cost out of
// samples of few calls. Whether the GPU slowed down is NVML's to say (TelemetryTimer, runner).
#include <memory>

#include "opmeter/engine.hpp"
#include "src/cuda/plugin/device.hpp"

namespace opmeter::cuda {
std::unique_ptr<SampleTimer> make_timer(const Case& c);
}  // namespace opmeter::cuda
