#pragma once
// A case string's validation message (the CaseError a run would print), or "ok".
#include <string>

#include "opmeter/case.hpp"
#include "opmeter/errors.hpp"
#include "opmeter/registry.hpp"

namespace opmeter::testing {

inline std::string case_problem(const std::string& text) {
  try {
    validate_case(parse_case(text));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "ok";
}

}  // namespace opmeter::testing
