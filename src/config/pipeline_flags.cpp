// `--pipeline` flags to a plan: each flag read into {name, params, dtype}, built and planned
// like a config's `pipelines:` entry.
#include "config/pipeline_flags.hpp"

#include <set>

#include <fmt/format.h>

#include "config/pipeline_config.hpp"
#include "opmeter/errors.hpp"
#include "pipeline/pipeline_plan.hpp"

namespace opmeter {
namespace {

// Characters that end or quote a value in a shell or a config: a value holding one was not meant.
constexpr const char* kNotInNames = "{}[],:#\"' ";
constexpr const char* kNotInItems = "{}[]:#\"' ";

DType flag_dtype(const std::string& spec, const std::string& value) {
  if (auto d = parse_dtype(value)) return *d;
  std::vector<std::string> names;
  for (auto d : all_dtypes()) names.emplace_back(to_string(d));
  throw UsageError(fmt::format("--pipeline '{}': {}", spec, unknown_name("dtype", value, names)));
}

}  // namespace

PipelineFlag parse_pipeline_flag(const std::string& spec) {
  PipelineFlag flag;
  const auto colon = spec.find(':');
  flag.name = spec.substr(0, colon);
  if (flag.name.empty() || flag.name.find_first_of(kNotInNames) != std::string::npos)
    throw UsageError(fmt::format("--pipeline '{}': expected NAME[:key=value,...], e.g. resnet50:batch=64", spec));
  if (colon == std::string::npos) return flag;
  const std::string rest = spec.substr(colon + 1);
  std::set<std::string> keys;
  std::size_t at = 0;
  while (at <= rest.size()) {
    const auto comma = rest.find(',', at);
    const std::string item = rest.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    at = comma == std::string::npos ? rest.size() + 1 : comma + 1;
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size() || item.find_first_of(kNotInItems) != std::string::npos)
      throw UsageError(fmt::format("--pipeline '{}': '{}' is not key=value", spec, item));
    std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (!keys.insert(key).second) throw UsageError(fmt::format("--pipeline '{}': '{}' is given twice", spec, key));
    if (key == "dtype") flag.dtype = flag_dtype(spec, value);
    else flag.params.emplace_back(std::move(key), std::move(value));
  }
  return flag;
}

Plan load_pipeline_flags(const std::vector<std::string>& specs, int threads, const std::string& device) {
  Case like;
  if (!device.empty()) like.device = device;
  const Case where = pipelines_where(like, like.on_host() ? threads : 1, false, {});
  Plan plan;
  plan.source = "--pipeline";
  std::set<std::string> seen;  // one pipeline twice, in one dtype with the same values, would be measured twice
  for (const auto& spec : specs) {
    const PipelineFlag flag = parse_pipeline_flag(spec);
    try {
      pipeline::Pipeline p = pipeline::build(flag.name, flag.params, flag.dtype);
      std::string key = p.name + "/" + std::string(to_string(p.dtype));
      for (const auto& [k, v] : p.params) key += "," + k + "=" + v;
      if (!seen.insert(key).second)
        throw CaseError(fmt::format("pipeline '{}' is listed twice with the same parameters", p.name));
      plan.pipelines.push_back(pipeline::plan_pipeline(std::move(p), where, {}, true));
    } catch (const CaseError& e) {
      throw UsageError(fmt::format("--pipeline '{}': {}", spec, e.what()));
    }
  }
  plan.cases = pipeline::pipeline_cases(plan.pipelines);
  return plan;
}

}  // namespace opmeter
