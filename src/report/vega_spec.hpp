#pragma once
// The pieces every Vega-Lite chart of the reports starts from.
#include <string>

#include <nlohmann/json.hpp>

#include "report/charts.hpp"

namespace opmeter::vega {

// A spec with its data inline and the reports' common look (no view border, axis font sizes).
inline nlohmann::json spec_with(nlohmann::json data_values) {
  return {{"$schema", kVegaLiteSchema},
          {"data", {{"values", std::move(data_values)}}},
          {"config", {{"view", {{"stroke", nullptr}}}, {"axis", {{"labelFontSize", 11}, {"titleFontSize", 12}}}}}};
}

// An encoding channel: a field of the data, its type and an optional title.
inline nlohmann::json field(const std::string& name, const std::string& type, const std::string& title = "") {
  nlohmann::json f = {{"field", name}, {"type", type}};
  if (!title.empty()) f["title"] = title;
  return f;
}

// A quantitative field shown with `format` (d3-format) in tooltips.
inline nlohmann::json number(const std::string& name, const std::string& title, const char* format = ".4g") {
  return {{"field", name}, {"type", "quantitative"}, {"title", title}, {"format", format}};
}

}  // namespace opmeter::vega
