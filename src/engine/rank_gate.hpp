#pragma once
// Cases that every rank of a launch runs together (collectives: op.every_rank) start only when
// every rank is ready for the same case. Each rank votes before the case's first call across
// ranks: ready, or why not (a skip, a setup error, a result it already has from before --resume);
// when one is not, every rank records that rank's reason ("rank 2: ...") and all go on to the
// next case in step, instead of the ready ones waiting forever in the collective. The votes are
// gathered over the launch's communicator (engine/launch_comm.hpp), whose waits are bounded: a
// rank that does not vote in time is named, and the case is an error.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/launch_comm.hpp"
#include "opmeter/case.hpp"
#include "opmeter/result.hpp"

namespace opmeter {

// The case as every rank of a launch plans it: its string without what each rank sets for
// itself, the device's index (local rank k runs on cuda:k) and the host's thread count (by
// default the rank's usable CPUs): "device=cuda" and "threads=0" stand for them. Ranks compare
// cases by it (the vote below) and a sharded run splits its plan by it (scale/shard.hpp).
std::string case_across_ranks(const Case& c);

struct RankVote {
  std::string case_string;     // the case this rank is at
  Status status = Status::ok;  // ok: ready to run it; else what it records (skipped, error, ...)
  std::string reason;
  bool done = false;  // it has this case's result from before --resume and will not run it
  // The case as every rank plans it (case_across_ranks: without the rank's own GPU index,
  // local rank k runs on cuda:k, or thread count), what the ranks compare; empty: case_string.
  std::string across_ranks;
};

// What every rank records when not every rank is ready.
struct RankVerdict {
  Status status = Status::error;
  std::string reason;
};

// The verdict of every rank's votes (index = rank): nullopt when all are ready for the same case
// (the same across_ranks: each on its own GPU or threads); else the first rank (lowest) that is
// at another case, or else that is not ready, decides.
std::optional<RankVerdict> rank_verdict(const std::vector<RankVote>& votes);

// Exchanges votes with every rank of the launch: every rank's vote, index = rank, or RanksLost
// naming those that did not vote in time. By default a gather of the serialised votes over
// launch_comm(); tests put in their own with set_rank_exchange_factory.
class RankExchange {
 public:
  virtual ~RankExchange() = default;
  virtual std::vector<RankVote> exchange(const RankVote& mine) = 0;
};
// The launch's exchange (the factory's, when one is set); nullptr without a launcher or without
// MPI (then every-rank cases run as any other: their impls skip them).
RankExchange* rank_exchange();
// A vote as the text gather carries (JSON), and back (an unreadable one reads as an error vote).
std::string encode_vote(const RankVote& v);
RankVote decode_vote(const std::string& text);
// Replaces the default exchange (tests); returns the factory it replaces (tests put it back).
std::function<RankExchange*()> set_rank_exchange_factory(std::function<RankExchange*()> factory);

// One every-rank case's vote. Inactive (every call a no-op) for other cases or without an exchange.
class RankGate {
 public:
  explicit RankGate(const Case& c);
  bool active() const { return exchange_ != nullptr; }
  // This rank is ready for the next step: nullopt when every rank is (go on); else what to
  // record. A case votes kRounds times: before its impl is made (an impl's setup may itself talk
  // to the other ranks), and once set up, before its first call across ranks.
  static constexpr int kRounds = 2;
  std::optional<RankVerdict> ready();
  // The result to record: `r` as it is when the ranks passed every round together (or inactive);
  // else this rank votes r's outcome in the round the others wait in, and records the verdict.
  Result settle(Result r);
  // This rank has the case's result from before --resume: it votes so and records nothing (the
  // others, when they have none, record it skipped).
  void vote_done();

 private:
  std::optional<RankVerdict> vote(RankVote mine);
  std::string case_string_, across_ranks_;
  RankExchange* exchange_ = nullptr;
  int passed_ = 0;        // rounds every rank was ready in
  bool decided_ = false;  // a round ended with a verdict: no more rounds
};

}  // namespace opmeter
