// The applications' breakdown figure marks what the table flags: a workload predicted beyond the
// model's training range, or using a unit the model has no term for, gets a dagger and the figure
// a footnote (application rows beyond training marked in tables and figures).
#include "report/apps_report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "test_support.h"

namespace wattcal {
namespace {

TEST(AppsReportMarks, FlaggedWorkloadsAreMarkedInTheBreakdown) {
  const std::string dir = testing::ScratchDir();
  const std::string header =
      "workload,predicted_w,predicted_w_lo,predicted_w_hi,uncapped_w,capped,f_core_mhz,"
      "duration_s,energy_j,energy_j_lo,energy_j_hi,flags,measured_w,error_pct,measured_energy_j,"
      "energy_error_pct,steps,energy_per_step_j,kernel_time_s,measured_f_core_mhz,measured_flags,"
      "windows\n";
  const std::string predictions = testing::WriteFile(
      dir + "/apps_predictions.csv",
      header +
          "plain,500,450,550,500,0,1980,0.1,50,45,55,,510,-1.96,,,,,0.001,,,1\n"
          "reduction,560,,,560,0,1980,0.1,56,,,util_beyond_training:DRAM READ,520,7.7,,,,,0.001,,,"
          "1\n"
          "dgemm,590,500,680,590,0,1980,0.1,59,50,68,no_model_term:DMMA,690,-14.5,,,,,0.001,,,1\n");
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
      dir + "/clean.csv",
      header + "plain,500,450,550,500,0,1980,0.1,50,45,55,,510,-1.96,,,,,0.001,,,1\n");
  const std::string clean_breakdown = testing::WriteFile(
      dir + "/clean_breakdown.csv",
      "workload,predicted_w,uncapped_w,static_core_w,fp32_w\nplain,500,500,100,400\n");
  const ReportApps none = ReadReportApps(clean, clean_breakdown);
  EXPECT_EQ(none.chart.bars[0].label, "plain");
  EXPECT_TRUE(none.chart.note.empty());
}

// The table gives the energy of each run as it ran beside its power, and the summary the energy
// MAPE beside the power MAPE.
TEST(AppsReportMarks, TheTableAndSummaryGiveTheEnergy) {
  const std::string dir = testing::ScratchDir();
  const std::string predictions = testing::WriteFile(
      dir + "/apps.csv",
      "workload,predicted_w,uncapped_w,capped,f_core_mhz,duration_s,energy_j,flags,measured_w,"
      "error_pct,measured_energy_j,energy_error_pct,steps,energy_per_step_j,kernel_time_s,"
      "measured_flags,windows\n"
      "gemm_fp16,700,913,1,1308,2.3,1610,capped,695,0.72,1600,0.61,1379,1.1675,0.0029,power_cap,1\n"
      "copy,400,400,0,1980,2,800,,420,-4.76,880,-9.09,,,0.001,,1\n");
  const ReportApps apps = ReadReportApps(predictions, "");
  EXPECT_EQ(apps.energy_measured(), 2);
  EXPECT_NEAR(apps.energy_mape_pct(), (0.61 + 9.09) / 2.0, 1e-9);
  const std::string sentence = AppsMeasuredSentence(apps);
  EXPECT_NE(sentence.find("MAPE 2.74%"), std::string::npos) << sentence;
  EXPECT_NE(sentence.find("energy MAPE 4.85% over 2"), std::string::npos) << sentence;
  const AppsTable table = AppsTableOf(apps);
  ASSERT_EQ(table.rows.size(), 2u);
  ASSERT_EQ(table.header.size(), table.rows[0].size());
  std::map<std::string, std::string> gemm;
  for (size_t i = 0; i < table.header.size(); ++i) gemm[table.header[i]] = table.rows[0][i];
  EXPECT_EQ(gemm["duration_s"], "2.300");
  EXPECT_EQ(gemm["energy_j"], "1610.0");
  EXPECT_EQ(gemm["measured_energy_j"], "1600.0");
  EXPECT_EQ(gemm["energy_error_pct"], "0.6");
  EXPECT_EQ(gemm["steps"], "1379");
  EXPECT_EQ(gemm["energy_per_step_j"], "1.1675");
  EXPECT_EQ(gemm["kernel_time_ms"], "2.90");
  std::map<std::string, std::string> copy;
  for (size_t i = 0; i < table.header.size(); ++i) copy[table.header[i]] = table.rows[1][i];
  EXPECT_EQ(copy["steps"], "–");  // copy reported no steps
  EXPECT_EQ(copy["energy_per_step_j"], "–");
  // A table of an older predict (no kernel_time_s): its duration and energy were the profiled
  // kernels', and are not shown as the run's.
  const std::string old = testing::WriteFile(
      dir + "/old.csv",
      "workload,predicted_w,uncapped_w,capped,duration_s,energy_j,flags,measured_w,error_pct,"
      "measured_flags,f_core_mhz,windows\n"
      "gemm_fp16,700,913,1,0.0029,2.02,capped,695,0.72,,1980,1\n");
  const AppsTable old_table = AppsTableOf(ReadReportApps(old, ""));
  EXPECT_EQ(std::count(old_table.header.begin(), old_table.header.end(), "energy_j"), 0);
}

}  // namespace
}  // namespace wattcal
