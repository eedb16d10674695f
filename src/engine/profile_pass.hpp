#pragma once
// The untimed profiling pass of a case (run --profile, --memory-profile; a torchao config's
// enable_profiler, enable_memory_profiler): after its measurement and checks, the impl writes
// what files it has (a worker's PyTorch profiler trace, a CUDA memory snapshot) into the run's
// profiles/ folder, named by the case. It never changes a measured number, and a pass that fails
// is a detail of the result, never the case's status.
#include "engine/runner.hpp"

namespace opmeter {

// The folder of a run's profiles, under its results directory.
inline constexpr const char* kProfilesFolder = "profiles";

void profile_pass(Result& r, Impl& impl, const RunOptions& options);

}  // namespace opmeter
