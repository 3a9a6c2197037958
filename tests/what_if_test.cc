// What if: a clock, a cap. The V-F curve from the rows the power cap moved (model/vf_curve.h),
// the clock a cap settles at, and wattcal-predict --capture --at-clock / --at-power-limit
// (perf/what_if.h), on small models and on the committed H100 captures (datasets/captures).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/corpus.h"
#include "model/model_io.h"
#include "model/power_limit.h"
#include "model/vf_curve.h"
#include "test_support.h"
#include "util/errors.h"

namespace wattcal {
namespace {

using testing::ReadFile;
using testing::RunStage;
using testing::ScratchDir;

const std::string kSource = WATTCAL_SOURCE_DIR;
const std::string kH100 = kSource + "/microbench_specs/gpus/h100_sxm.json";
const std::string kSuite = kSource + "/datasets/captures/h100/suite";
const std::string kApps = kSource + "/datasets/captures/h100/apps";

// A fixed two-domain model: core static 100 W, one core component of 0.2 W/MHz at 1000 MHz and
// one memory component of 0.05 W/MHz at 2000 MHz.
PowerModel SmallFixedModel() {
  PowerModel m;
  m.method = FitMethod::kFixed;
  m.layout.domains = {{"core", 1000.0, {"FP32"}}, {"mem", 2000.0, {"DRAM"}}};
  m.freq_levels_mhz = {{1000.0}, {2000.0}};
  m.voltage_rel = {{1.0}, {1.0}};
  m.static_w = {100.0, 0.0};
  m.idle_dyn_w_per_mhz = {0.0, 0.0};
  m.component_w_per_mhz = {0.2, 0.05};
  m.trained_on = "small.csv";
  return m;
}

TEST(VfCurve, SolveVoltageInvertsTheEquation) {
  // P = S v + D v^2 f_rel + M at v = 0.8, f_rel = 0.7.
  const double p = 100.0 * 0.8 + 300.0 * 0.64 * 0.7 + 40.0;
  EXPECT_NEAR(SolveVoltage(100.0, 300.0, 40.0, 0.7, p), 0.8, 1e-12);
  EXPECT_TRUE(std::isnan(SolveVoltage(100.0, 300.0, 40.0, 0.7, 30.0)));
}

TEST(VfCurve, MonotoneVoltagesPoolViolatorsAndStayAtOrBelowOne) {
  std::vector<double> levels;
  const std::vector<double> v =
      MonotoneVoltages({1500, 1200, 1300, 1300, 1800}, {0.9, 0.8, 0.95, 0.85, 1.3}, &levels);
  EXPECT_EQ(levels, (std::vector<double>{1200, 1300, 1500, 1800}));
  ASSERT_EQ(v.size(), 4u);
  EXPECT_DOUBLE_EQ(v[0], 0.8);
  // 1300 (mean 0.9) and 1500 (0.9) do not violate; 1800's 1.3 is held at 1.
  EXPECT_DOUBLE_EQ(v[1], 0.9);
  EXPECT_DOUBLE_EQ(v[2], 0.9);
  EXPECT_DOUBLE_EQ(v[3], 1.0);
  // A violation pools: 0.95 at 1200 above 0.85 at 1300 -> both 0.9.
  const std::vector<double> pooled = MonotoneVoltages({1200, 1300}, {0.95, 0.85}, &levels);
  EXPECT_DOUBLE_EQ(pooled[0], 0.9);
  EXPECT_DOUBLE_EQ(pooled[1], 0.9);
}

TEST(VfCurve, PowerOnTheCurveIsTpdsEq4AndMatchesADvfsModelAtItsLevels) {
  PowerModel m = SmallFixedModel();
  m.vf_curve.levels_mhz = {500.0, 1000.0};
  m.vf_curve.v_rel = {0.8, 1.0};
  const double u[2] = {0.5, 0.4};
  // At 750 MHz: v = 0.9; core 100 v + 0.2*1000*0.5 v^2 0.75; memory 0.05*2000*0.4 held.
  const double expected = 100.0 * 0.9 + 100.0 * 0.81 * 0.75 + 40.0;
  EXPECT_NEAR(PowerOnCurve(m, m.vf_curve, u, 750.0), expected, 1e-9);
  // Below the curve v is held at its lowest point.
  EXPECT_NEAR(PowerOnCurve(m, m.vf_curve, u, 400.0), 100.0 * 0.8 + 100.0 * 0.64 * 0.4 + 40.0, 1e-9);
  // The same as a DVFS model with these voltages.
  PowerModel dvfs = m;
  dvfs.method = FitMethod::kDvfs;
  dvfs.vf_curve = VfCurve();
  dvfs.freq_levels_mhz[0] = {500.0, 1000.0};
  dvfs.voltage_rel[0] = {0.8, 1.0};
  const VfCurve own = CoreCurveOf(dvfs);
  ASSERT_TRUE(own.known());
  EXPECT_NE(own.source.find("own core voltages"), std::string::npos);
  const double f[2] = {750.0, 2000.0};
  EXPECT_NEAR(PowerOnCurve(dvfs, own, u, 750.0), dvfs.Predict(u, f), 1e-9);
}

TEST(VfCurve, AFixedModelWithACurveSettlesUnderItsCapAtTheClockWherePowerMeetsIt) {
  PowerModel m = SmallFixedModel();
  const double u[2] = {1.0, 0.0};  // 300 W at the reference
  const double f[2] = {1000.0, 2000.0};
  EXPECT_TRUE(std::isnan(CapCoreFrequencyMhz(m, u, f, 250.0)));  // no curve: no clock
  m.vf_curve.levels_mhz = {500.0, 1000.0};
  m.vf_curve.v_rel = {1.0, 1.0};
  // v = 1: 100 + 200 f/1000 = 250 at f = 750 MHz.
  const double settled = CapCoreFrequencyMhz(m, u, f, 250.0);
  EXPECT_NEAR(settled, 750.0, 0.011);
  const CappedPower capped = ApplyPowerLimit(m, u, f, 250.0);
  EXPECT_TRUE(capped.capped);
  EXPECT_NEAR(capped.f_core_mhz, 750.0, 0.011);
}

TEST(VfCurve, TheModelFileKeepsTheCurveAndRefusesABrokenOne) {
  const std::string dir = ScratchDir();
  PowerModel m = SmallFixedModel();
  m.vf_curve.levels_mhz = {600.0, 1000.0};
  m.vf_curve.v_rel = {0.9, 1.0};
  m.vf_curve.source = "a test";
  const std::string path = testing::WriteFile(dir + "/m.json", ModelToJson(m));
  const PowerModel back = ReadModel(path);
  EXPECT_EQ(back.vf_curve.levels_mhz, m.vf_curve.levels_mhz);
  EXPECT_EQ(back.vf_curve.v_rel, m.vf_curve.v_rel);
  EXPECT_EQ(back.vf_curve.source, "a test");
  nlohmann::json j = nlohmann::json::parse(ReadFile(path));
  j["vf_curve"]["v_rel"] = {1.1, 1.0};
  testing::WriteFile(path, j.dump(2));
  try {
    ReadModel(path);
    ADD_FAILURE() << "a curve above 1 was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("vf_curve"), std::string::npos) << e.what();
  }
}

// ---- The committed H100 captures -------------------------------------------------------------

// Rows of a CSV keyed by the first two columns joined with '|' (workload|setting|value) or the
// first column.
std::vector<std::map<std::string, std::string>> CsvRows(const std::string& path) {
  std::istringstream in(ReadFile(path));
  std::string line;
  std::vector<std::string> header;
  std::vector<std::map<std::string, std::string>> out;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::string cell;
    bool quoted = false;
    for (char c : line) {
      if (c == '"') {
        quoted = !quoted;
      } else if (c == ',' && !quoted) {
        f.push_back(cell);
        cell.clear();
      } else {
        cell += c;
      }
    }
    f.push_back(cell);
    if (header.empty()) {
      header = f;
      continue;
    }
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < f.size() && i < header.size(); ++i) row[header[i]] = f[i];
    out.push_back(row);
  }
  return out;
}

// The own suite ingested and calibrated once for every test below.
class OwnH100WhatIf : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(ScratchDir());
    const testing::CommandResult ingest = RunStage(
        "wattcal-ingest", {"--capture", kSuite, "--gpu", kH100, "--tidy", *dir_ + "/m.csv"});
    ASSERT_EQ(ingest.exit_code, 0) << ingest.output;
    calibrate_ = new testing::CommandResult(RunStage(
        "wattcal-calibrate",
        {"--train", *dir_ + "/m.csv", "--out", *dir_ + "/model.json", "--method", "auto"}));
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete calibrate_;
  }
  static std::string* dir_;
  static testing::CommandResult* calibrate_;
};
std::string* OwnH100WhatIf::dir_ = nullptr;
testing::CommandResult* OwnH100WhatIf::calibrate_ = nullptr;

TEST_F(OwnH100WhatIf, CalibrationKeepsTheCurveOfTheCappedRowsWithItsSource) {
  ASSERT_EQ(calibrate_->exit_code, 0) << calibrate_->output;
  const PowerModel model = ReadModel(*dir_ + "/model.json");
  ASSERT_TRUE(model.vf_curve.known());
  // The 18 tensor/wgmma windows the 700 W cap held at 1579 to 1830 MHz.
  EXPECT_NEAR(model.vf_curve.lowest_mhz(), 1579.0, 1.0);
  EXPECT_EQ(model.vf_curve.reference_mhz(), 1980.0);
  EXPECT_NE(model.vf_curve.source.find("fitted from 18 rows of " + *dir_ + "/m.csv"),
            std::string::npos)
      << model.vf_curve.source;
  EXPECT_NE(model.vf_curve.source.find("tensor_fp16"), std::string::npos);
  // Every capped row drew more at its lower clock than the fixed model gives it at 1980 MHz
  // (its TENSOR term rests on one row): the voltages solve above 1 and the curve is held at 1.
  EXPECT_NE(calibrate_->output.find("all above 1"), std::string::npos) << calibrate_->output;
  for (double v : model.vf_curve.v_rel) EXPECT_EQ(v, 1.0);
}

// The headline check: the clock each capped application settled at under the 700 W cap, predicted
// from its counters along the curve, against the measured time-weighted clock of its window.
// Measured (this commit): gemm_fp16 1394 vs 1308 MHz (+6.6%), gemm_bf16 1367 vs 1369 (-0.1%);
// gemm_fp64 and attention_bf16 are predicted under the cap (580 and 622 W < 700 W: the model
// under-predicts them by 16% and 9%), so 1980 against 1809 and 1818 MHz (+9.4%, +8.9%).
TEST_F(OwnH100WhatIf, TheCappedApplicationsSettleNearTheClockTheyRanAt) {
  ASSERT_EQ(calibrate_->exit_code, 0) << calibrate_->output;
  const std::string out = *dir_ + "/apps.csv";
  const testing::CommandResult r = RunStage(
      "wattcal-predict",
      {"--model", *dir_ + "/model.json", "--capture", kApps, "--gpu", kH100, "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::map<std::string, double> measured = {{"gemm_fp16", 1307.9},
                                                  {"gemm_bf16", 1369.2},
                                                  {"gemm_fp64", 1809.4},
                                                  {"attention_bf16", 1818.3}};
  std::map<std::string, double> predicted;
  for (const auto& row : CsvRows(out))
    predicted[row.at("workload")] = std::stod(row.at("f_core_mhz"));
  ASSERT_EQ(predicted.size(), 11u);
  // Tolerance: the largest error measured, 9.5% of the measured clock.
  for (const auto& [workload, f] : measured) {
    EXPECT_NEAR(predicted.at(workload), f, 0.095 * f) << workload;
  }
  // The two the model predicts above the cap settle below 1980 MHz, within 7%.
  EXPECT_NEAR(predicted.at("gemm_fp16"), 1307.9, 0.07 * 1307.9);
  EXPECT_NEAR(predicted.at("gemm_bf16"), 1369.2, 0.07 * 1369.2);
  EXPECT_LT(predicted.at("gemm_fp16"), 1980.0);
  // Uncapped applications keep the reference clock.
  EXPECT_EQ(predicted.at("sort"), 1980.0);
}

TEST_F(OwnH100WhatIf, APowerLimitAndAClockGiveTheirOwnRowsWithTheCurvesSource) {
  ASSERT_EQ(calibrate_->exit_code, 0) << calibrate_->output;
  const std::string out = *dir_ + "/wi_apps.csv", what_if = *dir_ + "/what_if.csv";
  const testing::CommandResult r =
      RunStage("wattcal-predict", {"--model", *dir_ + "/model.json", "--capture", kApps, "--gpu",
                                   kH100, "--out", out, "--at-power-limit", "500,600", "--at-clock",
                                   "1700", "--what-if-out", what_if, "--max-slowdown-pct", "10"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(testing::HasProvenance(what_if));
  const auto rows = CsvRows(what_if);
  ASSERT_EQ(rows.size(), 11u * 4u);
  std::map<std::string, int> marked;
  for (const auto& row : rows) {
    EXPECT_NE(row.at("vf_source").find("model_vf_curve:"), std::string::npos);
    const double f = std::stod(row.at("f_core_mhz"));
    const double p = std::stod(row.at("predicted_w"));
    if (row.at("setting") == "power_limit") {
      const double limit = std::stod(row.at("setting_value"));
      EXPECT_LE(p, limit + 0.5) << row.at("workload");
      // Under a cap lower than the recorded run's power, the run is slower and the clock lower.
      if (f < 1980.0) {
        EXPECT_GT(std::stod(row.at("time_change_pct")), 0.0) << row.at("workload");
      }
    }
    if (row.at("setting") == "clock") {
      EXPECT_LE(f, 1700.0);
    }
    if (row.at("flags").find("least_energy_within_10pct") != std::string::npos)
      ++marked[row.at("workload")];
    // Energy = power x run time.
    EXPECT_NEAR(std::stod(row.at("energy_j")), p * std::stod(row.at("run_time_s")),
                1e-3 * std::stod(row.at("energy_j")));
  }
  EXPECT_EQ(marked.size(), 11u);
  for (const auto& [w, n] : marked) EXPECT_EQ(n, 1) << w;
}

TEST_F(OwnH100WhatIf, RefusalsNameTheRouteAndWriteNothing) {
  ASSERT_EQ(calibrate_->exit_code, 0) << calibrate_->output;
  const std::string out = *dir_ + "/r.csv", what_if = *dir_ + "/r_what_if.csv";
  auto run = [&](const std::string& model, std::vector<std::string> extra) {
    std::vector<std::string> args = {"--model", model,   "--capture", kApps,           "--gpu",
                                     kH100,     "--out", out,         "--what-if-out", what_if};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunStage("wattcal-predict", args);
  };
  const std::string model = *dir_ + "/model.json";
  // A clock below the curve's lowest point, and above the reference.
  testing::ExpectRefused(run(model, {"--at-clock", "1410"}), 1,
                         {"--at-clock 1410 MHz lies outside the V-F curve (1579 to 1980 MHz",
                          "wattcal-capture --lock-clocks", "refuses --lock-clocks"},
                         {out, what_if});
  testing::ExpectRefused(run(model, {"--at-clock", "2100"}), 1, {"--at-clock 2100 MHz"},
                         {out, what_if});
  // A cap below the static power.
  testing::ExpectRefused(run(model, {"--at-power-limit", "50"}), 1,
                         {"--at-power-limit 50 W lies below", "no clock meets that cap"},
                         {out, what_if});
  // A fixed model without any curve.
  nlohmann::json j = nlohmann::json::parse(ReadFile(model));
  j.erase("vf_curve");
  const std::string bare = testing::WriteFile(*dir_ + "/bare.json", j.dump(2));
  testing::ExpectRefused(run(bare, {"--at-power-limit", "500"}), 1,
                         {"need a V-F curve", "has none", "wattcal-capture --lock-clocks"},
                         {out, what_if});
  // --what-if-out without a setting, and a setting without --what-if-out.
  testing::ExpectRefused(run(model, {}), 1, {"--what-if-out"}, {out, what_if});
  testing::ExpectRefused(RunStage("wattcal-predict", {"--model", model, "--capture", kApps, "--gpu",
                                                      kH100, "--out", out, "--at-clock", "1700"}),
                         1, {"--what-if-out"}, {out});
}

// --vf-curve: a wattcal-clocks vf_model.json gives the curve (named in every row); one whose
// reference clock is not the model's is refused by name.
TEST_F(OwnH100WhatIf, AVfModelFileGivesTheCurveWhenItsReferenceIsTheModels) {
  ASSERT_EQ(calibrate_->exit_code, 0) << calibrate_->output;
  auto vf_model = [&](double reference, const std::string& name) {
    nlohmann::json j = {{"format", "wattcal-vf-model"},
                        {"reference_mhz", reference},
                        {"static_w", 100.0},
                        {"constant_w", 0.0},
                        {"voltages",
                         {{{"f_core_mhz", 1000.0}, {"v_rel", 0.8}},
                          {{"f_core_mhz", 1200.0}, {"v_rel", 0.9}},
                          {{"f_core_mhz", reference}, {"v_rel", 1.0}}}}};
    return testing::WriteFile(*dir_ + "/" + name, j.dump(2));
  };
  const std::string good = vf_model(1980.0, "vf_1980.json");
  const std::string what_if = *dir_ + "/vf_what_if.csv", out = *dir_ + "/vf_apps.csv";
  const testing::CommandResult r =
      RunStage("wattcal-predict",
               {"--model", *dir_ + "/model.json", "--capture", kApps, "--gpu", kH100, "--out", out,
                "--vf-curve", good, "--at-clock", "1410", "--what-if-out", what_if});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("wattcal-clocks' voltages in " + good), std::string::npos) << r.output;
  int clock_rows = 0;
  for (const auto& row : CsvRows(what_if)) {
    EXPECT_EQ(row.at("vf_source"), "vf_model:" + good);
    if (row.at("setting") != "clock" || row.at("workload") != "sort") continue;
    ++clock_rows;
    // sort at 1410 MHz on v = 0.93: less power than at 1980 MHz, more time.
    EXPECT_NEAR(std::stod(row.at("f_core_mhz")), 1410.0, 1e-6);
    EXPECT_LT(std::stod(row.at("power_change_pct")), -10.0);
    EXPECT_GT(std::stod(row.at("time_change_pct")), 0.0);
  }
  EXPECT_EQ(clock_rows, 1);
  const std::string other = vf_model(1410.0, "vf_1410.json");
  testing::ExpectRefused(
      RunStage("wattcal-predict", {"--model", *dir_ + "/model.json", "--capture", kApps, "--gpu",
                                   kH100, "--out", out + ".2", "--vf-curve", other, "--at-clock",
                                   "1300", "--what-if-out", what_if + ".2"}),
      2, {other, "reference_mhz", "1410 MHz"}, {out + ".2", what_if + ".2"});
}

}  // namespace
}  // namespace wattcal
