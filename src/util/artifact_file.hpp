#pragma once
// Files a run leaves beside its results that only this user reads (profiler traces, memory
// snapshots): in a folder of the run's made mode 0700, never written through a link, whatever
// was planted there.
#include <string>

namespace opmeter {

// Makes `dir` (mode 0700) unless it is there; OutputError naming the cause when what is there then
// is not a private directory of this user (why_not_private: a link, not a folder, another
// user's, a mode other than 0700).
void make_private_folder(const std::string& dir);

// Writes `content` to `dir`/`name` (`name` a plain file name) with mode 0600: a new temporary
// beside it, renamed over it, both opened relative to `dir` without following links. OutputError
// naming the path on failure.
void write_private_file(const std::string& dir, const std::string& name, const std::string& content);

}  // namespace opmeter
