#pragma once
// The report of a fitted model: how far each model's predictions can be trusted, per group.
#include <set>
#include <string>
#include <vector>

#include "predict/model.hpp"
#include "report/charts.hpp"

namespace opmeter::predict {

// Vega-Lite charts: predicted vs measured (held out) per model on log axes with the y = x line;
// error by op and by size (FLOPs or bytes bins) per model; interval coverage per model and group.
std::vector<Chart> model_charts(const PredictModel& m);
// Markdown: per group the held-out median / p90 error, interval and coverage of each model, the
// best model, the worst cases, the notes.
std::string model_markdown(const PredictModel& m);
// A self-contained HTML page (the charts' libraries embedded, as report.html has them).
std::string model_html(const PredictModel& m);

// `opmeter predict`'s error against measured times, over the predictions with one: the median and
// p90 of the best model's absolute percentage error (time_s, corrected), the share of measured
// times inside the interval, each model's median error (by_model, uncorrected), and how many of
// the cases are in `trained` (the model's training data). Empty when none was measured.
std::string measured_error_summary(const std::vector<Prediction>& cases, const std::set<std::string>& trained);

}  // namespace opmeter::predict
