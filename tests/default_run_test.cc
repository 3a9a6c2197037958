// The embedded default run, end to end through the executables as `make -f Makefile.runs`
// runs it: virtual GPU -> calibrate -> validate against the known truth.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_support.h"

namespace wattcal {
namespace {

using testing::FileExists;
using testing::ReadFile;
using testing::RunStage;
using testing::ScratchDir;

const std::string kSpec = std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/virtual_gpu.json";

TEST(DefaultRun, SynthIsDeterministicForASeed) {
  const std::string dir = ScratchDir();
  for (const char* sub : {"/a", "/b", "/c"}) {
    const std::string seed = std::string(sub) == "/c" ? "2" : "1";
    const auto r = RunStage("wattcal-synth", {"--spec", kSpec, "--out-dir", dir + sub, "--seed", seed, "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  for (const char* file : {"/train_micro_dvfs.csv", "/heldout_apps_dvfs.csv", "/truth_model.json"}) {
    EXPECT_EQ(ReadFile(dir + "/a" + file), ReadFile(dir + "/b" + file)) << file;
  }
  EXPECT_NE(ReadFile(dir + "/a/train_micro_dvfs.csv"), ReadFile(dir + "/c/train_micro_dvfs.csv"));
}

TEST(DefaultRun, CalibrationComesCloseToTheTruth) {
  const std::string dir = ScratchDir();
  auto r = RunStage("wattcal-synth", {"--spec", kSpec, "--out-dir", dir + "/data", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunStage("wattcal-calibrate", {"--train", dir + "/data/train_micro_dvfs.csv", "--out", dir + "/model.json", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const std::string mode : {"dvfs", "scaling"}) {
    r = RunStage("wattcal-validate",
                 {"--model", dir + "/model.json", "--heldout", dir + "/data/heldout_apps_dvfs.csv",
                  "--mode", mode, "--truth-model", dir + "/data/truth_model.json", "--predictions",
                  dir + "/pred_" + mode + ".csv", "--metrics", dir + "/metrics_" + mode + ".json",
                  "--summary-md", dir + "/summary_" + mode + ".md"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("against the truth"), std::string::npos) << r.output;
    const nlohmann::json m = nlohmann::json::parse(ReadFile(dir + "/metrics_" + mode + ".json"));
    const nlohmann::json& t = m.at("truth");
    // Held-out error within 1.3x of the true model's own error on the same noisy data.
    EXPECT_LE(m.at("mape_pct").get<double>(), 1.3 * t.at("truth_mape_pct").get<double>());
    // Identifiable parameters (see tests/calibrate_test.cc for why the static split is not).
    EXPECT_LT(t.at("max_coefficient_rel_error").get<double>(), 0.10);
    EXPECT_NEAR(t.at("static_total_w").get<double>(), t.at("true_static_total_w").get<double>(),
                0.05 * t.at("true_static_total_w").get<double>());
    EXPECT_LT(t.at("max_voltage_abs_error").get<double>(), 0.02);
    EXPECT_TRUE(FileExists(dir + "/summary_" + mode + ".md.manifest.json"));
  }
}

}  // namespace
}  // namespace wattcal
