#pragma once
// Checks, before any work, that a file a command will write can be written there: a command
// that measures for minutes must not fail at the end on "Is a directory".
#include <string>
#include <vector>

namespace opmeter {

// UsageError (exit 2) naming `option` and `path` when the path is empty, is a directory, or its
// folder does not exist, is not a folder or cannot be written in (the file is written as a
// temporary beside it and renamed over it).
void check_output_file(const std::string& path, const std::string& option);
// UsageError when `path` would overwrite what the command reads: one of `inputs` given as a file,
// or a file opmeter reads beside one given as a results directory or a file of one (results.json,
// results.jsonl, run.json, pipelines.json, check.json). Another file (a model, a config, a profile)
// is read alone. Inputs that name no file (a case string) never match.
void check_not_an_input(const std::string& path, const std::string& option, const std::vector<std::string>& inputs);

}  // namespace opmeter
