// The applications' breakdown figure marks what the table flags: a workload predicted beyond the
// model's training range, or using a unit the model has no term for, gets a dagger and the figure
// a footnote (application rows beyond training marked in tables and figures).
#include "report/apps_report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "test_support.h"
#include "util/errors.h"

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

// The what-if table of a predict run is read by its column names; its rows per setting are drawn
// as one line per application, and the run's energy (predicted with its interval, measured) as
// bars; a table without a setting's rows draws no figure for it.
TEST(AppsReportMarks, TheWhatIfAndTheEnergyAreDrawn) {
  WATTCAL_REQUIRE_GNUPLOT("applications' energy and what-if figures");
  const std::string dir = testing::ScratchDir();
  const std::string what_if_path = testing::WriteFile(
      dir + "/what_if.csv",
      "workload,setting,setting_value,f_core_mhz,measured_f_core_mhz,predicted_w,run_time_s,"
      "energy_j,power_change_pct,time_change_pct,energy_change_pct,time_model,vf_source,flags\n"
      "gemm,as_recorded,,1394,1308,700,2.3,1610,0,0,0,memory_split(m=0.29),curve,capped\n"
      "gemm,power_limit,500,845,,500,3.36,1682,-28.6,46.5,4.6,memory_split(m=0.29),curve,capped\n"
      "gemm,power_limit,600,1119,,600,2.7,1620,-14.3,17.5,0.7,memory_split(m=0.29),curve,capped\n"
      "copy,as_recorded,,1980,1980,400,2,800,0,0,0,memory_split(m=0.9),curve,\n"
      "copy,power_limit,500,1980,,400,2,800,0,0,0,memory_split(m=0.9),curve,\n"
      "copy,power_limit,600,1980,,400,2,800,0,0,0,memory_split(m=0.9),curve,\n");
  const ReportWhatIf what_if = ReadReportWhatIf(what_if_path);
  ASSERT_EQ(what_if.rows.size(), 6u);
  EXPECT_EQ(what_if.vf_source, "curve");
  EXPECT_DOUBLE_EQ(what_if.rows[0].measured_f_core_mhz, 1308.0);
  EXPECT_DOUBLE_EQ(what_if.rows[1].energy_change_pct, 4.6);
  EXPECT_TRUE(WhatIfDrawable(what_if, "power_limit"));
  EXPECT_FALSE(WhatIfDrawable(what_if, "clock"));
  WriteWhatIfPlot(what_if, "power_limit", "what if", dir + "/w.png", dir + "/w.svg");
  testing::ExpectFigurePng(dir + "/w.png");
  // A column missing is an error naming it.
  const std::string bad = testing::WriteFile(dir + "/bad.csv", "workload,setting\ngemm,clock\n");
  try {
    ReadReportWhatIf(bad);
    ADD_FAILURE() << "a what-if table without its columns was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("setting_value"), std::string::npos) << e.what();
  }
  const ReportApps apps = ReadReportApps(
      testing::WriteFile(
          dir + "/apps.csv",
          "workload,predicted_w,predicted_w_lo,predicted_w_hi,uncapped_w,capped,f_core_mhz,"
          "duration_s,energy_j,energy_j_lo,energy_j_hi,flags,measured_w,error_pct,"
          "measured_energy_j,energy_error_pct,steps,energy_per_step_j,kernel_time_s,"
          "measured_f_core_mhz,measured_flags,windows\n"
          "gemm,700,431,700,913,1,1394,2.3,1610,991,1610,capped,695,0.7,1618,-0.5,,,0.003,1308,,1\n"
          "copy,400,350,450,400,0,1980,2,800,700,900,,420,-4.8,880,-9.1,,,0.001,1980,,1\n"),
      "");
  ASSERT_TRUE(AppsEnergyDrawable(apps));
  EXPECT_EQ(apps.with_interval(), 2);
  EXPECT_EQ(apps.inside_interval(), 2);
  WriteAppsEnergyPlot(apps, "energy", dir + "/e.png", dir + "/e.svg");
  testing::ExpectFigurePng(dir + "/e.png");
}

}  // namespace
}  // namespace wattcal
