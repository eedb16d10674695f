// The untimed profiling pass (engine/profile_pass.hpp): the worker's PyTorch profiler trace and
// peak memory through `run --profile --memory-profile`, files written only into the run's
// private profiles/ folder and never through a link, case names made safe as file names, and a
// pass that cannot write leaving the case's result as it was.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/profile_pass.hpp"
#include "engine/profile_request.hpp"
#include "opmeter/errors.hpp"
#include "results/result_set.hpp"
#include "tests/cli_helpers.hpp"
#include "util/artifact_file.hpp"
#include "util/file_safe_name.hpp"

using namespace opmeter;

namespace {
const std::string kPython = OPMETER_TEST_PYTHON;

bool has_torch() {
  static const bool yes = std::system((kPython + " -c 'import torch' 2>/dev/null").c_str()) == 0;
  return yes;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

unsigned mode_of(const fs::path& p) {
  struct stat st{};
  lstat(p.c_str(), &st);
  return st.st_mode & 0777;
}

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// An impl whose profile pass says it ran: what profile_pass passes it and records.
class StubImpl : public Impl, public ProfiledImpl {
 public:
  void setup(const Case&, const SetupOptions&) override {}
  void run(std::size_t) override {}
  Check verify(std::uint64_t) override { return {}; }
  std::map<std::string, std::string> profile(const ProfileRequest& r) override {
    seen = r;
    return {{"stub_profile", r.stem}};
  }
  std::optional<ProfileRequest> seen;
};
}  // namespace

TEST(ProfileFiles, CaseNamesBecomeSafeDistinctFileNames) {
  EXPECT_EQ(file_safe_name("linear/torch/bf16/batch=1,seq=4/device=cuda:0"), "linear_torch_bf16_batch=1_seq=4_device=cuda_0");
  EXPECT_EQ(file_safe_name("../x"), "_.._x");  // no folder part, never hidden
  EXPECT_EQ(file_safe_name(""), "_");
  const std::string long_a(400, 'a'), long_b = std::string(399, 'a') + "b";
  EXPECT_LE(file_safe_name(long_a).size(), 160u);
  EXPECT_NE(file_safe_name(long_a), file_safe_name(long_b));
}

TEST(ProfileFiles, WrittenPrivateAndNeverThroughALink) {
  auto dir = temp_dir("profile_files");
  auto folder = dir / "profiles";
  make_private_folder(folder.string());
  make_private_folder(folder.string());  // already there: fine
  EXPECT_EQ(mode_of(folder), 0700u);
  write_private_file(folder.string(), "a.trace.json", "{}");
  EXPECT_EQ(read(folder / "a.trace.json"), "{}");
  EXPECT_EQ(mode_of(folder / "a.trace.json"), 0600u);
  // A link planted at the file's name is replaced, the file it points to left alone.
  write(dir, "victim", "keep");
  fs::create_symlink(dir / "victim", folder / "b.trace.json");
  write_private_file(folder.string(), "b.trace.json", "new");
  EXPECT_EQ(read(dir / "victim"), "keep");
  EXPECT_FALSE(fs::is_symlink(folder / "b.trace.json"));
  EXPECT_EQ(read(folder / "b.trace.json"), "new");
  // A link (or a file) where the folder should be is refused.
  fs::create_directories(dir / "elsewhere");
  fs::create_symlink(dir / "elsewhere", dir / "linked");
  EXPECT_THROW(make_private_folder((dir / "linked").string()), OutputError);
  EXPECT_THROW(write_private_file((dir / "linked").string(), "c", "x"), OutputError);
  EXPECT_TRUE(fs::is_empty(dir / "elsewhere"));
  EXPECT_THROW(make_private_folder((dir / "victim").string()), OutputError);
  EXPECT_THROW(write_private_file(folder.string(), "../escape", "x"), OutputError);
}

// What is already at the folder's path passes the private temporary directories' check or is
// refused with the cause: a link, a folder others can read (0755), a file; nothing is changed.
TEST(ProfileFiles, AnExistingFolderThatIsNotPrivateIsRefusedSayingWhy) {
  auto dir = temp_dir("profile_folder");
  auto message_of = [](const fs::path& p) {
    try {
      make_private_folder(p.string());
    } catch (const OutputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  fs::create_directories(dir / "private");
  fs::permissions(dir / "private", fs::perms::owner_all, fs::perm_options::replace);
  EXPECT_EQ(message_of(dir / "private"), "no error");

  fs::create_directories(dir / "open");
  fs::permissions(dir / "open", static_cast<fs::perms>(0755), fs::perm_options::replace);
  const std::string open = message_of(dir / "open");
  EXPECT_TRUE(has(open, (dir / "open").string())) << open;
  EXPECT_TRUE(has(open, "its mode is 755, not 700")) << open;
  EXPECT_EQ(mode_of(dir / "open"), 0755u);  // refused, not changed

  fs::create_symlink(dir / "private", dir / "linked");  // a link to a private folder is still a link
  const std::string linked = message_of(dir / "linked");
  EXPECT_TRUE(has(linked, (dir / "linked").string())) << linked;
  EXPECT_TRUE(has(linked, "it is a link")) << linked;

  std::ofstream(dir / "file") << "x";
  EXPECT_TRUE(has(message_of(dir / "file"), "it is not a directory")) << message_of(dir / "file");

  if (geteuid() == 0) {  // only root can give a folder to another user: the other user's 0700 folder is refused
    fs::create_directories(dir / "theirs");
    fs::permissions(dir / "theirs", fs::perms::owner_all, fs::perm_options::replace);
    ASSERT_EQ(chown((dir / "theirs").c_str(), 65534, 65534), 0);
    EXPECT_TRUE(has(message_of(dir / "theirs"), "owned by user 65534")) << message_of(dir / "theirs");
  }
}

TEST(ProfilePass, AskedForItRunsAfterTheChecksAndAFailureIsADetailOnly) {
  auto dir = temp_dir("profile_pass");
  RunOptions options;
  Result r;
  r.case_string = "gemm/stub/fp32/M=1/threads=1";
  StubImpl impl;
  profile_pass(r, impl, options);  // neither --profile nor --memory-profile: nothing
  EXPECT_FALSE(impl.seen);
  options.memory_profile = true;
  options.profile_dir = (dir / "profiles").string();
  profile_pass(r, impl, options);
  ASSERT_TRUE(impl.seen);
  EXPECT_TRUE(impl.seen->memory);
  EXPECT_FALSE(impl.seen->trace);
  EXPECT_EQ(impl.seen->stem, "gemm_stub_fp32_M=1_threads=1");
  EXPECT_EQ(r.details["stub_profile"], impl.seen->stem);
  EXPECT_TRUE(fs::is_directory(dir / "profiles"));
  // The profiles folder is a link: not written, said in the details, the result otherwise kept.
  fs::create_directories(dir / "elsewhere");
  fs::create_symlink(dir / "elsewhere", dir / "linked");
  options.profile_dir = (dir / "linked").string();
  StubImpl second;
  profile_pass(r, second, options);
  EXPECT_FALSE(second.seen);
  EXPECT_TRUE(has(r.details["profile"], "not taken")) << r.details["profile"];
  EXPECT_TRUE(has(r.details["profile"], "link")) << r.details["profile"];
}

TEST(WorkerProfile, ProfileWritesATraceAndMemoryPerCaseUntimed) {
  if (!has_torch()) GTEST_SKIP() << kPython << " has no PyTorch";
  setenv("OPMETER_PYTHON", kPython.c_str(), 1);
  auto dir = temp_dir("worker_profile");
  const std::string train = "linear/torch/fp32/batch=1,seq=4,hidden=16,out=8,act=gelu,mode=train/threads=1";
  auto out = cli("run --case '" + train + "' --profile --memory-profile --no-report --out " + (dir / "res").string());
  unsetenv("OPMETER_PYTHON");
  ASSERT_EQ(out.code, 0) << out.text;
  auto results = read_jsonl((dir / "res" / "results.jsonl").string());
  ASSERT_EQ(results.size(), 1u);
  auto& r = results[0];
  ASSERT_EQ(r.status, Status::ok) << r.reason;
  EXPECT_GE(r.samples.size(), 2u);  // measured as usual; the capture range's sample is not among them
  EXPECT_TRUE(has(r.details["profiled"], "not in the results")) << r.details["profiled"];
  const fs::path trace = dir / "res" / "profiles" / (file_safe_name(r.case_string) + ".trace.json");
  EXPECT_EQ(r.details["profiler_trace"], trace.string());
  ASSERT_TRUE(fs::is_regular_file(trace)) << out.text;
  EXPECT_EQ(mode_of(trace), 0600u);
  EXPECT_EQ(mode_of(trace.parent_path()), 0700u);
  auto j = nlohmann::json::parse(read(trace));
  const auto& events = j.is_object() ? j["traceEvents"] : j;
  bool call = false, mm = false;
  for (auto& e : events) {
    auto name = e.value("name", "");
    call = call || name == "opmeter call 0";
    mm = mm || (has(name, "aten::") && has(name, "mm"));
  }
  EXPECT_TRUE(call && mm) << "trace without the calls' events";
  // CPU: the case's tensors plus what the calls allocated, at least its inputs (x, W, b, dy).
  ASSERT_TRUE(r.peak_memory_bytes.has_value());
  EXPECT_GE(*r.peak_memory_bytes, 4u * (4 * 16 + 8 * 16 + 8 + 4 * 8));
  EXPECT_TRUE(has(r.details["peak_memory"], "CPU:")) << r.details["peak_memory"];
  EXPECT_FALSE(r.details.count("memory_snapshot"));  // a CUDA snapshot only
}
