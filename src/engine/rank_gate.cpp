// Every rank ready for the same every-rank case, or all record why not (rank_gate.hpp).
#include "engine/rank_gate.hpp"

#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "opmeter/registry.hpp"

namespace opmeter {
namespace {
std::function<RankExchange*()>& factory() {
  static std::function<RankExchange*()> f;
  return f;
}
}  // namespace

std::string case_across_ranks(const Case& c) {
  Case k = c;
  if (k.on_host()) k.threads = 0;
  else k.device = k.device.substr(0, k.device.find(':'));
  return k.to_string();
}

std::optional<RankVerdict> rank_verdict(const std::vector<RankVote>& votes) {
  if (votes.empty()) return std::nullopt;
  // The same case, or the same as every rank plans it (each on its own GPU, with its own threads).
  auto same = [](const RankVote& a, const RankVote& b) {
    return a.case_string == b.case_string || (!a.across_ranks.empty() && a.across_ranks == b.across_ranks);
  };
  for (std::size_t r = 1; r < votes.size(); ++r)
    if (!same(votes[r], votes[0]))
      return RankVerdict{Status::error,
                         fmt::format("ranks are not in step: rank 0 is at this case, rank {} at {} (every rank needs "
                                     "the same cases: the same config, filter and --resume)",
                                     r, votes[r].case_string)};
  for (std::size_t r = 0; r < votes.size(); ++r) {
    if (votes[r].done)
      return RankVerdict{Status::skipped,
                         fmt::format("rank {}: measured before --resume; collectives run only when every rank runs "
                                     "them (rerun all ranks)",
                                     r)};
    if (votes[r].status != Status::ok)
      return RankVerdict{votes[r].status, fmt::format("rank {}: {}", r, votes[r].reason)};
  }
  return std::nullopt;
}

namespace {
// The votes gathered over the launch's communicator.
class CommExchange final : public RankExchange {
 public:
  explicit CommExchange(scale::LaunchComm& comm) : comm_(comm) {}
  std::vector<RankVote> exchange(const RankVote& mine) override {
    std::vector<RankVote> votes;
    for (const std::string& text : comm_.gather(encode_vote(mine))) votes.push_back(decode_vote(text));
    return votes;
  }

 private:
  scale::LaunchComm& comm_;
};
}  // namespace

// A JSON object: any reason's text goes through as it is (bytes that are not UTF-8, which a
// library's message may hold, as U+FFFD rather than an exception).
std::string encode_vote(const RankVote& v) {
  const nlohmann::json j = {{"case", v.case_string},
                            {"across_ranks", v.across_ranks},
                            {"status", std::string(to_string(v.status))},
                            {"reason", v.reason},
                            {"done", v.done}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

RankVote decode_vote(const std::string& text) {
  try {
    const auto j = nlohmann::json::parse(text);
    if (auto status = parse_status(j.at("status").get<std::string>()))
      return {.case_string = j.at("case").get<std::string>(),
              .status = *status,
              .reason = j.at("reason").get<std::string>(),
              .done = j.at("done").get<bool>(),
              .across_ranks = j.value("across_ranks", std::string())};
  } catch (const nlohmann::json::exception&) {
  }
  return {.status = Status::error, .reason = "an unreadable vote"};
}

std::function<RankExchange*()> set_rank_exchange_factory(std::function<RankExchange*()> f) {
  return std::exchange(factory(), std::move(f));
}

RankExchange* rank_exchange() {
  if (factory()) return factory()();
  scale::LaunchComm* comm = scale::launch_comm();
  if (!comm) return nullptr;
  static CommExchange exchange(*comm);
  return &exchange;
}

RankGate::RankGate(const Case& c) : case_string_(c.to_string()), across_ranks_(case_across_ranks(c)) {
  const OpDef* op = Registry::global().op(c.op);
  if (op && op->every_rank) exchange_ = rank_exchange();
}

std::optional<RankVerdict> RankGate::vote(RankVote mine) {
  mine.case_string = case_string_;
  mine.across_ranks = across_ranks_;
  std::optional<RankVerdict> verdict;
  try {
    verdict = rank_verdict(exchange_->exchange(mine));
  } catch (const RanksLost& e) {
    verdict = RankVerdict{Status::error, e.what()};
  }
  if (verdict) decided_ = true;
  else ++passed_;
  return verdict;
}

std::optional<RankVerdict> RankGate::ready() {
  if (!active() || decided_ || passed_ >= kRounds) return std::nullopt;
  return vote({});
}

Result RankGate::settle(Result r) {
  if (!active() || decided_ || passed_ >= kRounds) return r;
  // This rank stopped before it was ready: the others wait for its vote.
  if (auto verdict = vote({.status = r.status == Status::ok ? Status::error : r.status, .reason = r.reason})) {
    r.status = verdict->status;
    r.reason = verdict->reason;
  }
  return r;
}

void RankGate::vote_done() {
  if (active() && !decided_ && passed_ == 0) vote({.done = true});
}

}  // namespace opmeter
