#pragma once
// An op's work model (OpDef::work) for a case string: what the work-model tests count by hand.
#include <gtest/gtest.h>

#include <string>

#include "opmeter/registry.hpp"

namespace opmeter::testing {

inline Work work_of_case(const std::string& kase) {
  const Case c = parse_case(kase);
  const OpDef* op = Registry::global().op(c.op);
  EXPECT_NE(op, nullptr) << kase;
  return op ? op->work(c) : Work{};
}

}  // namespace opmeter::testing
