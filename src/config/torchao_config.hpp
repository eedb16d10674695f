#pragma once
// torchao's microbenchmark configs (benchmarks/microbenchmarks: benchmark_mode,
// quantization_config_recipe_names, model_params, ...) read as they are. A config is recognised by
// its keys; each key maps onto opmeter's plan (docs/guide/quantization.md has the table). A key or
// value opmeter cannot honour gets a note naming it; an unknown key or a bad value is the config's
// error at its file:line:column, as in opmeter's own configs.
#include <string>

#include <yaml-cpp/yaml.h>

#include "config/yaml_reader.hpp"
#include "config/config.hpp"

namespace opmeter {

// Whether a config's top level is torchao's (it has one of torchao's own top-level keys).
bool is_torchao_config(const YAML::Node& root);
// The plan of a torchao config. `device_override` (--device) replaces its devices.
Plan load_torchao_config(const YamlReader& r, const YAML::Node& root, int default_threads, const std::string& device_override);

}  // namespace opmeter
