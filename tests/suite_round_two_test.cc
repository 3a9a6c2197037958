// The suite's second round (issue 41), decided without a GPU: every tensor family below the power
// cap (tensor_intensity), FP16 on the FMA pipe apart from the tensor pipe, the capped benchmarks'
// own windows long enough for the cap to settle, and a planned wall time that fits one device call.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "suite_plan.h"
#include "test_support.h"

namespace wattcal {
namespace {

using capture::Benchmark;
using capture::BuildSuitePlan;
using capture::KernelKind;
using capture::SuiteOptions;

// One device call: the device tool's 10 minutes less the start and the packing; issue 41 asks
// for at most 8 minutes, and scripts/device_suite2.sh refuses a plan over 420 s (PLAN_LIMIT_S).
constexpr double kDeviceCallS = 8 * 60.0;
constexpr double kScriptPlanLimitS = 420.0;
// A block of 256 threads on an SM kept its tensor pipes busy 0.98 of the cycles on the H100
// (tensor_fp16_occ_b1, datasets/captures/h100/suite/ncu_raw.csv).
constexpr double kOneBlockTensorUtil = 0.98;

std::map<std::string, const Benchmark*> ByName(const std::vector<Benchmark>& plan) {
  std::map<std::string, const Benchmark*> m;
  for (const Benchmark& b : plan) m[b.name] = &b;
  return m;
}

TEST(SuiteRoundTwo, EveryTensorFamilyRunsOnAnEighthToFiveEighthsOfTheSms) {
  for (int sm_count : {132, 108, 80}) {  // H100/H200, A100, V100
    SuiteOptions options;
    options.sm_count = sm_count;
    const std::vector<Benchmark> plan = BuildSuitePlan(options);
    std::map<KernelKind, std::vector<double>> shares;  // per family, the SM shares in plan order
    for (const Benchmark& b : plan) {
      if (b.group != "tensor_intensity") continue;
      EXPECT_TRUE(b.one_block_per_sm) << b.name;
      EXPECT_EQ(b.threads, 256) << b.name;  // one block already fills an SM's tensor pipes
      EXPECT_EQ(b.window_s, 0.0) << b.name << ": below the cap, the run's --seconds";
      shares[b.kernel].push_back(static_cast<double>(b.blocks) / sm_count);
      const int eighths = static_cast<int>(shares[b.kernel].size());
      EXPECT_NE(b.name.find(fmt::format("_sm{}of8", eighths)), std::string::npos) << b.name;
    }
    for (KernelKind k : {KernelKind::kTensor, KernelKind::kTensorBf16, KernelKind::kTensorTf32,
                         KernelKind::kTensorInt8, KernelKind::kTensorFp64, KernelKind::kWgmmaFp16,
                         KernelKind::kWgmmaBf16, KernelKind::kWgmmaFp8}) {
      const std::vector<double>& s = shares[k];
      ASSERT_EQ(s.size(), 5u) << capture::KernelName(k);
      EXPECT_TRUE(std::is_sorted(s.begin(), s.end())) << capture::KernelName(k);
      // Utilisation spans 0.1 ... beyond half of full use, and stays below the share (3/4) whose
      // power would reach the cap.
      EXPECT_GE(kOneBlockTensorUtil * s.front(), 0.1) << sm_count;
      EXPECT_LE(kOneBlockTensorUtil * s.front(), 0.15) << sm_count;
      EXPECT_GE(kOneBlockTensorUtil * s.back(), 0.55) << sm_count;
      EXPECT_LT(s.back(), 0.7) << sm_count;
    }
  }
}

TEST(SuiteRoundTwo, Fp16OnTheFmaPipeAndOnTheTensorPipeAreDistinctBenchmarks) {
  const std::vector<Benchmark> plan = BuildSuitePlan(SuiteOptions());
  const auto by = ByName(plan);
  ASSERT_TRUE(by.count("fp16_hfma2_fma"));
  ASSERT_TRUE(by.count("fp16_hfma2"));
  ASSERT_TRUE(by.count("tensor_fp16_sm4of8"));
  const Benchmark& fma = *by.at("fp16_hfma2_fma");
  EXPECT_EQ(fma.group, "unit");
  EXPECT_EQ(fma.kernel, KernelKind::kFp16Hfma2Fma);
  EXPECT_STREQ(capture::KernelName(fma.kernel), "k_fp16_hfma2_fma");
  EXPECT_NE(fma.kernel, by.at("fp16_hfma2")->kernel);
  EXPECT_EQ(fma.blocks, by.at("fp16_hfma2")->blocks);  // the same launch, another pipe
  EXPECT_EQ(fma.min_cc, 70);                           // fma.rn.f16x2 below sm_90
  EXPECT_EQ(by.at("tensor_fp16_sm4of8")->kernel, KernelKind::kTensor);
}

TEST(SuiteRoundTwo, BenchmarksThatReachTheCapGetTwoSettledSeconds) {
  const std::vector<Benchmark> plan = BuildSuitePlan(SuiteOptions());
  std::set<std::string> own;
  for (const Benchmark& b : plan) {
    if (b.window_s > 0.0) own.insert(b.name);
  }
  // The 18 windows flagged power_cap on the H100 (datasets/captures/README.md).
  std::set<std::string> capped;
  for (const char* family :
       {"tensor_fp16", "tensor_bf16", "tensor_tf32", "wgmma_fp16", "wgmma_bf16", "wgmma_fp8"}) {
    for (const char* suffix : {"", "_occ_b1", "_occ_b2"})
      capped.insert(std::string(family) + suffix);
  }
  EXPECT_EQ(own, capped);
  for (const std::string& name : capped) {
    const Benchmark& b = *ByName(plan).at(name);
    // Whatever --seconds says: after the ingest's settle trim and the cap controller's settling,
    // at least 2 s of settled power and clock.
    for (double seconds : {0.2, 0.6, 2.0}) {
      const double window = capture::WindowSeconds(b, seconds, 1.0);
      EXPECT_GE(window - capture::kIngestSettleS - capture::kCapSettleS, 2.0) << name;
    }
  }
  EXPECT_DOUBLE_EQ(capture::WindowSeconds(*ByName(plan).at("int_add"), 0.6, 1.0), 0.6);
  EXPECT_DOUBLE_EQ(capture::WindowSeconds(*ByName(plan).at("tensor_fp16"), 0.6, 0.1),
                   0.1 * capture::kCappedWindowS);
  // The data-toggle sweep stays its own family (ingest flags it data_toggle).
  int toggles = 0;
  for (const Benchmark& b : plan) toggles += b.group == "toggle" && b.toggle_pct >= 0;
  EXPECT_EQ(toggles, 36);
}

TEST(SuiteRoundTwo, ThePlannedWallTimeFitsOneDeviceCall) {
  capture::PlanTimingOptions o;
  o.seconds = 0.6;  // scripts/device_suite2.sh
  o.gap_ms = 300.0;
  o.idle_s = 3.0;
  o.counters = true;
  const std::vector<Benchmark> plan = BuildSuitePlan(SuiteOptions());  // H100 and H200: 132 SMs
  const capture::PlanTiming t = capture::PlannedSeconds(plan, o);
  EXPECT_EQ(t.benchmarks, 257);
  EXPECT_EQ(t.own_windows, 18);
  EXPECT_LE(t.total_s, kScriptPlanLimitS) << capture::PlanTimingText(t);
  EXPECT_LT(t.total_s + 30.0, kDeviceCallS) << "the script's own minute of set-up and packing";
  EXPECT_NEAR(t.total_s, t.power_s + t.counters_s, 1e-9);
  // The timing model against the first campaign: its 216 benchmarks at 0.66 s + 0.3 s took a
  // 224-s power run and 282 s with the counters (datasets/captures/h100/logs/device_capture.log).
  std::vector<Benchmark> first;
  for (const Benchmark& b : plan) {
    if (b.group != "tensor_intensity" && b.name != "fp16_hfma2_fma") first.push_back(b);
  }
  for (Benchmark& b : first) b.window_s = 0.0;
  o.seconds = 0.66;
  const capture::PlanTiming f = capture::PlannedSeconds(first, o);
  EXPECT_EQ(f.benchmarks, 216);
  EXPECT_NEAR(f.power_s, 224.0, 5.0);
  EXPECT_NEAR(f.total_s, 282.0, 10.0);
}

TEST(SuiteRoundTwo, ListAndPlanSecondsShowTheNewGroupsWithoutAGpu) {
  const testing::CommandResult list = testing::RunStage("wattcal-capture", {"--list"});
  ASSERT_EQ(list.exit_code, 0) << list.output;
  EXPECT_NE(list.output.find(",one_block_per_sm,window_s\n"), std::string::npos);
  for (const char* row : {"\ntensor_fp16_sm1of8,tensor_intensity,k_tensor_hmma,17,256,",
                          "\nwgmma_fp8_sm5of8,tensor_intensity,k_wgmma_fp8,83,256,",
                          "\nfp16_hfma2_fma,unit,k_fp16_hfma2_fma,1056,256,",
                          "\ntensor_fp16,unit,k_tensor_hmma,1056,256,"}) {
    EXPECT_NE(list.output.find(row), std::string::npos) << row;
  }
  EXPECT_NE(list.output.find(",-1,0,3.3\n"), std::string::npos);  // a capped window's own length
  const testing::CommandResult t =
      testing::RunStage("wattcal-capture", {"--plan-seconds", "--counters", "--seconds", "0.6",
                                            "--gap-ms", "300", "--only", "tensor_.*|wgmma_.*"});
  ASSERT_EQ(t.exit_code, 0) << t.output;
  EXPECT_NE(t.output.find("64 benchmarks (18 with their own window): power run "),
            std::string::npos)
      << t.output;
  testing::ExpectRefused(
      testing::RunStage("wattcal-capture", {"--plan-seconds", "--window-scale", "2"}), 1,
      {"--window-scale: 2"}, {});
}

}  // namespace
}  // namespace wattcal
