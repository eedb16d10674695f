#pragma once
// Walking a results tree that anyone may have left links in: an entry whose type cannot be read
// (a symbolic link in a loop: "Too many levels of symbolic links", one into an unreadable place)
// is skipped with a note, never an exception that ends the command as an internal error.
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <system_error>

#include <fmt/format.h>

namespace opmeter {

// Whether `e` is a directory (following links). One whose type cannot be read is not, and the
// note says so on stderr, once per path: merge and report walk a tree more than once, report's
// inputs on several threads (a link to nothing is just not a directory, without a note).
inline bool is_directory_entry(const std::filesystem::directory_entry& e) {
  std::error_code ec;
  const bool dir = e.is_directory(ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    static std::mutex mutex;
    static std::set<std::string> noted;
    std::lock_guard lock(mutex);
    if (noted.insert(e.path().string()).second)
      fmt::print(stderr, "opmeter: note: skipping {}: {}\n", e.path().string(), ec.message());
  }
  return dir && !ec;
}

}  // namespace opmeter
