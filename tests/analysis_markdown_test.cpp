// The fusion, quantization and training tables in report.md take text from results files (impl
// names, shapes, recipes): like the main cases table, a cell stays one cell on one line and
// passes no HTML to markdown renderers that render it.
#include <gtest/gtest.h>

#include "analysis/fusion.hpp"
#include "analysis/quantization.hpp"
#include "analysis/training.hpp"

using namespace opmeter;

namespace {
const std::string kHostile = "x<img src=y onerror=alert(1)>\n| z";

// Each table row of `md` (lines starting with '|') has `cells` cells, and no raw tag is left.
void expect_table_intact(const std::string& md, std::size_t cells) {
  EXPECT_EQ(md.find("<img"), std::string::npos) << md;
  EXPECT_NE(md.find("x&lt;img src=y onerror=alert(1)&gt; / z"), std::string::npos) << md;
  std::size_t start = 0, rows = 0;
  while (start < md.size()) {
    auto end = md.find('\n', start);
    if (end == std::string::npos) end = md.size();
    const std::string line = md.substr(start, end - start);
    if (!line.empty() && line[0] == '|') {
      ++rows;
      EXPECT_EQ(std::count(line.begin(), line.end(), '|'), static_cast<long>(cells + 1)) << line;
    }
    start = end + 1;
  }
  EXPECT_GE(rows, 3u) << md;  // header, rule and the row
}
}  // namespace

TEST(AnalysisMarkdown, FusionCellsEscapeHtmlAndLineBreaks) {
  FusionRow r;
  r.pattern = kHostile;
  r.shape = "batch=1";
  r.dtype = "fp32";
  r.fused_impl = kHostile;
  r.unfused_s = 2e-3;
  r.fused_s = 1e-3;
  r.speedup = 2;
  r.verdict = "fuse";
  expect_table_intact(fusion_markdown({r}, {}), 14);
}

TEST(AnalysisMarkdown, QuantizationCellsEscapeHtmlAndLineBreaks) {
  QuantRow q;
  q.op = "linear";
  q.shape = "M=1";
  q.dtype = "bf16";
  q.mode = "inference";
  q.where = "cpu x2";
  q.recipe = "int8wo";
  q.impl = kHostile;
  q.baseline_impl = kHostile;
  q.time_s = 1e-3;
  expect_table_intact(quant_markdown({q}), 13);
}

TEST(AnalysisMarkdown, TrainingCellsEscapeHtmlAndLineBreaks) {
  TrainingRow t;
  t.op = "linear";
  t.shape = kHostile;
  t.dtype = "bf16";
  t.where = "cpu x2";
  t.impl = kHostile;
  t.total_s = 1e-3;
  t.baseline_impl = "onednn_train";
  expect_table_intact(training_markdown({t}), 12);
}
