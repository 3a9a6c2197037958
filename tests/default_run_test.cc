// The embedded default run, end to end through the executables as `make -f Makefile.runs`
// runs it: virtual GPU -> calibrate -> validate against the known truth.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/model_io.h"
#include "test_support.h"

namespace wattcal {
namespace {

using testing::FileExists;
using testing::HasProvenance;
using testing::ReadFile;
using testing::RunStage;
using testing::ScratchDir;

const std::string kSpec = std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/virtual_gpu.json";

TEST(DefaultRun, SynthIsDeterministicForASeed) {
  const std::string dir = ScratchDir();
  for (const char* sub : {"/a", "/b", "/c"}) {
    const std::string seed = std::string(sub) == "/c" ? "2" : "1";
    const auto r =
        RunStage("wattcal-synth", {"--spec", kSpec, "--out-dir", dir + sub, "--seed", seed, "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  for (const char* file :
       {"/train_micro_dvfs.csv", "/heldout_apps_dvfs.csv", "/truth_model.json"}) {
    EXPECT_EQ(ReadFile(dir + "/a" + file), ReadFile(dir + "/b" + file)) << file;
  }
  EXPECT_NE(ReadFile(dir + "/a/train_micro_dvfs.csv"), ReadFile(dir + "/c/train_micro_dvfs.csv"));
}

// The acceptance test: the virtual GPU's raw dumps go through ingest (MTSM energy,
// TPDS Eqs. 7-8), calibrate and validate, and the model comes back close to the truth.
TEST(DefaultRun, CampaignThroughIngestRecoversTheTruth) {
  const std::string dir = ScratchDir();
  const std::string gpu = std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/gpus/virtual.json";
  auto r =
      RunStage("wattcal-synth", {"--spec", kSpec, "--out-dir", dir + "/data", "--campaign", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const std::string part : {"train", "heldout"}) {
    const std::string d = dir + "/data/" + part;
    r = RunStage("wattcal-ingest",
                 {"--power-log", d + "/power_log.csv", "--windows", d + "/windows.csv",
                  "--counters", d + "/counters_ncu.csv", "--gpu", gpu, "--out", d + "/kernels.csv",
                  "--tidy", d + "/measurements.csv", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  r = RunStage("wattcal-calibrate", {"--train", dir + "/data/train/measurements.csv", "--out",
                                     dir + "/model.json", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const PowerModel fitted = ReadModel(dir + "/model.json");
  const PowerModel truth = ReadModel(dir + "/data/truth_model.json");

  // Named tolerances. The MTSM window includes the sensor's lag and rise (20 + 15 ms of a
  // 2 s kernel), which biases every dynamic coefficient ~2% low; the static power's split
  // between domains and the memory domain's idle term are weakly identified (3 memory
  // levels, v_mem barely moves), so they are judged as a total.
  constexpr double kComponentTolerance = 0.05;    // each gamma_i, relative
  constexpr double kCoreIdleTolerance = 0.05;     // alpha1_core, relative
  constexpr double kStaticTotalTolerance = 0.10;  // alpha0_core + alpha0_mem, relative
  constexpr double kVoltageTolerance = 0.03;      // every level, normalised units
  for (size_t i = 0; i < truth.component_w_per_mhz.size(); ++i) {
    EXPECT_NEAR(fitted.component_w_per_mhz[i], truth.component_w_per_mhz[i],
                kComponentTolerance * truth.component_w_per_mhz[i])
        << truth.layout.ComponentNames()[i];
  }
  EXPECT_NEAR(fitted.idle_dyn_w_per_mhz[0], truth.idle_dyn_w_per_mhz[0],
              kCoreIdleTolerance * truth.idle_dyn_w_per_mhz[0]);
  const double static_fitted = fitted.static_w[0] + fitted.static_w[1];
  const double static_truth = truth.static_w[0] + truth.static_w[1];
  EXPECT_NEAR(static_fitted, static_truth, kStaticTotalTolerance * static_truth);
  for (size_t d = 0; d < truth.voltage_rel.size(); ++d) {
    ASSERT_EQ(fitted.freq_levels_mhz[d], truth.freq_levels_mhz[d]);
    for (size_t j = 0; j < truth.voltage_rel[d].size(); ++j) {
      EXPECT_NEAR(fitted.voltage_rel[d][j], truth.voltage_rel[d][j], kVoltageTolerance)
          << truth.layout.domains[d].name << " " << truth.freq_levels_mhz[d][j] << " MHz";
    }
  }

  // Held-out applications: within 1.3x of the true model's own MAPE on the same noisy,
  // ingested measurements.
  for (const std::string mode : {"dvfs", "scaling"}) {
    r = RunStage(
        "wattcal-validate",
        {"--model", dir + "/model.json", "--heldout", dir + "/data/heldout/measurements.csv",
         "--mode", mode, "--truth-model", dir + "/data/truth_model.json", "--predictions",
         dir + "/pred_" + mode + ".csv", "--metrics", dir + "/metrics_" + mode + ".json",
         "--summary-md", dir + "/summary_" + mode + ".md"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("against the truth"), std::string::npos) << r.output;
    const nlohmann::json m = nlohmann::json::parse(ReadFile(dir + "/metrics_" + mode + ".json"));
    EXPECT_LE(m.at("mape_pct").get<double>(),
              1.3 * m.at("truth").at("truth_mape_pct").get<double>())
        << mode;
    EXPECT_TRUE(HasProvenance(dir + "/summary_" + mode + ".md"));
  }
}

}  // namespace
}  // namespace wattcal
