#pragma once
// A name (a case string, a pipeline's name, a host) as one file or folder name: the one cleaner
// that profiles, pipeline logs and sharded runs' rank folders use.
#include <string>

namespace opmeter {

// `name` as a file name: letters, digits, '.', '-', '_' and '=' kept, anything else `replacement`;
// '_' put in front of an empty name or one starting with '.' (never hidden, never "." or ".."); a
// long name is cut and ends in a hash of the whole, so that two names never share a file.
std::string file_safe_name(const std::string& name, char replacement = '_');

}  // namespace opmeter
