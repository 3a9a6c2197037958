// Validation metrics against small hand-computed examples.
#include "validate/metrics.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace wattcal {
namespace {

PredictionRow Row(const std::string& benchmark, double f_core_mhz, double f_mem_mhz,
                  double measured_w, double predicted_w, int fold = -1) {
  PredictionRow row;
  row.benchmark = benchmark;
  row.f_core_mhz = f_core_mhz;
  row.f_mem_mhz = f_mem_mhz;
  row.measured_w = measured_w;
  row.predicted_w = predicted_w;
  row.fold = fold;
  return row;
}

// The worked example used throughout (every error is exact in binary floating point):
//   measured  100  200  100  50   W
//   predicted 110  190   95  52   W
//   error     +10   -5   -5  +4   %      APE 10 5 5 4 %
std::vector<PredictionRow> FourPoints() {
  return {Row("a", 1000, 3505, 100, 110), Row("b", 1000, 3505, 200, 190),
          Row("c", 1000, 3505, 100, 95), Row("d", 1000, 3505, 50, 52)};
}

TEST(MetricsOptions, DefaultsPassCheck) {
  std::string error;
  EXPECT_TRUE(MetricsOptions().Check(&error)) << error;
}

TEST(MetricsOptions, CheckNamesTheFieldAndValue) {
  std::string error;
  MetricsOptions options;
  options.confidence_level = 1.0;
  EXPECT_FALSE(options.Check(&error));
  EXPECT_NE(error.find("MetricsOptions.confidence_level = 1"), std::string::npos) << error;

  options = MetricsOptions();
  options.confidence_level = std::nan("");
  EXPECT_FALSE(options.Check(&error));

  options = MetricsOptions();
  options.within_pct = {5.0, 1.0};
  EXPECT_FALSE(options.Check(&error));
  EXPECT_NE(error.find("MetricsOptions.within_pct[1] = 1"), std::string::npos) << error;

  options.within_pct = {-1.0};
  EXPECT_FALSE(options.Check(&error));
  EXPECT_NE(error.find("MetricsOptions.within_pct[0] = -1"), std::string::npos) << error;

  options.within_pct = {1.0, 1.0000000001};  // same JSON key at 6 significant digits
  EXPECT_FALSE(options.Check(&error));

  options.within_pct = {};
  EXPECT_TRUE(options.Check(&error)) << error;
}

TEST(MetricsErrorMetrics, FourPointsByHand) {
  const ErrorMetrics e = ComputeErrorMetrics(FourPoints());
  EXPECT_EQ(e.points, 4);
  EXPECT_DOUBLE_EQ(e.mape_pct, 6.0);  // (10 + 5 + 5 + 4) / 4
  EXPECT_DOUBLE_EQ(e.max_ape_pct, 10.0);
  EXPECT_DOUBLE_EQ(e.mean_error_pct, 1.0);           // (10 - 5 - 5 + 4) / 4
  EXPECT_DOUBLE_EQ(e.rmse_w, std::sqrt(229.0 / 4));  // (100 + 100 + 25 + 4) / 4 W^2

  // Pearson r: means 112.5 W and 111.75 W; Sxy = 10812.5, Sxx = 11875, Syy = 9976.75.
  EXPECT_NEAR(e.pearson_r, 10812.5 / std::sqrt(11875.0 * 9976.75), 1e-12);

  // 95% CI: sample sd of the APEs = sqrt((16 + 1 + 1 + 4) / 3), standard error sd / sqrt(4),
  // t_{0.975, 3} = 3.182 (every Student t table, e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2;
  // 3.182446305 to ten digits). The tolerance covers the table's three decimals.
  const double standard_error_pct = std::sqrt(22.0 / 3.0) / 2.0;
  const double t_table = 3.182;
  const double tolerance_pct = 0.0005 * standard_error_pct;
  EXPECT_NEAR(e.mape_ci_low_pct, 6.0 - t_table * standard_error_pct, tolerance_pct);
  EXPECT_NEAR(e.mape_ci_high_pct, 6.0 + t_table * standard_error_pct, tolerance_pct);
  EXPECT_NEAR(e.mape_ci_high_pct - e.mape_pct, 3.182446305 * standard_error_pct, 1e-8);
  EXPECT_NEAR(e.mape_pct - e.mape_ci_low_pct, e.mape_ci_high_pct - e.mape_pct, 1e-12);

  // APE <= 1: none; <= 5: 5, 5, 4 (the boundary counts as within); <= 10: all.
  ASSERT_EQ(e.within_frac.size(), 3u);
  EXPECT_DOUBLE_EQ(e.within_frac[0], 0.0);
  EXPECT_DOUBLE_EQ(e.within_frac[1], 0.75);
  EXPECT_DOUBLE_EQ(e.within_frac[2], 1.0);
}

TEST(MetricsErrorMetrics, ConfidenceLevelAndThresholdsFollowTheOptions) {
  MetricsOptions options;
  options.confidence_level = 0.90;
  options.within_pct = {4.0, 4.5};
  const ErrorMetrics e = ComputeErrorMetrics(FourPoints(), options);
  // t_{0.95, 3} = 2.353 (table value; 2.353363435 to ten digits).
  const double standard_error_pct = std::sqrt(22.0 / 3.0) / 2.0;
  EXPECT_NEAR(e.mape_ci_high_pct - e.mape_pct, 2.353 * standard_error_pct,
              0.0005 * standard_error_pct);
  ASSERT_EQ(e.within_frac.size(), 2u);
  EXPECT_DOUBLE_EQ(e.within_frac[0], 0.25);
  EXPECT_DOUBLE_EQ(e.within_frac[1], 0.25);
}

TEST(MetricsErrorMetrics, SinglePointHasDegenerateIntervalAndNoCorrelation) {
  const ErrorMetrics e = ComputeErrorMetrics({Row("a", 1000, 0, 100, 103)});
  EXPECT_EQ(e.points, 1);
  EXPECT_DOUBLE_EQ(e.mape_pct, 3.0);
  EXPECT_DOUBLE_EQ(e.mape_ci_low_pct, 3.0);
  EXPECT_DOUBLE_EQ(e.mape_ci_high_pct, 3.0);
  EXPECT_DOUBLE_EQ(e.rmse_w, 3.0);
  EXPECT_TRUE(std::isnan(e.pearson_r));
}

TEST(MetricsErrorMetrics, ConstantPredictionHasNoCorrelation) {
  const ErrorMetrics e =
      ComputeErrorMetrics({Row("a", 1000, 0, 100, 120), Row("b", 1000, 0, 150, 120)});
  EXPECT_TRUE(std::isnan(e.pearson_r));
  EXPECT_DOUBLE_EQ(e.mape_pct, 20.0);  // (20 + 20) / 2
}

TEST(MetricsErrorMetrics, PerfectPredictionsGiveZeroErrorAndUnitCorrelation) {
  const ErrorMetrics e = ComputeErrorMetrics(
      {Row("a", 1000, 0, 100, 100), Row("b", 1000, 0, 150, 150), Row("c", 1000, 0, 90, 90)});
  EXPECT_DOUBLE_EQ(e.mape_pct, 0.0);
  EXPECT_DOUBLE_EQ(e.mape_ci_low_pct, 0.0);
  EXPECT_DOUBLE_EQ(e.mape_ci_high_pct, 0.0);
  EXPECT_DOUBLE_EQ(e.rmse_w, 0.0);
  EXPECT_DOUBLE_EQ(e.pearson_r, 1.0);
}

TEST(MetricsErrorMetrics, NoPointsGivesNaN) {
  const ErrorMetrics e = ComputeErrorMetrics({});
  EXPECT_EQ(e.points, 0);
  EXPECT_TRUE(std::isnan(e.mape_pct));
  EXPECT_TRUE(std::isnan(e.rmse_w));
  ASSERT_EQ(e.within_frac.size(), 3u);
  EXPECT_TRUE(std::isnan(e.within_frac[0]));
}

TEST(MetricsErrorMetrics, RejectsRowsWithoutPositiveFiniteMeasurement) {
  EXPECT_THROW(ComputeErrorMetrics({Row("a", 1000, 0, 0, 10)}), std::invalid_argument);
  EXPECT_THROW(ComputeErrorMetrics({Row("a", 1000, 0, -5, 10)}), std::invalid_argument);
  EXPECT_THROW(ComputeErrorMetrics({Row("a", 1000, 0, 100, std::nan(""))}), std::invalid_argument);
}

TEST(MetricsValidation, GroupsByBenchmarkInFirstAppearanceOrder) {
  const std::vector<PredictionRow> rows = {
      Row("zeta", 1000, 3505, 100, 110),  // +10%
      Row("alpha", 1000, 3505, 100, 98),  // -2%
      Row("zeta", 800, 3505, 100, 94),    // -6%
      Row("mid", 800, 810, 100, 101),     // +1%
  };
  const ValidationMetrics m = ComputeValidationMetrics(rows);
  EXPECT_EQ(m.overall.points, 4);
  ASSERT_EQ(m.per_benchmark.size(), 3u);
  EXPECT_EQ(m.per_benchmark[0].key, "zeta");
  EXPECT_EQ(m.per_benchmark[1].key, "alpha");
  EXPECT_EQ(m.per_benchmark[2].key, "mid");
  EXPECT_EQ(m.per_benchmark[0].metrics.points, 2);
  EXPECT_DOUBLE_EQ(m.per_benchmark[0].metrics.mape_pct, 8.0);
  EXPECT_DOUBLE_EQ(m.per_benchmark[0].metrics.mean_error_pct, 2.0);
  EXPECT_DOUBLE_EQ(m.per_benchmark[1].metrics.mape_pct, 2.0);
}

TEST(MetricsValidation, GroupsByFrequencyPairSortedByCoreThenMemory) {
  const std::vector<PredictionRow> rows = {
      Row("a", 1000, 3505, 100, 110), Row("a", 800, 3505, 100, 95),    Row("a", 1000, 810, 100, 97),
      Row("b", 1000, 3505, 200, 210), Row("b", 1234.5, 810, 100, 100), Row("b", 800, 810, 100, 99)};
  const ValidationMetrics m = ComputeValidationMetrics(rows);
  ASSERT_EQ(m.per_freq_pair.size(), 5u);
  EXPECT_EQ(m.per_freq_pair[0].key, "800/810");
  EXPECT_EQ(m.per_freq_pair[1].key, "800/3505");
  EXPECT_EQ(m.per_freq_pair[2].key, "1000/810");
  EXPECT_EQ(m.per_freq_pair[3].key, "1000/3505");
  EXPECT_EQ(m.per_freq_pair[4].key, "1234.5/810");
  EXPECT_EQ(m.per_freq_pair[3].metrics.points, 2);
  EXPECT_DOUBLE_EQ(m.per_freq_pair[3].metrics.mape_pct, 7.5);  // (10 + 5) / 2
}

TEST(MetricsValidation, SingleDomainKeysOmitTheMemoryFrequency) {
  EXPECT_EQ(FreqPairKey(705, 0), "705");
  EXPECT_EQ(FreqPairKey(1000, 3505), "1000/3505");
  const ValidationMetrics m =
      ComputeValidationMetrics({Row("a", 875, 0, 100, 101), Row("a", 705, 0, 100, 102)});
  ASSERT_EQ(m.per_freq_pair.size(), 2u);
  EXPECT_EQ(m.per_freq_pair[0].key, "705");
  EXPECT_EQ(m.per_freq_pair[1].key, "875");
}

TEST(MetricsValidation, ApeCdfIsSortedAscending) {
  const ValidationMetrics m = ComputeValidationMetrics(FourPoints());
  EXPECT_EQ(m.ape_cdf_pct, (std::vector<double>{4.0, 5.0, 5.0, 10.0}));
}

TEST(MetricsJson, KeysCarryUnitsAndNonFiniteIsNull) {
  MetricsOptions options;
  options.within_pct = {1.0, 2.5, 10.0};
  std::vector<PredictionRow> rows = FourPoints();
  rows.push_back(Row("e", 800, 0, 100, 103));  // its own benchmark and frequency pair
  const ValidationMetrics m = ComputeValidationMetrics(rows, options);
  const nlohmann::json j = MetricsToJson(m, options);

  EXPECT_DOUBLE_EQ(j.at("confidence_level").get<double>(), 0.95);
  EXPECT_EQ(j.at("points").get<int>(), 5);
  EXPECT_DOUBLE_EQ(j.at("mape_pct").get<double>(), 27.0 / 5.0);
  EXPECT_DOUBLE_EQ(j.at("mape_ci95_low_pct").get<double>(), m.overall.mape_ci_low_pct);
  EXPECT_DOUBLE_EQ(j.at("mape_ci95_high_pct").get<double>(), m.overall.mape_ci_high_pct);
  EXPECT_DOUBLE_EQ(j.at("max_ape_pct").get<double>(), 10.0);
  EXPECT_TRUE(j.contains("mean_error_pct"));
  EXPECT_TRUE(j.contains("rmse_w"));
  EXPECT_TRUE(j.at("pearson_r").is_number());
  EXPECT_DOUBLE_EQ(j.at("within_1_pct_frac").get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(j.at("within_2p5_pct_frac").get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(j.at("within_10_pct_frac").get<double>(), 1.0);

  const nlohmann::json& per_benchmark = j.at("per_benchmark");
  ASSERT_EQ(per_benchmark.size(), 5u);
  EXPECT_EQ(per_benchmark[0].at("benchmark"), "a");
  EXPECT_EQ(per_benchmark[4].at("benchmark"), "e");
  EXPECT_TRUE(per_benchmark[4].at("pearson_r").is_null());  // one point: undefined

  const nlohmann::json& per_freq_pair = j.at("per_freq_pair");
  ASSERT_EQ(per_freq_pair.size(), 2u);
  EXPECT_EQ(per_freq_pair[0].at("key"), "800");
  EXPECT_DOUBLE_EQ(per_freq_pair[0].at("f_core_mhz").get<double>(), 800.0);
  EXPECT_DOUBLE_EQ(per_freq_pair[0].at("f_mem_mhz").get<double>(), 0.0);
  EXPECT_EQ(per_freq_pair[1].at("key"), "1000/3505");
  EXPECT_DOUBLE_EQ(per_freq_pair[1].at("f_mem_mhz").get<double>(), 3505.0);
  EXPECT_EQ(per_freq_pair[1].at("points"), 4);

  // Deterministic text: the same metrics dump to the same bytes.
  EXPECT_EQ(j.dump(2), MetricsToJson(ComputeValidationMetrics(rows, options), options).dump(2));
}

TEST(MetricsJson, ConfidenceLevelNamesTheIntervalKeys) {
  MetricsOptions options;
  options.confidence_level = 0.9;
  const nlohmann::json j = MetricsToJson(ComputeValidationMetrics(FourPoints(), options), options);
  EXPECT_TRUE(j.contains("mape_ci90_low_pct"));
  EXPECT_TRUE(j.contains("mape_ci90_high_pct"));
  EXPECT_EQ(PercentKeyLabel(97.5), "97p5");
}

TEST(MetricsTable, ShowsOverallAndTheFiveWorstBenchmarks) {
  std::vector<PredictionRow> rows;
  // Benchmarks b0..b6 with APE 0, 1, ..., 6 %: the worst five are b6 down to b2.
  for (int i = 0; i < 7; ++i) rows.push_back(Row("b" + std::to_string(i), 1000, 0, 100, 100 + i));
  const MetricsOptions options;
  const std::string table =
      FormatMetricsTable(ComputeValidationMetrics(rows, options), options, "GTX Titan X, dvfs");
  EXPECT_EQ(table.rfind("GTX Titan X, dvfs\n", 0), 0u) << table;
  EXPECT_NE(table.find("MAPE              3.00 %  (95% CI"), std::string::npos) << table;
  EXPECT_NE(table.find("within 1/5/10 %"), std::string::npos) << table;
  EXPECT_NE(table.find("28.6 / 85.7 / 100.0 % of points"), std::string::npos) << table;
  EXPECT_NE(table.find("worst 5 of 7 benchmarks by MAPE"), std::string::npos) << table;
  const size_t b6 = table.find("b6 ");
  const size_t b2 = table.find("b2 ");
  ASSERT_NE(b6, std::string::npos);
  ASSERT_NE(b2, std::string::npos);
  EXPECT_LT(b6, b2);
  EXPECT_EQ(table.find("b1 "), std::string::npos) << table;
  EXPECT_EQ(table.find("b0 "), std::string::npos) << table;
}

TEST(MetricsCsv, FixedFormattingAndRfc4180Quoting) {
  const std::vector<PredictionRow> rows = {
      Row("plain", 1000, 3505, 100, 110),
      Row("with,comma", 1234.5, 0, 50.125, 49.5),
      Row("say \"hi\"", 875, 810, 200, 190),
  };
  EXPECT_EQ(PredictionsToCsv(rows),
            "benchmark,f_core_mhz,f_mem_mhz,measured_w,predicted_w,error_pct\n"
            "plain,1000,3505,100.000000,110.000000,10.000000\n"
            "\"with,comma\",1234.5,0,50.125000,49.500000,-1.246883\n"
            "\"say \"\"hi\"\"\",875,810,200.000000,190.000000,-5.000000\n");
}

TEST(MetricsCsv, FoldColumnOnlyWhenCrossValidated) {
  const std::vector<PredictionRow> rows = {Row("a", 1000, 0, 100, 101, 0),
                                           Row("b", 1000, 0, 100, 99, 2)};
  EXPECT_EQ(PredictionsToCsv(rows),
            "benchmark,f_core_mhz,f_mem_mhz,measured_w,predicted_w,error_pct,fold\n"
            "a,1000,0,100.000000,101.000000,1.000000,0\n"
            "b,1000,0,100.000000,99.000000,-1.000000,2\n");
  EXPECT_EQ(PredictionsToCsv({}),
            "benchmark,f_core_mhz,f_mem_mhz,measured_w,predicted_w,error_pct\n");
}

}  // namespace
}  // namespace wattcal
