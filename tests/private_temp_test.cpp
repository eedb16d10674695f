// Temporary files (src/util/private_temp.hpp, issue 27 item 1): a directory only this user can
// enter, files created new and never through a link planted where they go.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <stdexcept>

#include "tests/cli_helpers.hpp"
#include "util/private_temp.hpp"

using namespace opmeter;

namespace {

void expect_private_dir(const fs::path& dir) {
  struct stat st {};
  ASSERT_EQ(lstat(dir.c_str(), &st), 0) << dir;
  EXPECT_TRUE(S_ISDIR(st.st_mode)) << dir;
  EXPECT_EQ(st.st_mode & 0777, 0700u) << dir;
  EXPECT_EQ(st.st_uid, geteuid()) << dir;
}

}  // namespace

TEST(PrivateTemp, DirectoriesAreThisUsersAloneAndFresh) {
  const fs::path& dir = private_temp_dir();
  expect_private_dir(dir);
  EXPECT_EQ(&dir, &private_temp_dir());  // one per process
  auto a = make_private_subdir("t-"), b = make_private_subdir("t-");
  expect_private_dir(a);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.parent_path(), dir);
  fs::remove_all(a);
  fs::remove_all(b);
}

TEST(PrivateTemp, AFileIsCreatedNewNeverThroughALinkNorOverAnotherFile) {
  auto outside = temp_dir("private_temp_victim");
  auto victim = write(outside, "victim", "untouched");
  auto dir = make_private_subdir("links-");
  fs::create_symlink(victim, dir / "in0");
  EXPECT_THROW(write_new_file(dir / "in0", "x", 1), std::runtime_error);
  EXPECT_EQ(slurp(victim), "untouched");

  write_new_file(dir / "fresh", "abc", 3);
  EXPECT_EQ(slurp(dir / "fresh"), "abc");
  struct stat st {};
  ASSERT_EQ(stat((dir / "fresh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_THROW(write_new_file(dir / "fresh", "xyz", 3), std::runtime_error);  // exists: not replaced
  EXPECT_EQ(slurp(dir / "fresh"), "abc");
  fs::remove_all(dir);
}

TEST(PrivateTemp, StaleDirectoriesAreRemovedOnlyWhenTheirProcessIsGoneAndTheyAreOurs) {
  auto base = temp_dir("private_temp_stale");
  auto gone = base / "opmeter-999999999-aaaaaa";  // a pid above the kernel's maximum
  auto alive = base / ("opmeter-" + std::to_string(getpid()) + "-bbbbbb");
  auto other = base / "unrelated-999999999-cccccc";
  for (auto& d : {gone, alive, other}) fs::create_directories(d);
  auto target = base / "target";
  fs::create_directories(target);
  write(target, "keep", "x");
  fs::create_directory_symlink(target, base / "opmeter-999999998-link");  // a link is never followed
  EXPECT_EQ(remove_stale_private_dirs(base), 1u);
  EXPECT_FALSE(fs::exists(gone));
  EXPECT_TRUE(fs::exists(alive));
  EXPECT_TRUE(fs::exists(other));
  EXPECT_TRUE(fs::exists(target / "keep"));
}
