// The applications' breakdown figure marks what the table flags: a workload predicted beyond the
// model's training range, or using a unit the model has no term for, gets a dagger and the figure
// a footnote (issue 24: application rows beyond training marked in tables and figures).
#include "report/apps_report.h"

#include <gtest/gtest.h>

#include <string>

#include "test_support.h"

namespace wattcal {
namespace {

TEST(AppsReportMarks, FlaggedWorkloadsAreMarkedInTheBreakdown) {
  const std::string dir = testing::ScratchDir();
  const std::string header =
      "workload,predicted_w,predicted_w_lo,predicted_w_hi,uncapped_w,capped,f_core_mhz,"
      "duration_s,energy_j,energy_j_lo,energy_j_hi,flags,measured_w,error_pct,measured_flags,"
      "windows\n";
  const std::string predictions = testing::WriteFile(
      dir + "/apps_predictions.csv",
      header +
          "plain,500,450,550,500,0,1980,0.1,50,45,55,,510,-1.96,,1\n"
          "reduction,560,,,560,0,1980,0.1,56,,,util_beyond_training:DRAM READ,520,7.7,,1\n"
          "dgemm,590,500,680,590,0,1980,0.1,59,50,68,no_model_term:DMMA,690,-14.5,,1\n");
  const std::string breakdown =
      testing::WriteFile(dir + "/apps_breakdown.csv",
                         "workload,predicted_w,uncapped_w,static_core_w,fp32_w\n"
                         "plain,500,500,100,400\n"
                         "reduction,560,560,100,460\n"
                         "dgemm,590,590,100,490\n");
  const ReportApps apps = ReadReportApps(predictions, breakdown);
  ASSERT_EQ(apps.chart.bars.size(), 3u);
  EXPECT_EQ(apps.chart.bars[0].label, "plain");
  EXPECT_EQ(apps.chart.bars[1].label, "reduction †");
  EXPECT_EQ(apps.chart.bars[2].label, "dgemm †");
  EXPECT_NE(apps.chart.note.find("beyond the model's"), std::string::npos);
  // Nothing flagged: no mark, no footnote.
  const std::string clean = testing::WriteFile(
      dir + "/clean.csv", header + "plain,500,450,550,500,0,1980,0.1,50,45,55,,510,-1.96,,1\n");
  const std::string clean_breakdown = testing::WriteFile(
      dir + "/clean_breakdown.csv",
      "workload,predicted_w,uncapped_w,static_core_w,fp32_w\nplain,500,500,100,400\n");
  const ReportApps none = ReadReportApps(clean, clean_breakdown);
  EXPECT_EQ(none.chart.bars[0].label, "plain");
  EXPECT_TRUE(none.chart.note.empty());
}

}  // namespace
}  // namespace wattcal
