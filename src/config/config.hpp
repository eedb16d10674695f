#pragma once
#include <optional>
#include <map>
#include <string>
#include <vector>

#include "opmeter/case.hpp"
#include "opmeter/context.hpp"
#include "opmeter/engine.hpp"
#include "pipeline/pipeline_plan.hpp"
#include "util/did_you_mean.hpp"

namespace opmeter {

// What a config or suite expands to, before command-line overrides.
struct Plan {
  std::vector<Case> cases;
  Stopping stopping;
  std::string source;  // file name or `suite:quick`
  std::vector<std::string> notes;  // what the expansion left out, and why
  std::size_t llc_bytes = 0;       // the config's llc_bytes (0: not given)
  std::map<std::string, double> run_settings;  // the config's energy_window_s, ... (engine/run_settings.hpp)
  std::vector<std::string> kernels;  // users' Python kernels it names (FILE:NAME, absolute)
  std::vector<std::string> plugins_not_loaded;  // its `plugins:` that a command reading it only checked exist
  // The config's `pipelines:`, per dtype: their layers' cases are in `cases` too.
  std::vector<pipeline::PlannedPipeline> pipelines;
  // Run settings a config may carry (torchao's: output_dir, enable_profiler); the command line wins.
  std::string output_root;  // results go to OUTPUT_ROOT/<timestamp> unless --out is given
  bool profile = false;     // as --profile
  bool memory_profile = false;  // as --memory-profile
};

// Whether reading a config runs the code it names: loading its `plugins:` runs their library
// constructors, reading its `kernels:` imports them in the worker. Only commands that measure do
// (`load`); a dry run and predict read the config (`skip`): those files are checked to exist, and
// the impls they would bring are left out with a note.
enum class ConfigCode { load, skip };

// Parse a YAML config. Errors are ConfigError with file, line and column. `device` ("cuda:0"),
// when given, replaces the config's `device:` (default cpu): its cases use that backend's impls.
Plan load_config_text(const std::string& yaml, const std::string& source_name, int default_threads,
                      const std::string& device = "", ConfigCode code = ConfigCode::load);
Plan load_config_file(const std::string& path, int default_threads, const std::string& device = "",
                      ConfigCode code = ConfigCode::load);
Plan load_suite(const std::string& name, int default_threads, const std::string& device = "");
// fp32 elements per bandwidth array that stream from memory here: 4x the last-level cache,
// at least 64 MiB, at most kMaxDefaultArrayBytes and 1/8 of free memory.
std::size_t default_bandwidth_elements(std::size_t llc = llc_bytes());
// A 4x-LLC array larger than this is capped: a VM's CPUID may report the host's whole L3
// (508 MiB gave 2 GiB arrays whose setup, checks and samples took minutes). 256 MiB per array is
// still 2.5x the largest per-socket L3 a thread of a common server sees.
inline constexpr std::size_t kMaxDefaultArrayBytes = std::size_t{256} << 20;
// Says why the default arrays are smaller than 4x the LLC, when they are; empty otherwise.
std::string bandwidth_cap_note(std::size_t llc = llc_bytes());

}  // namespace opmeter
