#pragma once
// Reads a config's `pipelines:` (see pipeline_config.cpp); errors are ConfigErrors at the node.
#include <set>
#include <vector>

#include "config/yaml_reader.hpp"
#include "opmeter/pipeline.hpp"

namespace opmeter {

// Where pipelines run: `like` with `threads` and `hot`; on a GPU their small kernels are timed
// by the backend's pipeline defaults (CUDA: 100 to a graph) except the settings the config gives.
Case pipelines_where(Case like, int threads, bool hot, const std::set<std::string>& given_settings);

std::vector<pipeline::Pipeline> read_pipelines(const YamlReader& r, const YAML::Node& list, DType dtype);

}  // namespace opmeter
