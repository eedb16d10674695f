#include "opmeter/reporter.hpp"

namespace opmeter {

void MultiReporter::begin(const nlohmann::json& context, std::size_t total) {
  for (auto& r : reporters_) r->begin(context, total);
}
void MultiReporter::case_started(std::size_t index, const Case& c) {
  for (auto& r : reporters_) r->case_started(index, c);
}
void MultiReporter::progress(double mean_s, double rel_noise, std::size_t samples) {
  for (auto& r : reporters_) r->progress(mean_s, rel_noise, samples);
}
void MultiReporter::report(const Result& result) {
  for (auto& r : reporters_) r->report(result);
}
void MultiReporter::end(const std::vector<Result>& all) {
  for (auto& r : reporters_) r->end(all);
}

}  // namespace opmeter
