#pragma once
// `opmeter check --resume DIR`: the cases an earlier check (interrupted, or stopped by a timeout)
// left in DIR/check.json, and its selection, so that this check runs only the others and writes
// the union there.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "opmeter/result.hpp"

namespace opmeter {

struct StoredCheck {
  std::string file;              // DIR/check.json
  std::vector<Result> results;   // its cases, in its order
  nlohmann::json settings;       // its selection: device, filter, ops, impls, ...
  nlohmann::json context;        // the machine it was checked on
};

// UsageError naming DIR when it is no directory, holds no check.json or one that is not opmeter
// check's.
StoredCheck read_stored_check(const std::string& dir);

// The stored selection where the command line gives none (flags given now win). UsageError when
// --device names another device than the file's.
void take_stored_selection(CheckArgs& a, const StoredCheck& stored);

// UsageError when the file was checked on another model of the device (another GPU, another CPU)
// than `context` (this machine's) says, or by another build of opmeter (its git commit): one
// check.json describes one machine and one build.
void refuse_other_machine_or_build(const StoredCheck& stored, const nlohmann::json& context, const std::string& device);

}  // namespace opmeter
