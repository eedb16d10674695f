#pragma once
// The cases `opmeter check` runs: on one device, every impl of its backend x every dtype the impl
// declares x its op's check shapes (OpDef::check_shapes), narrowed by --op, --impl, --dtype,
// --filter, --exclude and --quick.
#include <string>
#include <vector>

#include "opmeter/case.hpp"

namespace opmeter {

struct CheckSelection {
  std::string device = "cpu";
  std::vector<std::string> ops, impls, dtypes;  // --op, --impl, --dtype; empty: all
  std::string filter;                            // --filter: a regular expression on case strings
  std::string exclude;                           // --exclude: leave out the cases it matches
  bool quick = false;                            // the first shape each impl runs, per dtype
  // Impls the user brought (--kernel, --plugin): every shape, as impls named by --impl. Other
  // on_request impls (the worker's: each case a round trip of files, and torch.compile compiles)
  // run one case per op: its first shape in the first dtype they declare.
  std::vector<std::string> user_impls;
};

// Throws UsageError naming what is wrong: an unknown device, op, impl or dtype, an impl that does
// not run on the device, a filter that is no regular expression or a selection with no case.
std::vector<Case> check_cases(const CheckSelection& selection);

}  // namespace opmeter
