#pragma once
// Reads a config's `pipelines:` (see pipeline_config.cpp); errors are ConfigErrors at the node.
#include <vector>

#include "config/yaml_reader.hpp"
#include "opmeter/pipeline.hpp"

namespace opmeter {

std::vector<pipeline::Pipeline> read_pipelines(const YamlReader& r, const YAML::Node& list, DType dtype);

}  // namespace opmeter
