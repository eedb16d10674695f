#pragma once
#include <cstddef>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "opmeter/result.hpp"

namespace opmeter {

// Formats results; never measures. Several at once through MultiReporter.
class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void begin(const nlohmann::json& /*context*/, std::size_t /*total_cases*/) {}
  virtual void case_started(std::size_t /*index*/, const Case& /*c*/) {}
  // While sampling: running mean time per call, running noise, samples so far.
  virtual void progress(double /*mean_s*/, double /*rel_noise*/, std::size_t /*samples*/) {}
  virtual void report(const Result& /*r*/) {}
  // All results of the run (including those resumed from an earlier one).
  virtual void end(const std::vector<Result>& /*all*/) {}
};

class MultiReporter : public Reporter {
 public:
  void add(std::unique_ptr<Reporter> r) { reporters_.push_back(std::move(r)); }
  void begin(const nlohmann::json& context, std::size_t total) override;
  void case_started(std::size_t index, const Case& c) override;
  void progress(double mean_s, double rel_noise, std::size_t samples) override;
  void report(const Result& r) override;
  void end(const std::vector<Result>& all) override;

 private:
  std::vector<std::unique_ptr<Reporter>> reporters_;
};

}  // namespace opmeter
