// The journal under a failing disk, and the lock that keeps one run per results directory.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

#include "opmeter/errors.hpp"
#include "report/journal.hpp"
#include "report/reporters.hpp"
#include "results/run_dir.hpp"

using namespace opmeter;
namespace fs = std::filesystem;

namespace {
std::string read_all(const fs::path& p) {
  std::ifstream f(p);
  return {std::istreambuf_iterator<char>(f), {}};
}

mode_t umask_now() {
  const mode_t m = ::umask(022);
  ::umask(m);
  return m;
}

fs::path fresh(const std::string& name) {
  auto d = fs::temp_directory_path() / ("opmeter_journal_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}
std::string line_of(const std::string& c) { return "{\"case\": \"" + c + "\"}"; }
}  // namespace

// Issue 11: on a full disk the journal kept a torn line. A disk that fills in the middle of a
// line (the writer takes part of it, then ENOSPC) must leave only whole lines.
TEST(Journal, AWriteThatFailsHalfWayLeavesNoTornLine) {
  auto path = (fresh("torn") / "results.jsonl").string();
  int calls = 0;
  Journal journal(path, [&](int fd, const void* data, std::size_t size) -> ssize_t {
    if (++calls == 1) return ::write(fd, data, size);  // the first line fits
    if (calls == 2) return ::write(fd, data, size / 2);  // the disk fills half way through the second
    errno = ENOSPC;
    return -1;
  });
  journal.append(line_of("a"));
  try {
    journal.append(line_of("b"));
    FAIL() << "a failed write must throw";
  } catch (const OutputError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos) << e.what();
  }
  std::ifstream f(path);
  std::string all((std::istreambuf_iterator<char>(f)), {});
  EXPECT_EQ(all, line_of("a") + "\n");
}

TEST(Journal, WriteAtomicallyFailsCleanlyOnAFullDevice) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  // /dev/full takes opens and refuses every write with ENOSPC; the rename never happens.
  EXPECT_THROW(Journal("/dev/full").append("x"), OutputError);
  auto dir = fresh("atomic");
  EXPECT_THROW(write_atomically((dir / "no" / "such" / "file").string(), "x"), OutputError);
  EXPECT_TRUE(fs::is_empty(dir));
}

// Output files never write through a link (one planted at the old temporary name, or at the
// path itself, which is replaced), never replace a device (-o /dev/null writes into it), refuse a
// directory, leave no temporary file behind and get a new file's usual mode.
TEST(Journal, WriteAtomicallyNeverFollowsLinksOrReplacesDevices) {
  auto dir = fresh("links");
  const fs::path victim = dir / "victim", out = dir / "out.json";
  std::ofstream(victim) << "PRECIOUS";
  fs::create_symlink(victim, dir / "out.json.tmp");
  write_atomically(out.string(), "new");
  EXPECT_EQ(read_all(victim), "PRECIOUS");
  EXPECT_EQ(read_all(out), "new");
  fs::remove(out);
  fs::create_symlink(victim, out);
  write_atomically(out.string(), "again");
  EXPECT_FALSE(fs::is_symlink(out));
  EXPECT_EQ(read_all(out), "again");
  EXPECT_EQ(read_all(victim), "PRECIOUS");
  EXPECT_EQ(fs::status(out).permissions() & fs::perms::all,
            fs::perms::all & ~fs::perms::owner_exec & ~fs::perms::group_exec & ~fs::perms::others_exec &
                static_cast<fs::perms>(~static_cast<unsigned>(umask_now()) & 0777));
  std::size_t entries = 0;
  for ([[maybe_unused]] auto& e : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 3u);  // victim, out.json, the planted link: no temporary file left
  if (fs::exists("/dev/null")) {
    write_atomically("/dev/null", "discarded");
    EXPECT_TRUE(fs::is_character_file("/dev/null"));
  }
  try {
    write_atomically(dir.string(), "x");
    ADD_FAILURE() << "a directory was written";
  } catch (const OutputError& e) {
    EXPECT_NE(std::string(e.what()).find("is not a regular file"), std::string::npos) << e.what();
  }
  // The journal and the lock do not open through a link either.
  fs::create_symlink(victim, dir / "results.jsonl");
  EXPECT_THROW(Journal((dir / "results.jsonl").string()), OutputError);
  EXPECT_EQ(read_all(victim), "PRECIOUS");
  fs::create_directories(dir / "res");
  fs::create_symlink(victim, dir / "res" / kLockFile);
  EXPECT_ANY_THROW(RunDirectory((dir / "res").string(), true));
  EXPECT_EQ(read_all(victim), "PRECIOUS");
}

TEST(RunDirectory, OneRunAtATimeAndNoMixingWithOldResults) {
  auto dir = fresh("lock") / "res";
  {
    RunDirectory first(dir.string(), false);
    // The lock is per open file: a second holder in this process is refused as another process is.
    try {
      RunDirectory second(dir.string(), true);
      FAIL() << "a held directory must be refused";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("in use by another opmeter run"), std::string::npos) << e.what();
    }
    std::ofstream(first.file("results.jsonl")) << line_of("a") << "\n";
  }
  // Released: resuming is fine, a new run into the same directory is not.
  EXPECT_NO_THROW(RunDirectory(dir.string(), true));
  try {
    RunDirectory again(dir.string(), false);
    FAIL() << "a directory holding results must be refused to a new run";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("not empty (results.jsonl)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--resume"), std::string::npos) << e.what();
  }
}
