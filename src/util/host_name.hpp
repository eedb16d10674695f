#pragma once
// This machine's host name, as results, rank directories and energy counters name it.
#include <string>

namespace opmeter {
std::string host_name();
}  // namespace opmeter
