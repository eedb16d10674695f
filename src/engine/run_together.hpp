#pragma once
// run_for (opmeter/engine.hpp) for an impl whose calls involve other processes (a collective's
// ranks): it stops when any process of the timer's launch would (SampleTimer::any), so that all
// of them make the same calls. Alone, it is run_for.
#include <atomic>
#include <cstddef>
#include <functional>

#include "opmeter/engine.hpp"

namespace opmeter {

std::size_t run_for_together(Impl& impl, std::size_t batch, double seconds, SampleTimer& together,
                             const std::atomic<bool>* cancel = nullptr, const std::function<bool()>& enough = {});

}  // namespace opmeter
