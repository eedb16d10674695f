#pragma once
// Temporary files no other user can read, replace or redirect: one directory per opmeter
// process, made by mkdtemp (mode 0700, checked to be ours and not a link), removed at exit; files
// in it are created new (O_EXCL | O_NOFOLLOW), never opened through what was there before.
// A predictable name in a shared folder (/dev/shm/opmeter-worker-<pid>-<n>) let another user
// pre-create it with links to files of theirs or ours.
#include <cstddef>
#include <filesystem>
#include <string>

namespace opmeter {

// Why `dir` is not a private directory of this user ("it is a link", "its mode is 755, not 700"),
// empty when it is: as lstat sees it, a directory (not a link), owned by this user, mode 0700.
// The one rule for every folder opmeter keeps to itself (these temporary directories, a run's
// profiles folder).
std::string why_not_private(const std::filesystem::path& dir);

// This process's private directory (created on first use, in /dev/shm where writable so that the
// worker reads tensors from RAM, else in the temp folder). Removed when the process exits
// normally; a worker whose opmeter died removes it too (worker/opmeter_worker.py).
const std::filesystem::path& private_temp_dir();

// A fresh directory inside private_temp_dir(), named `prefix` plus random letters.
std::filesystem::path make_private_subdir(const std::string& prefix);

// Creates `path` (which must not exist) with mode 0600 and writes `bytes` of `data` to it.
// Throws std::runtime_error naming the path when it exists, is a link, or cannot be written.
void write_new_file(const std::filesystem::path& path, const void* data, std::size_t bytes);

// Removes stale private directories of opmeter processes that no longer run, in `base`: only
// directories (never links) owned by this user. Returns how many it removed.
std::size_t remove_stale_private_dirs(const std::filesystem::path& base);

// The prefix of private directories: opmeter-<pid>-XXXXXX.
inline constexpr const char* kPrivateDirPrefix = "opmeter-";

}  // namespace opmeter
