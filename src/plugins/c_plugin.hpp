#pragma once
// C plugins: shared libraries of impls built against include/opmeter/plugin_abi.h, loaded at run
// time (`opmeter run --plugin libmine.so`, or `plugins:` in a config).
#include <string>
#include <vector>

namespace opmeter {

// Loads the library at `path` and registers its impls (measured where a case, config or filter
// names them). Loading a path a second time does nothing. Throws UsageError naming the library
// and what is wrong: no such file, not a shared library, no entry point, another ABI version, or
// an impl described wrongly (then none of its impls is registered).
void load_plugin(const std::string& path);

// The absolute paths of the libraries loaded so far, in load order (child processes of
// `--isolate` load them too).
std::vector<std::string> loaded_plugins();

}  // namespace opmeter
