// Each test process works in a private temporary folder of its own: tests name their files
// under fs::temp_directory_path() (opmeter_cli_NAME, ...), so two runs at once (a clean-clone CI
// beside a developer's tests) shared them and failed each other's; and a fixed name in /tmp is
// one another user can plant a link at. TMPDIR points at a fresh mkdtemp folder (mode 0700) for
// the whole run, the CLIs the tests start included, and the folder goes at the end.
#include <gtest/gtest.h>
#include <unistd.h>

#include <sys/stat.h>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace fs = std::filesystem;

namespace {

class PrivateTemporaryFolder : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* given = std::getenv("TMPDIR");
    std::string pattern = std::string(given && *given ? given : "/tmp") + "/opmeter-tests-XXXXXX";
    if (!::mkdtemp(pattern.data())) return;  // keep the given folder: the tests still run
    if (given) previous_ = given;
    had_previous_ = given != nullptr;
    folder_ = pattern;
    ::setenv("TMPDIR", folder_.c_str(), 1);
  }
  void TearDown() override {
    if (folder_.empty()) return;
    if (had_previous_) ::setenv("TMPDIR", previous_.c_str(), 1);
    else ::unsetenv("TMPDIR");
    std::error_code ec;
    fs::remove_all(folder_, ec);
  }

 private:
  std::string folder_, previous_;
  bool had_previous_ = false;
};

[[maybe_unused]] auto* const kRegistered = ::testing::AddGlobalTestEnvironment(new PrivateTemporaryFolder);

}  // namespace

TEST(PrivateTemporaryFolder, TestsWriteInAFolderOfTheirOwnOnlyTheUserCanEnter) {
  const fs::path tmp = fs::temp_directory_path();
  EXPECT_NE(tmp.filename().string().find("opmeter-tests-"), std::string::npos) << tmp;
  struct stat st {};
  ASSERT_EQ(::stat(tmp.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(st.st_uid, ::getuid());
}
