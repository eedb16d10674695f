// The Python worker's impls (PyTorch eager, torch.compile, our Triton kernels), as the worker
// declares them in worker/impls.json: which ops each runs, in which dtypes, on which backends.
// The build embeds that table, so the impls are registered and listed without starting the
// worker, and where Python or PyTorch is missing; the worker announces the same table in its
// hello (docs/worker-protocol.md). They are measured only when named (each starts the worker).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "opmeter/registry.hpp"

namespace opmeter::worker {

// worker/impls.json as it was when opmeter was built (generated: cmake/EmbedWorkerImpls.cmake).
const char* built_in_impl_table();
const nlohmann::json& impl_table();

// The ImplDefs a table declares, for the ops `known` names (an op opmeter lacks has no spec to
// send); std::runtime_error naming what is wrong when the table is malformed.
std::vector<ImplDef> impl_defs(const nlohmann::json& table, const std::vector<std::string>& known);

// What to tell a user whose worker announces a table other than the built-in one (a worker/
// edited since the build): empty when they agree or the hello carries none.
std::string announcement_note(const nlohmann::json& hello);

}  // namespace opmeter::worker
