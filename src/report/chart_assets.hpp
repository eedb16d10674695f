#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace opmeter {

// A JavaScript library compiled into the binary for the HTML report.
struct ChartLibrary {
  std::string name, version;
  std::string_view js;  // minified UMD build
};

// vega, vega-lite, vega-embed in load order; empty when the build found none (no charts then).
const std::vector<ChartLibrary>& chart_libraries();

}  // namespace opmeter
