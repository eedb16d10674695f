#pragma once
// Writing the files a run leaves behind: whole or not at all, and JSON that never throws.
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

namespace opmeter {

// Writes a temporary file beside `path` (a fresh name: never a file or link already there), syncs
// it and renames it over `path`: readers see the old file or the new one, never half of one, and a
// link at `path` is replaced, not followed. A path under /dev or /proc (/dev/null, /dev/stdout,
// /proc/self/fd/N) or a character device or pipe is written into, not replaced; a directory or
// other special file is an error.
// OutputError (naming the path and why) on failure.
void write_atomically(const std::string& path, const std::string& content);
// Whether `path` is written into rather than replaced: under /dev or /proc (/dev/null, /dev/stdout,
// a link to the process's descriptor whatever it was redirected to, /proc/self/fd/N), or a
// character device or named pipe.
bool is_stream(const std::string& path);
// Writes all of `bytes` at `data` to `fd` (again after EINTR and short writes) and, when `sync`,
// fdatasyncs it: 0, or the errno of what failed (ENOSPC for a write of nothing).
int write_all(int fd, const void* data, std::size_t bytes, bool sync);
// JSON text that never throws on strings that are not UTF-8 (they show U+FFFD).
std::string dump_json(const nlohmann::json& j, int indent = -1);

}  // namespace opmeter
