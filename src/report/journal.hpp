#pragma once
// The run's journal (results.jsonl): one JSON line per finished case, appended whole or not at all.
#include <sys/types.h>

#include <functional>
#include <string>

namespace opmeter {

class Journal {
 public:
  // How bytes reach the file; tests inject failures (a full disk) here.
  using WriteFn = std::function<ssize_t(int fd, const void* data, std::size_t size)>;
  // Opens `path` for appending (created if missing); OutputError when it cannot.
  explicit Journal(const std::string& path, WriteFn write = {});
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Appends `line` + '\n' and syncs it to disk. When the write fails part way (a full disk), the
  // file is cut back to its previous end, so no torn line breaks --resume, and OutputError says why.
  void append(const std::string& line);

 private:
  std::string path_;
  WriteFn write_;
  int fd_ = -1;
};

}  // namespace opmeter
