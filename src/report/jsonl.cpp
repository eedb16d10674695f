// The run's journal: one JSON line per finished case, flushed at once, so nothing finished is
// lost when the run stops.
#include <cstdio>
#include <stdexcept>

#include "opmeter/reporters.hpp"

namespace opmeter {
namespace {

class JsonlReporter : public Reporter {
 public:
  explicit JsonlReporter(const std::string& path) : f_(std::fopen(path.c_str(), "a")) {
    if (!f_) throw std::runtime_error("cannot open " + path + " for appending");
  }
  ~JsonlReporter() override { std::fclose(f_); }
  void report(const Result& r) override {
    auto line = to_json(r).dump() + "\n";
    std::fwrite(line.data(), 1, line.size(), f_);
    std::fflush(f_);
  }

 private:
  std::FILE* f_;
};

}  // namespace

std::unique_ptr<Reporter> make_jsonl_reporter(const std::string& path) { return std::make_unique<JsonlReporter>(path); }

}  // namespace opmeter
