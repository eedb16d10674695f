#pragma once
// The plugin's half of a CUDA impl (see include/opmeter/cuda/cuda_impl.hpp), written beside the impl's class
// in the op's cuda/ folder. Plain C++17 over backend-free headers: the plugin's .cu files see it.
#include <functional>
#include <memory>

#include "opmeter/case.hpp"
#include "opmeter/op.hpp"

namespace opmeter::cuda {

struct DeviceProps;  // the plugin's view of a device (include/opmeter/cuda/device.hpp)

struct Factory {
  // What this device runs (dtype by compute capability, kernel builds, library support).
  std::function<Support(const Case&, const DeviceProps&)> supports;
  std::function<std::unique_ptr<Impl>()> make;
};

}  // namespace opmeter::cuda
