// A reporter that writes one file at the end of a run, from all its results.
#include <filesystem>

#include "report/reporters.hpp"

namespace opmeter {
namespace {

class EndFileReporter : public Reporter {
 public:
  EndFileReporter(std::string path, FileContent content) : path_(std::move(path)), content_(std::move(content)) {}
  void begin(const nlohmann::json& context, std::size_t) override { context_ = context; }
  void end(const std::vector<Result>& all) override { write_atomically(path_, content_(context_, all)); }

 private:
  std::string path_;
  FileContent content_;
  nlohmann::json context_;
};

}  // namespace

std::unique_ptr<Reporter> make_end_file_reporter(const std::string& dir, const std::string& name, FileContent content) {
  return std::make_unique<EndFileReporter>((std::filesystem::path(dir) / name).string(), std::move(content));
}

}  // namespace opmeter
