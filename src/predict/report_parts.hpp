#pragma once
// What the model report's charts and pages share: model names in display order, the nominal
// coverage of the prediction interval, the machine a model was fitted on.
#include <string>
#include <string_view>

#include "predict/model.hpp"

namespace opmeter::predict::report_parts {

// The model's name as the report shows it. (model.cpp's to_string says the same; the report keeps
// its own so it depends on no fitting code.)
inline std::string_view model_label(ModelKind k) {
  switch (k) {
    case ModelKind::roofline: return "roofline";
    case ModelKind::analytic: return "analytic";
    case ModelKind::boosted: return "boosted";
    case ModelKind::forest: return "forest";
  }
  return "unknown";
}

// ErrorStats' interval spans the 5th to 95th percentile of measured / predicted.
inline constexpr double kNominalCoverage = 0.9;

// The machine in words: the CPU model and GPU names of the groups' devices, from the context.
std::string machine_name(const PredictModel& m);

}  // namespace opmeter::predict::report_parts
