#include "report/fleet_chart.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "report/reporters.hpp"
#include "report/vega_spec.hpp"

namespace opmeter {

std::optional<Chart> fleet_heatmap_chart(const std::vector<scale::FleetCase>& fleet, const std::string& id,
                                         std::size_t max_cells) {
  if (fleet.empty()) return std::nullopt;
  auto outliers = [](const scale::FleetCase* fc) {
    return std::count_if(fc->entries.begin(), fc->entries.end(), [](auto& e) { return e.outlier; });
  };
  std::vector<const scale::FleetCase*> shown;
  for (auto& fc : fleet) shown.push_back(&fc);
  std::stable_sort(shown.begin(), shown.end(), [&](auto* a, auto* b) { return outliers(a) > outliers(b); });
  std::size_t cells = 0, kept = 0;
  while (kept < shown.size() && (kept == 0 || cells + shown[kept]->entries.size() <= max_cells)) cells += shown[kept++]->entries.size();
  shown.resize(kept);
  nlohmann::json values = nlohmann::json::array();
  double widest = 0;  // the colour scale spans +-widest, so 0 (the hardware median) is its middle
  for (auto* fc : shown)
    for (auto& e : fc->entries) {
      std::string why;
      for (auto& d : e.differences) why += (why.empty() ? "" : "; ") + d;
      values.push_back({{"case", fc->case_string}, {"machine", e.machine}, {"pct", e.vs_hardware_median * 100},
                        {"median", human_time(e.median_s)}, {"outlier", e.outlier}, {"why", why}});
      widest = std::max(widest, std::abs(e.vs_hardware_median * 100));
    }
  // Beyond 25% every cell is simply "far off"; below 5% (the outlier threshold) nothing should glare.
  const double span = std::clamp(widest, scale::kOutlierThreshold * 100, 25.0);
  auto spec = vega::spec_with(std::move(values));
  spec["width"] = {{"step", 16}};
  spec["height"] = {{"step", 16}};
  spec["encoding"] = {
      {"x", {{"field", "machine"}, {"type", "nominal"}, {"title", "machine"}, {"axis", {{"labelAngle", -45}, {"labelLimit", 200}}}}},
      {"y", {{"field", "case"}, {"type", "nominal"}, {"title", nullptr}, {"axis", {{"labelLimit", 480}}}}}};
  nlohmann::json tooltip = nlohmann::json::array({vega::field("case", "nominal"), vega::field("machine", "nominal"),
                                                  vega::field("median", "nominal", "median time"),
                                                  vega::number("pct", "vs identical hardware (%)", "+.1f"),
                                                  vega::field("outlier", "nominal"), vega::field("why", "nominal", "differences")});
  spec["layer"] = nlohmann::json::array(
      {{{"mark", {{"type", "rect"}}},
        {"encoding",
         {{"color", {{"field", "pct"}, {"type", "quantitative"}, {"title", "vs identical hardware (%)"},
                     {"scale", {{"scheme", "redblue"}, {"reverse", true}, {"domain", {-span, span}}, {"clamp", true}}}}},
          {"tooltip", tooltip}}}},
       {{"transform", nlohmann::json::array({{{"filter", "datum.outlier"}}})},
        {"mark", {{"type", "point"}, {"shape", "diamond"}, {"filled", false}, {"color", "black"}, {"size", 70}}},
        {"encoding", {{"tooltip", tooltip}}}}});
  std::string caption =
      "Colour: a machine's median time against the median of identical hardware (red slower, blue faster); "
      "a diamond marks an outlier. Hover a cell for its time and the differences that may explain it.";
  if (shown.size() < fleet.size())
    caption += fmt::format(" Shown: the {} of {} cases with the most outliers (at most {} cells); the tables below have every case.",
                           shown.size(), fleet.size(), max_cells);
  return Chart{id, "fleet", "Fleet: each case on each machine against identical hardware", caption, std::move(spec)};
}

}  // namespace opmeter
