#include "util/output_path.hpp"

#include <unistd.h>

#include <filesystem>

#include <fmt/format.h>

#include "opmeter/errors.hpp"

namespace opmeter {

void check_output_file(const std::string& path, const std::string& option) {
  namespace fs = std::filesystem;
  if (path.empty()) throw UsageError(fmt::format("{}: the file name is empty", option));
  std::error_code ec;
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

}  // namespace opmeter
