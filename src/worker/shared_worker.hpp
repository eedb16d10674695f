#pragma once
// The worker opmeter's worker impls share: one process, started on first use (starting Python
// and importing PyTorch takes seconds), started afresh after one died or hung.
#include "worker/worker_process.hpp"

namespace opmeter::worker {

// How long a request may take before the worker is called hung. OPMETER_WORKER_DEADLINE (seconds)
// overrides them all.
enum class Wait { start, setup, call };
double deadline_s(Wait wait);

// `$OPMETER_PYTHON -u WORKER`: the interpreter (default python3 on the PATH) and the worker script
// ($OPMETER_WORKER, default worker/opmeter_worker.py in the source tree opmeter was built from).
std::vector<std::string> worker_command();

// The running worker, started if none is. Throws WorkerUnavailable when it cannot start.
WorkerProcess& shared_worker();

}  // namespace opmeter::worker

namespace opmeter::worker {
// Ends the shared worker (the next case starts a fresh one): for tests that change the worker's
// environment between cases.
void stop_shared_worker();
}  // namespace opmeter::worker
