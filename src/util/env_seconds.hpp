#pragma once
// A wait in seconds set by an environment variable (OPMETER_RANK_WAIT_S, OPMETER_WORKER_DEADLINE):
// one parser, so every such setting accepts and refuses the same spellings.
#include <string>

namespace opmeter {

// `value` of the variable `name` as seconds: `fallback` when unset or empty; else UsageError
// "NAME=VALUE must be a number of seconds > 0" unless the whole text is a finite number > 0.
double seconds_setting(const std::string& name, const char* value, double fallback);

// seconds_setting of the process's environment variable `name`.
double env_seconds(const char* name, double fallback);

}  // namespace opmeter
