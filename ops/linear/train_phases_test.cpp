// The training steps' phase machinery on a stand-in base: a check computes the whole step and is
// never "the backward alone", and the hook after each check sees the case's phase again.
#include <gtest/gtest.h>

#include <vector>

#include "ops/linear/train_phases.hpp"

using namespace opmeter;
using namespace opmeter::linear;

namespace {
// What TrainPhases needs of a base: case_ and a virtual verify (here it records the phase it sees).
struct RecordingBase {
  virtual ~RecordingBase() = default;
  virtual Check verify(std::uint64_t) {
    seen_in_check.push_back(during_check());
    return Check{.ok = true};
  }
  virtual std::pair<Phase, bool> during_check() const = 0;
  Case case_;
  std::vector<std::pair<Phase, bool>> seen_in_check;
};

struct Phases : TrainPhases<RecordingBase> {
  std::pair<Phase, bool> during_check() const override { return {phase_now(), backward_alone()}; }
  void checked() override { after_check.push_back(during_check()); }
  std::vector<std::pair<Phase, bool>> after_check;
};

Case train_case(const std::string& phase) {
  return parse_case("linear/onednn_train/bf16/batch=1,seq=4,hidden=8,out=8,act=none,mode=train" + phase + "/threads=1");
}
}  // namespace

TEST(TrainPhases, ChecksRunTheWholeStepAndTheCasesPhaseReturnsAfter) {
  for (auto [phase, expected] : {std::pair{"", Phase::step}, {",phase=forward", Phase::forward},
                                 {",phase=backward", Phase::backward}}) {
    Phases p;
    p.case_ = train_case(phase);
    EXPECT_EQ(p.during_check(), std::pair(expected, expected == Phase::backward)) << phase;
    EXPECT_TRUE(p.verify(1).ok);
    ASSERT_EQ(p.seen_in_check.size(), 1u);
    EXPECT_EQ(p.seen_in_check[0], std::pair(Phase::step, false)) << phase;
    ASSERT_EQ(p.after_check.size(), 1u);
    EXPECT_EQ(p.after_check[0], std::pair(expected, expected == Phase::backward)) << phase;
  }
}
