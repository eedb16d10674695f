// The report's fleet heat-map drawn by headless Chromium (suite Browser: not sanitized, see
// tests/CMakeLists.txt), at the scale of a GPU cluster.
#include <gtest/gtest.h>

#include "report/chart_assets.hpp"
#include "report/report.hpp"
#include "tests/browser_render.hpp"
#include "tests/fleet_fixture.hpp"

using namespace opmeter;

TEST(Browser, FleetHeatmapDrawsEveryCellWithoutConsoleErrors) {
  auto chromium = browser::find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "Chromium is not installed (Debian package chromium)";
  if (chart_libraries().empty()) GTEST_SKIP() << "this build has no chart libraries (-DOPMETER_CHARTS=OFF)";
  // 64 GPUs x 50 cases, nine GPUs 10% slow on every case.
  auto status = browser::render(chromium, html_report({fixtures::big_fleet(64, 50)}), "fleet");
  ASSERT_TRUE(status.value("done", false)) << status.dump(2);
  EXPECT_EQ(status["errors"], nlohmann::json::array()) << status.dump(2);
  EXPECT_EQ(status["warnings"], nlohmann::json::array()) << status.dump(2);
  ASSERT_TRUE(status["charts"].contains("fleet-heatmap-0")) << status.dump(2);
  // One rectangle per cell and one diamond per outlier.
  EXPECT_EQ(status["charts"]["fleet-heatmap-0"].value("marks", 0u), 64u * 50u + 9u * 50u) << status.dump();
}
