// The comparison's sentences (report/comparison_findings.h) come from its data alone: built from
// a small chart whose every number is known, they change when the two GPUs are swapped, and the
// component sentence names exactly the components whose intervals do not overlap.
#include "report/comparison_findings.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace wattcal {
namespace {

// Workloads measured on A and B and estimated: rel = 100 (P_B - P_A) / P_A.
RelativePowerChart Chart(
    const std::string& a, const std::string& b,
    const std::vector<std::tuple<std::string, double, double, double, double>>& rows) {
  RelativePowerChart c;
  c.gpu_a = a;
  c.gpu_b = b;
  for (const auto& [name, meas_a, meas_b, est_a, est_b] : rows) {
    c.bars.push_back(
        {name, 100.0 * (est_b - est_a) / est_a, 100.0 * (meas_b - meas_a) / meas_a, -1});
  }
  return c;
}

const std::vector<std::tuple<std::string, double, double, double, double>> kRows = {
    {"dram_ld", 500.0, 650.0, 510.0, 620.0},    // +30% measured, +21.6% estimated
    {"dram_copy", 480.0, 576.0, 470.0, 550.0},  // +20%
    {"fp32_fma", 520.0, 510.0, 515.0, 505.0},   // -1.9%
    {"sm_sweep_int_add_001", 130.0, 128.0, 131.0,
     133.0},  // -1.5% measured, +1.5% estimated: opposite
};

TEST(ComparisonFindings, BenchmarkGroups) {
  EXPECT_EQ(BenchmarkGroup("dram_ld"), "dram");
  EXPECT_EQ(BenchmarkGroup("idle_sleep"), "idle");
  EXPECT_EQ(BenchmarkGroup("fp32_fma"), "fp32");
  EXPECT_EQ(BenchmarkGroup("l2_ld"), "l2");
  EXPECT_EQ(BenchmarkGroup("sm_sweep_int_add_001"), "sm_sweep");
  EXPECT_EQ(BenchmarkGroup("lane_sweep_fp32_fma_08"), "lane_sweep");
  EXPECT_EQ(BenchmarkGroup("mix003_f13_i0_d0"), "mix");
  EXPECT_EQ(BenchmarkGroup("mix_fma4_dram"), "mix");
  EXPECT_EQ(BenchmarkGroup("gemm"), "gemm");
}

TEST(ComparisonFindings, EveryNumberComesFromTheChartAndSwappingTheGpusChangesThem) {
  const std::vector<std::string> ab =
      ComparisonFindings(Chart("h100", "h200", kRows), nullptr, nullptr);
  ASSERT_EQ(ab.size(), 2u);
  // Averages: measured (30 + 20 - 1.923 - 1.538) / 4 = 11.63%; 3 of 4 point the same way.
  EXPECT_NE(ab[0].find("h200's power differs from h100's by +11.6% on average as measured"),
            std::string::npos)
      << ab[0];
  EXPECT_NE(ab[0].find("for 3 of them (75%)"), std::string::npos) << ab[0];
  EXPECT_NE(ab[1].find("dram (2 workloads: +25.0% measured"), std::string::npos) << ab[1];
  EXPECT_NE(ab[1].find("dram_ld +30.0%"), std::string::npos) << ab[1];

  std::vector<std::tuple<std::string, double, double, double, double>> swapped;
  for (const auto& [name, ma, mb, ea, eb] : kRows) swapped.emplace_back(name, mb, ma, eb, ea);
  const std::vector<std::string> ba =
      ComparisonFindings(Chart("h200", "h100", swapped), nullptr, nullptr);
  ASSERT_EQ(ba.size(), 2u);
  EXPECT_NE(ab[0], ba[0]);
  EXPECT_NE(ba[0].find("h100's power differs from h200's by -9.1% on average as measured"),
            std::string::npos)
      << ba[0];
  EXPECT_NE(ba[1].find("dram_ld -23.1%"), std::string::npos) << ba[1];
}

PowerModel TwoComponents(double a_low, double a_high, double b_low, double b_high) {
  PowerModel m;
  m.method = FitMethod::kFixed;
  m.layout.domains = {{"core", 1000.0, {"TENSOR", "FP32"}}};
  m.freq_levels_mhz = {{1000.0}};
  m.voltage_rel = {{1.0}};
  m.static_w = {50.0};
  m.idle_dyn_w_per_mhz = {0.0};
  m.component_w_per_mhz = {(a_low + a_high) / 2000.0, (b_low + b_high) / 2000.0};
  m.coefficient_ci95.bootstrap_replicates = 100;
  m.coefficient_ci95.static_w = {{45.0, 55.0}};
  m.coefficient_ci95.idle_dyn_w_per_mhz = {{0.0, 0.0}};
  m.coefficient_ci95.component_w_per_mhz = {{a_low / 1000.0, a_high / 1000.0},
                                            {b_low / 1000.0, b_high / 1000.0}};
  return m;
}

TEST(ComparisonFindings, OnlyComponentsWhoseIntervalsDoNotOverlapAreNamed) {
  const PowerModel a = TwoComponents(300.0, 400.0, 100.0, 200.0);
  const PowerModel b = TwoComponents(150.0, 250.0, 180.0, 260.0);  // TENSOR disjoint, FP32 overlaps
  int compared = 0;
  const std::vector<ComponentDifference> d = DisjointComponents(a, b, &compared);
  EXPECT_EQ(compared, 2);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].component, "TENSOR");
  const std::vector<std::string> f = ComparisonFindings(Chart("h100", "h200", kRows), &a, &b);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_NE(f[2].find("do not overlap for 1 of the 2 components both estimate: TENSOR (350 W [300, "
                      "400] on h100, "
                      "200 W [150, 250] on h200)"),
            std::string::npos)
      << f[2];
  // Overlapping everywhere, and no intervals at all, each say so.
  EXPECT_NE(ComparisonFindings(Chart("h100", "h200", kRows), &a, &a)[2].find(
                "overlap for every one of the 2"),
            std::string::npos);
  PowerModel plain = a;
  plain.coefficient_ci95 = {};
  EXPECT_NE(ComparisonFindings(Chart("h100", "h200", kRows), &plain, &b)[2].find(
                "no bootstrap intervals"),
            std::string::npos);
}

}  // namespace
}  // namespace wattcal
