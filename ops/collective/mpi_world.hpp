#pragma once
// The MPI world the collectives run in (the mpi build only): MPI started once, and every wait on
// the other ranks bounded (the collectives' own and the launch's communicator's,
// launch_comm_mpi.cpp), so a rank that died or hangs becomes an error naming what was lost instead
// of a hang. Once a wait has run out, the world is lost: later collective cases are errors at
// once, and the process ends without MPI_Finalize (which would wait for the lost rank).
#include <mpi.h>

#include <string>
#include <vector>

namespace opmeter::collective {

// MPI starts with the first collective case (or its vote) and ends with the process.
void ensure_mpi();

// Seconds a rank waits for the others: OPMETER_RANK_WAIT_S, default 300 (ranks reach a collective
// case at different times when the sharded cases before it differ). UsageError when not a number > 0.
double rank_wait_s();

// Why the world is lost (empty while it is not), and marking it lost.
const std::string& world_lost();
void lose_world(const std::string& why);

// Waits for `requests` for at most rank_wait_s(); true when all completed. Otherwise those not
// completed stay in `requests` (the others are MPI_REQUEST_NULL) for the caller to name.
bool wait_bounded(std::vector<MPI_Request>& requests);
// Cancels and frees the point-to-point requests wait_bounded left (a collective's may not be).
void abandon(std::vector<MPI_Request>& receives, std::vector<MPI_Request>& sends);

// A blocking collective's bounded form: waits for the request or throws RanksLost (and loses the
// world) saying `what` got no answer from every rank in time.
void wait_or_lose(MPI_Request request, const char* what);

// Whether any rank says yes, and the largest value over the ranks: an allreduce over
// MPI_COMM_WORLD waited for by wait_or_lose (`what` names it when it runs out). The launch's
// communicator, the collectives' sampling loop and their check all decide through these.
bool any_rank(bool yes, const char* what);
double largest_over_ranks(double value, const char* what);

}  // namespace opmeter::collective
