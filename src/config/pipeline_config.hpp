#pragma once
// Reads a config's `pipelines:` (see pipeline_config.cpp); errors are ConfigErrors at the node.
#include <vector>

#include "config/yaml_reader.hpp"
#include "opmeter/pipeline.hpp"

namespace opmeter {

// Where pipelines run: `like` with `threads` and `hot`; on a GPU their small kernels are timed
// 100 to a CUDA graph unless the config gives `graph` itself (`graph_given`).
Case pipelines_where(Case like, int threads, bool hot, bool graph_given);

std::vector<pipeline::Pipeline> read_pipelines(const YamlReader& r, const YAML::Node& list, DType dtype);

}  // namespace opmeter
