// The OpenBLAS fallback note: said when OpenBLAS's kernel family has a narrower vector ISA than
// the CPU (Debian's 0.3.21 picks Prescott on Emerald Rapids), silent when it fits.
#include <gtest/gtest.h>

#include <cblas.h>

#include "context/openblas_core.hpp"
#include "opmeter/context.hpp"
#include "tests/cli_helpers.hpp"

using namespace opmeter;

namespace {
const std::vector<std::string> kAvx512 = {"sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw"};
const std::vector<std::string> kAvx2 = {"sse4_2", "avx", "avx2", "fma"};
const std::vector<std::string> kSse = {"sse4_2"};
}  // namespace

TEST(OpenblasCore, LevelsOfCoresAndCpus) {
  EXPECT_EQ(openblas_core_level("Prescott"), 1);
  EXPECT_EQ(openblas_core_level("Sandybridge"), 2);
  EXPECT_EQ(openblas_core_level("Haswell"), 3);
  EXPECT_EQ(openblas_core_level("Zen"), 3);
  EXPECT_EQ(openblas_core_level("SkylakeX"), 4);
  EXPECT_EQ(openblas_core_level("SapphireRapids"), 4);
  EXPECT_EQ(openblas_core_level("armv8"), 0);  // not an x86 family it knows
  EXPECT_EQ(cpu_vector_level(kAvx512), 4);
  EXPECT_EQ(cpu_vector_level(kAvx2), 3);
  EXPECT_EQ(cpu_vector_level({"avx2"}), 1);  // without FMA and AVX: none of AVX2's kernels run
  EXPECT_EQ(cpu_vector_level(kSse), 1);
}

TEST(OpenblasCore, PrescottOnAnAvx512CpuIsAFallbackThatNamesTheCoretype) {
  auto note = openblas_fallback_note("Prescott", kAvx512);
  EXPECT_NE(note.find("Prescott kernels (SSE)"), std::string::npos) << note;
  EXPECT_NE(note.find("this AVX-512 CPU"), std::string::npos) << note;
  EXPECT_NE(note.find("OPENBLAS_CORETYPE=SkylakeX"), std::string::npos) << note;
  note = openblas_fallback_note("Sandybridge", kAvx2);
  EXPECT_NE(note.find("OPENBLAS_CORETYPE=Haswell"), std::string::npos) << note;
  note = openblas_fallback_note("Haswell", kAvx512);  // AVX2 kernels on an AVX-512 CPU (Zen 4 in 0.3.21)
  EXPECT_NE(note.find("OPENBLAS_CORETYPE=SkylakeX"), std::string::npos) << note;
}

TEST(OpenblasCore, AFittingOrUnknownCoreSaysNothing) {
  EXPECT_EQ(openblas_fallback_note("SkylakeX", kAvx512), "");
  EXPECT_EQ(openblas_fallback_note("Haswell", kAvx2), "");
  EXPECT_EQ(openblas_fallback_note("Prescott", kSse), "");
  EXPECT_EQ(openblas_fallback_note("armv8", kAvx512), "");
}

TEST(OpenblasCore, ARunWithOpenblasRowsSaysSoWhenThisMachineFallsBack) {
  // Whether this machine falls back is its own (Prescott on the 2-vCPU Emerald Rapids here): the
  // run says the note exactly when the independent rule above gives one.
  const auto expected = openblas_fallback_note(openblas_get_corename(), cpu_info().flags);
  auto dir = temp_dir("openblas_note");
  auto out = cli("run --case gemm/openblas/fp32/M=16,N=16,K=16/threads=1 --samples 3 --no-report --out " +
                 (dir / "run").string());
  ASSERT_EQ(out.code, 0) << out.text;
  if (expected.empty()) EXPECT_EQ(out.text.find("OpenBLAS runs its"), std::string::npos) << out.text;
  else EXPECT_NE(out.text.find("opmeter: note: " + expected), std::string::npos) << out.text;
  out = cli("run --case gemm/onednn/fp32/M=16,N=16,K=16/threads=1 --samples 3 --no-report --out " +
            (dir / "other").string());
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_EQ(out.text.find("OpenBLAS runs its"), std::string::npos) << out.text;  // no openblas rows, no note
}
