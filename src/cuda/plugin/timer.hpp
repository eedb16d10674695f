#pragma once
// How the engine times a sample on a CUDA device: CUDA events around the calls; for cold
// samples L2 is flushed and persisting L2 lines reset first; in graph mode the calls are one
// captured CUDA graph of back-to-back launches; after each sample a probe reads the SM clock and
// samples taken below 75% of the default clock are discarded.
#include <memory>

#include "opmeter/engine.hpp"
#include "src/cuda/plugin/device.hpp"

namespace opmeter::cuda {
std::unique_ptr<SampleTimer> make_timer(const Case& c);
}  // namespace opmeter::cuda
