#include "util/output_path.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iterator>

#include <fmt/format.h>

#include "opmeter/errors.hpp"
#include "util/output_file.hpp"

namespace opmeter {

void check_output_file(const std::string& path, const std::string& option) {
  namespace fs = std::filesystem;
  if (path.empty()) throw UsageError(fmt::format("{}: the file name is empty", option));
  std::error_code ec;
  // A device or stream (-o /dev/stdout, /dev/null, a pipe) is written into: it must be writable.
  if (is_stream(path)) {
    if (::access(path.c_str(), W_OK) != 0) throw UsageError(fmt::format("{} {}: cannot be written", option, path));
    return;
  }
  if (fs::is_directory(path, ec))
    throw UsageError(fmt::format("{} {}: is a directory; give the path of a file to write", option, path));
  if (!path.empty() && path.back() == '/')
    throw UsageError(fmt::format("{} {}: names a directory; give the path of a file to write", option, path));
  fs::path folder = fs::path(path).parent_path();
  if (folder.empty()) folder = ".";
  if (!fs::exists(folder, ec))
    throw UsageError(fmt::format("{} {}: the folder {} does not exist", option, path, folder.string()));
  if (!fs::is_directory(folder, ec))
    throw UsageError(fmt::format("{} {}: {} is not a folder", option, path, folder.string()));
  if (::access(folder.c_str(), W_OK | X_OK) != 0)
    throw UsageError(fmt::format("{} {}: cannot write in the folder {}", option, path, folder.string()));
}

void check_not_an_input(const std::string& path, const std::string& option, const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path out = fs::weakly_canonical(path, ec);
  if (ec) return;  // check_output_file says what is wrong with it
  for (const auto& input : inputs) {
    const fs::path in = fs::weakly_canonical(input, ec);
    if (ec) continue;
    bool read = out == in;
    // A results directory, or the folder of a file of one (its journal and pipelines.json are read
    // too); a model, a config or a profile is read alone.
    static constexpr const char* kRunFiles[] = {"results.json", "results.jsonl", "run.json", "pipelines.json",
                                                "check.json"};
    auto run_file = [](const fs::path& p) {
      return std::any_of(std::begin(kRunFiles), std::end(kRunFiles),
                         [&](const char* name) { return p.filename() == name; });
    };
    const bool directory = fs::is_directory(in, ec);
    const fs::path folder = directory ? in : in.parent_path();
    if ((directory || run_file(in)) && out.parent_path() == folder && run_file(out)) read = true;
    if (read)
      throw UsageError(fmt::format("{} {}: the command reads it (from {}); write the output elsewhere", option, path, input));
  }
}

}  // namespace opmeter
