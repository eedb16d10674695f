#pragma once
// `--pipeline NAME[:key=value,...]`: a built-in pipeline asked for on the command line, read
// straight into what it names (no config text in between), and planned like a config's.
#include <string>
#include <utility>
#include <vector>

#include "config/config.hpp"
#include "opmeter/dtype.hpp"

namespace opmeter {

// One --pipeline flag: the pipeline's name, its parameters as written (its defaults fill the
// rest when it is built), and the dtype it runs in (`dtype=`, default fp32).
struct PipelineFlag {
  std::string name;
  std::vector<std::pair<std::string, std::string>> params;
  DType dtype = DType::fp32;
};

// Reads `resnet50:batch=64,dtype=bf16`. UsageError quoting the flag for a malformed one (no name,
// an item that is not key=value, a key given twice, an unknown dtype).
PipelineFlag parse_pipeline_flag(const std::string& spec);

// The plan of the flags: each pipeline built and planned where `device` (default: the CPU) runs
// it, with `threads`. UsageError quoting the flag at fault (unknown pipeline or parameter, a bad
// value, one listed twice).
Plan load_pipeline_flags(const std::vector<std::string>& specs, int threads, const std::string& device);

}  // namespace opmeter
