// The votes of the ranks before an every-rank case (engine/rank_gate.hpp), over MPI: each rank
// sends its vote to every other and waits a bounded time for theirs, so those that did not
// answer can be named. Point to point on a tag of its own, so no collective call can meet it.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "engine/rank_gate.hpp"
#include "ops/collective/mpi_world.hpp"
#include "scale/shard.hpp"

namespace opmeter::collective {
namespace {

constexpr int kVoteTag = 31031;
constexpr std::size_t kVoteBytes = 2048;  // a longer reason is cut short
constexpr char kSep = '\x1f';

std::string encode(const RankVote& v) {
  std::string s = fmt::format("{}{}{}{}{}{}{}", static_cast<int>(v.status), kSep, v.done ? 1 : 0, kSep, v.case_string,
                              kSep, v.reason);
  s.resize(kVoteBytes - 1);  // NUL-padded; the last byte stays NUL
  s.push_back('\0');
  return s;
}

RankVote decode(const std::string& bytes) {
  const std::string s(bytes.c_str());
  RankVote v;
  auto a = s.find(kSep), b = s.find(kSep, a + 1), c = s.find(kSep, b + 1);
  if (a == std::string::npos || b == std::string::npos || c == std::string::npos) {
    v.status = Status::error;
    v.reason = "an unreadable vote";
    return v;
  }
  v.status = static_cast<Status>(std::atoi(s.substr(0, a).c_str()));
  v.done = s.substr(a + 1, b - a - 1) == "1";
  v.case_string = s.substr(b + 1, c - b - 1);
  v.reason = s.substr(c + 1);
  return v;
}

class MpiRankExchange : public RankExchange {
 public:
  std::vector<RankVote> exchange(const RankVote& mine) override {
    ensure_mpi();
    if (!world_lost().empty()) throw RanksLost(world_lost());
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const std::string out = encode(mine);
    std::vector<std::string> in(size, std::string(kVoteBytes, '\0'));
    std::vector<MPI_Request> receives(size, MPI_REQUEST_NULL), sends(size, MPI_REQUEST_NULL);
    for (int r = 0; r < size; ++r) {
      if (r == rank) continue;
      MPI_Irecv(in[r].data(), kVoteBytes, MPI_CHAR, r, kVoteTag, MPI_COMM_WORLD, &receives[r]);
      MPI_Isend(out.data(), kVoteBytes, MPI_CHAR, r, kVoteTag, MPI_COMM_WORLD, &sends[r]);
    }
    std::vector<MPI_Request> all = receives;
    all.insert(all.end(), sends.begin(), sends.end());
    if (wait_bounded(all)) {
      std::vector<RankVote> votes(size);
      for (int r = 0; r < size; ++r) votes[r] = r == rank ? mine : decode(in[r]);
      return votes;
    }
    // Those whose vote did not come (or, when every vote came, that did not take this one's).
    std::copy(all.begin(), all.begin() + size, receives.begin());
    std::copy(all.begin() + size, all.end(), sends.begin());
    std::vector<std::string> silent;
    for (int r = 0; r < size; ++r)
      if (receives[r] != MPI_REQUEST_NULL) silent.push_back(std::to_string(r));
    if (silent.empty())
      for (int r = 0; r < size; ++r)
        if (sends[r] != MPI_REQUEST_NULL) silent.push_back(std::to_string(r));
    abandon(receives, sends);
    const std::string who = fmt::format("rank{} {}", silent.size() == 1 ? "" : "s", fmt::join(silent, ", "));
    lose_world(
        fmt::format("{} did not answer before {}; collectives need every rank, so the later ones are not run "
                    "(rerun all ranks)",
                    who, mine.case_string));
    throw RanksLost(
        fmt::format("{} did not answer within {} s (died, hangs, or is far behind; OPMETER_RANK_WAIT_S "
                    "sets the wait)",
                    who, rank_wait_s()));
  }
};

// Only under a launcher: alone, collectives are skipped and nothing waits.
const bool registered = [] {
  set_rank_exchange_factory([]() -> RankExchange* {
    static const bool launched = scale::shard_from_env(scale::process_env()).has_value();
    if (!launched) return nullptr;
    rank_wait_s();  // a bad OPMETER_RANK_WAIT_S stops the run before any case
    static MpiRankExchange exchange;
    return &exchange;
  });
  return true;
}();

}  // namespace
}  // namespace opmeter::collective
