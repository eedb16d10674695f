// The run's journal as a reporter: each finished case is appended the moment it finishes, so
// nothing finished is lost when the run stops. A write that fails stops the run (OutputError).
#include "report/journal.hpp"
#include "report/reporters.hpp"

namespace opmeter {
namespace {

class JsonlReporter : public Reporter {
 public:
  explicit JsonlReporter(const std::string& path) : journal_(path) {}
  void report(const Result& r) override { journal_.append(dump_json(to_json(r))); }

 private:
  Journal journal_;
};

}  // namespace

std::unique_ptr<Reporter> make_jsonl_reporter(const std::string& path) { return std::make_unique<JsonlReporter>(path); }

}  // namespace opmeter
