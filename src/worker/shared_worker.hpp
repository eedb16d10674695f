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

// Whether case `c`'s impl runs in the worker (one of worker/impls.json's, or a user kernel).
bool runs_in_worker(const Case& c);

// Before a run measures anything: when some of `cases` run in the worker, throws UsageError (exit
// 2) for a worker environment that would spoil each of them: an OPMETER_WORKER_DEADLINE that is no
// time, or an OPMETER_PYTHON or OPMETER_WORKER that names no program or file (a typo would skip
// every torch case). Unset, they stay defaults: python3 from the PATH, whose absence or lack of
// PyTorch skips the cases with the reason.
void check_worker_environment(const std::vector<Case>& cases);

}  // namespace opmeter::worker

namespace opmeter::worker {
// Ends the shared worker (the next case starts a fresh one): for tests that change the worker's
// environment between cases.
void stop_shared_worker();
}  // namespace opmeter::worker
