// The ranks' agreement before a collective case (engine/rank_gate.hpp): the verdict of their
// votes, and the engine recording it on a rank that stopped before it was ready.
#include "engine/rank_gate.hpp"

#include <gtest/gtest.h>

#include "engine/runner.hpp"
#include "opmeter/registry.hpp"

using namespace opmeter;

namespace {
RankVote at(const std::string& kase, Status s = Status::ok, std::string reason = "", bool done = false) {
  return {kase, s, std::move(reason), done};
}
}  // namespace

TEST(RankGate, EveryRankReadyForTheSameCaseRunsIt) {
  EXPECT_FALSE(rank_verdict({at("a"), at("a"), at("a")}));
  EXPECT_FALSE(rank_verdict({at("a")}));
}

TEST(RankGate, TheLowestRankThatIsNotReadyDecidesForAll) {
  auto v = rank_verdict({at("a"), at("a", Status::error, "out of memory"), at("a", Status::skipped, "no fp64")});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->status, Status::error);
  EXPECT_EQ(v->reason, "rank 1: out of memory");
  v = rank_verdict({at("a"), at("a"), at("a", Status::skipped, "no fp64")});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->status, Status::skipped);
  EXPECT_EQ(v->reason, "rank 2: no fp64");
}

TEST(RankGate, RanksAtDifferentCasesAreAnErrorNamingTheCase) {
  auto v = rank_verdict({at("a"), at("a", Status::skipped, "x"), at("b")});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->status, Status::error);
  EXPECT_NE(v->reason.find("rank 2 at b"), std::string::npos) << v->reason;
}

TEST(RankGate, AResultFromBeforeResumeSkipsTheCaseOnTheOthers) {
  auto v = rank_verdict({at("a"), at("a", Status::ok, "", true), at("a")});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->status, Status::skipped);
  EXPECT_EQ(v->reason.rfind("rank 1: measured before --resume", 0), 0u) << v->reason;
}

namespace {
// Rank 0 of two (this process), rank 1's vote given; records what this rank voted.
struct FakeExchange : RankExchange {
  RankVote other;
  std::vector<RankVote> mine;
  std::vector<RankVote> exchange(const RankVote& me) override {
    mine.push_back(me);
    RankVote o = other;
    o.case_string = me.case_string;
    return {me, o};
  }
};
}  // namespace

TEST(RankGate, ARankThatSkipsBeforeSetupStillVotesAndRecordsTheVerdict) {
  if (!Registry::global().impl("collective", "mpi")) GTEST_SKIP() << "built without MPI: no collective impl";
  FakeExchange fake;
  fake.other = at("", Status::error, "cannot allocate");
  auto previous = set_rank_exchange_factory([&]() -> RankExchange* { return &fake; });
  // Without a launcher the mpi impl skips the case before setup: this rank votes its skip, and
  // rank 0's reason (its own) decides.
  Result r = run_case(parse_case("collective/mpi/fp32/kind=allreduce,bytes=64,inplace=0/threads=1"), RunOptions{});
  Result checked =
      check_case(parse_case("collective/mpi/fp32/kind=allreduce,bytes=64,inplace=0/threads=1"), RunOptions{});
  // Another op's case never votes.
  Result other = check_case(parse_case("bandwidth/opmeter/fp32/kernel=copy,n=1024/threads=1"), RunOptions{});
  set_rank_exchange_factory(previous);
  ASSERT_EQ(fake.mine.size(), 2u);
  EXPECT_EQ(fake.mine[0].status, Status::skipped);
  EXPECT_EQ(fake.mine[0].case_string, r.case_string);
  EXPECT_EQ(r.status, Status::skipped);
  EXPECT_EQ(r.reason.rfind("rank 0: collectives run under a launcher", 0), 0u) << r.reason;
  EXPECT_EQ(checked.reason, r.reason);
  EXPECT_EQ(other.status, Status::ok) << other.reason;
}

TEST(RankGate, AVoteSurvivesTheGathersText) {
  RankVote v{.case_string = "collective/mpi/fp32/kind=allreduce,bytes=64,inplace=0/threads=1",
             .status = Status::skipped,
             .reason = "refused: a:b\x1f with a separator",
             .done = true};
  RankVote back = decode_vote(encode_vote(v));
  EXPECT_EQ(back.case_string, v.case_string);
  EXPECT_EQ(back.status, Status::skipped);
  EXPECT_EQ(back.reason, v.reason);
  EXPECT_TRUE(back.done);
  RankVote garbled = decode_vote("3");
  EXPECT_EQ(garbled.status, Status::error);
  EXPECT_EQ(garbled.reason, "an unreadable vote");
}

TEST(RankGate, AnyReasonSurvivesAndAVoteWithoutAKnownStatusIsUnreadable) {
  RankVote v{.case_string = "c", .status = Status::error, .reason = "line 1\n\"quoted\" \\ tab\t end", .done = false};
  RankVote back = decode_vote(encode_vote(v));
  EXPECT_EQ(back.reason, v.reason);
  EXPECT_EQ(back.status, Status::error);
  EXPECT_FALSE(back.done);
  // A library's message that is not UTF-8 is still a vote (its stray byte replaced), not an exception.
  RankVote latin1 = decode_vote(encode_vote({.case_string = "c", .status = Status::skipped, .reason = "caf\xe9"}));
  EXPECT_EQ(latin1.status, Status::skipped);
  EXPECT_EQ(latin1.reason, "caf\xef\xbf\xbd");
  for (const char* text : {R"({"case":"c","status":"bogus","reason":"","done":false})",
                           R"({"case":"c","status":"ok","reason":""})", "1\x1f" "0\x1f" "c\x1f" "old format", ""}) {
    RankVote unreadable = decode_vote(text);
    EXPECT_EQ(unreadable.status, Status::error) << text;
    EXPECT_EQ(unreadable.reason, "an unreadable vote") << text;
  }
}

// Local rank k runs its NCCL cases on cuda:k, and a host's thread count is its own: the ranks are
// at the same case when all but those agree (every NCCL case under a launcher was "not in step").
TEST(RankGate, EachRankOnItsOwnGpuOrThreadsIsInStep) {
  const std::string on0 = "collective/nccl/fp32/kind=allreduce,bytes=64,inplace=0/device=cuda:0";
  const std::string on1 = "collective/nccl/fp32/kind=allreduce,bytes=64,inplace=0/device=cuda:1";
  auto vote = [](const std::string& kase, const std::string& across) {
    RankVote v = at(kase);
    v.across_ranks = across;
    return v;
  };
  EXPECT_FALSE(rank_verdict({vote(on0, "allreduce on cuda"), vote(on1, "allreduce on cuda")}));
  auto v = rank_verdict({vote(on0, "allreduce on cuda"), vote(on1, "allgather on cuda")});
  ASSERT_TRUE(v);
  EXPECT_NE(v->reason.find("rank 1 at " + on1), std::string::npos) << v->reason;
  RankVote back = decode_vote(encode_vote(vote(on1, "allreduce on cuda")));
  EXPECT_EQ(back.across_ranks, "allreduce on cuda");
  EXPECT_EQ(back.case_string, on1);
}

namespace {
// Rank 1 is at this rank's case with its own thread count.
struct OtherThreads : RankExchange {
  std::vector<RankVote> exchange(const RankVote& me) override {
    Case theirs = parse_case(me.case_string);
    theirs.threads += 3;
    return {me, RankVote{.case_string = theirs.to_string(), .across_ranks = case_across_ranks(theirs)}};
  }
};
}  // namespace

TEST(RankGate, TheGateComparesTheCaseAsEveryRankPlansIt) {
  OtherThreads other;
  auto previous = set_rank_exchange_factory([&]() -> RankExchange* { return &other; });
  RankGate gate(parse_case("collective/mpi/fp32/kind=allreduce,bytes=64,inplace=0/threads=1"));
  const bool active = gate.active();
  auto first = gate.ready();
  set_rank_exchange_factory(previous);
  ASSERT_TRUE(active) << "the collective op votes";
  EXPECT_FALSE(first) << first->reason;
}
