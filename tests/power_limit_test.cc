// Power capping, flagged windows and the training range (SPEC.md "Real GPUs: ... power
// capping"): flagged rows left out of training and named, --keep-flagged, the refusal of a DVFS
// fit on one V-F pair, capped predictions (P = min(P_model, P_limit)) with the clock solved
// along a DVFS model's V-F curve, extrapolation flags, rows with identical utilisations but
// different power, the apps-predictions CSV and the metrics split by capping; old corpora
// (no flags column, no power limit) still read.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fit/calibrate.h"
#include "fit/identifiability.h"
#include "fit/training_rows.h"
#include "io/corpus_io.h"
#include "model/activity_prediction.h"
#include "model/model_io.h"
#include "model/power_limit.h"
#include "test_support.h"
#include "util/errors.h"
#include "crossval/cross_validation.h"
#include "validate/metrics.h"
#include "validate/prediction.h"

namespace wattcal {
namespace {

using testing::CommandResult;
using testing::FileExists;
using testing::HasProvenance;
using testing::ReadFile;
using testing::RunStage;
using testing::ScratchDir;
using testing::SeedFromTestName;
using testing::WriteFile;

// The fixed-frequency truth (TPDS Eq. 9): P = b0 + w_A U_A + w_B U_B + w_M U_M, in W.
constexpr double kB0W = 50.0, kWaW = 100.0, kWbW = 60.0, kWmW = 30.0;
constexpr double kLimitW = 300.0;        // the synthetic DVFS model's tests
constexpr double kCorpusLimitW = 160.0;  // the corpora's preamble

double TruthW(double a, double b, double m) { return kB0W + kWaW * a + kWbW * b + kWmW * m; }

std::string Row(const std::string& name, double power, double fc, double a, double b, double m,
                const std::string& flags) {
  return fmt::format("{},{},{},3000,{},{},{},{}\n", name, power, fc, flags, a, b, m);
}

// A one-pair training corpus (1000 MHz core, 3000 MHz memory) with the board limit in its
// preamble, 12 measured mixes, two rows under the power cap (at 900 MHz) and one whose clock
// moved; utilisations of A stay below 0.5.
std::string TrainingCsv(unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> util(0.0, 0.5);
  std::normal_distribution<double> noise(0.0, 0.3);
  std::string s =
      "# wattcal-tidy default_f_core_mhz=1000 default_f_mem_mhz=3000 power_limit_w=160\n"
      "benchmark,power_w,f_core_mhz,f_mem_mhz,flags,core:A,core:B,mem:M\n";
  for (int k = 1; k <= 12; ++k) {
    const double a = util(rng), b = 2 * util(rng), m = 2 * util(rng);
    s += Row(fmt::format("mix{:03d}", k), TruthW(a, b, m) + noise(rng), 1000, a, b, m, "");
  }
  s += Row("cap001", 160, 900, 0.5, 0.9, 0.9, "power_cap");
  s += Row("cap002", 160, 900, 0.45, 0.95, 0.8, "power_cap;clock_moved");
  s += Row("moved001", 120, 1000, 0.2, 0.3, 0.1, "clock_moved");
  return s;
}

// ---------------------------------------------------------------------------------------
// Corpus: flags column and power limit.

TEST(PowerLimitCorpus, FlagsAndLimitReadWriteAndRoundTrip) {
  const std::string dir = ScratchDir();
  const Corpus c = ReadCorpus(WriteFile(dir + "/t.csv", TrainingCsv(SeedFromTestName())));
  ASSERT_EQ(c.rows(), 15);
  EXPECT_TRUE(c.has_flags());
  EXPECT_EQ(c.power_limit_w, kCorpusLimitW);
  EXPECT_EQ(c.layout.num_components(), 3);  // flags is not a component
  EXPECT_TRUE(HasFlag(c, 12, kCorpusFlagPowerCap));
  EXPECT_TRUE(HasFlag(c, 13, kCorpusFlagClockMoved));
  EXPECT_FALSE(HasFlag(c, 14, kCorpusFlagPowerCap));
  EXPECT_FALSE(HasFlag(c, 0, kCorpusFlagPowerCap));
  EXPECT_EQ(RowFlags(c, 13), (std::vector<std::string>{"power_cap", "clock_moved"}));
  const std::string text = CorpusToTidyCsv(c);
  EXPECT_EQ(
      text.rfind("# wattcal-tidy default_f_core_mhz=1000 default_f_mem_mhz=3000 power_limit_w=160\n"
                 "benchmark,power_w,f_core_mhz,f_mem_mhz,flags,core:A,core:B,mem:M\n",
                 0),
      0u)
      << text;
  const Corpus back = ReadCorpus(WriteFile(dir + "/back.csv", text));
  EXPECT_EQ(CorpusToTidyCsv(back), text);
  EXPECT_EQ(back.Subset({13}).flags, std::vector<std::string>{"power_cap;clock_moved"});
}

TEST(PowerLimitCorpus, OldCorporaWithoutFlagsOrLimitStillRead) {
  const std::string dir = ScratchDir();
  const Corpus c = ReadCorpus(WriteFile(dir + "/old.csv",
                                        "# wattcal-tidy default_f_core_mhz=1000\n"
                                        "benchmark,power_w,f_core_mhz,A\nk1,100,1000,0.5\n"));
  EXPECT_FALSE(c.has_flags());
  EXPECT_FALSE(c.power_limit_w.has_value());
  EXPECT_FALSE(HasFlag(c, 0, kCorpusFlagPowerCap));
  EXPECT_EQ(CorpusToTidyCsv(c),
            "# wattcal-tidy "
            "default_f_core_mhz=1000\nbenchmark,power_w,f_core_mhz,core:A\nk1,100,1000,0.5\n");
}

TEST(PowerLimitCorpus, BadFlagsAndLimitsAreInputErrorsNamingLineAndField) {
  const std::string dir = ScratchDir();
  testing::ExpectInputError(
      [&] {
        ReadCorpus(WriteFile(dir + "/f.csv",
                             "benchmark,power_w,f_core_mhz,flags,A\n"
                             "k1,100,1000,power cap,0.5\n"));
      },
      2, {"f.csv:2", "flags", "power cap"});
  testing::ExpectInputError(
      [&] {
        ReadCorpus(WriteFile(dir + "/l.csv",
                             "# wattcal-tidy power_limit_w=-5\n"
                             "benchmark,power_w,f_core_mhz,A\nk1,100,1000,0.5\n"));
      },
      1, {"l.csv:1", "power_limit_w", "-5"});
}

// ---------------------------------------------------------------------------------------
// Calibration: flagged rows, one V-F pair, training range.

TEST(PowerLimitCalibrate, FlaggedRowsAreLeftOutAndNamed) {
  const std::string dir = ScratchDir();
  const Corpus c = ReadCorpus(WriteFile(dir + "/t.csv", TrainingCsv(SeedFromTestName())));
  const TrainingSelection s = SelectTrainingRows(c, /*keep_flagged=*/false);
  EXPECT_EQ(s.rows.rows(), 12);
  EXPECT_EQ(s.left_out, (std::vector<int>{12, 13, 14}));
  EXPECT_NE(
      s.message.find("left out 3 flagged rows (power_cap: cap001, cap002; clock_moved: moved001)"),
      std::string::npos)
      << s.message;
  CalibrationOptions o;
  o.method = FitMethod::kFixed;
  o.loss = FitLoss::kL2;
  const PowerModel m = Calibrate(c, o);
  EXPECT_EQ(m.fit.train_rows, 12);
  ASSERT_EQ(m.training_notes.size(), 1u);
  EXPECT_EQ(m.training_notes[0], s.message);
  EXPECT_EQ(m.power_limit_w, kCorpusLimitW);
  // Recovery of the truth (noise sd 0.3 W on 12 rows): within 3 W on the constant.
  EXPECT_NEAR(m.static_w[0], kB0W, 3.0);
  ASSERT_TRUE(m.training_range.known());
  EXPECT_LE(m.training_range.max_util_frac[0], 0.5);
  EXPECT_GT(m.training_range.max_power_w, 50.0);

  o.keep_flagged = true;
  const PowerModel kept = Calibrate(c, o);
  EXPECT_TRUE(kept.training_notes.empty());
  EXPECT_EQ(kept.fit.train_rows, 13);  // the fixed fit uses the rows at the default pair
  o.power_limit_w = 250.0;
  EXPECT_EQ(Calibrate(c, o).power_limit_w, 250.0);
}

// trained_up_to (the training range) is the largest utilisation of the rows the fit used: not a
// flagged row's, and for the fixed model (TPDS Eq. 9) not a row's off the default pair.
TEST(PowerLimitCalibrate, TrainingRangeIsThatOfTheRowsTrainedOn) {
  const std::string dir = ScratchDir();
  const Corpus c = ReadCorpus(WriteFile(
      dir + "/t.csv",
      TrainingCsv(SeedFromTestName()) + Row("cap003", 160, 1000, 0.99, 0.99, 0.99, "power_cap")));
  auto range_of = [&c](const std::vector<int>& rows) {
    std::vector<double> u(3, 0.0);
    double p = 0.0;
    for (int r : rows) {
      for (int i = 0; i < 3; ++i) u[i] = std::max(u[i], c.util_frac(r, i));
      p = std::max(p, c.power_w(r));
    }
    return std::make_pair(u, p);
  };
  CalibrationOptions o;
  o.method = FitMethod::kFixed;
  o.loss = FitLoss::kL2;
  const PowerModel m = Calibrate(c, o);
  const auto trained = range_of({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});  // the mixes
  EXPECT_EQ(m.training_range.max_util_frac, trained.first);
  EXPECT_EQ(m.training_range.max_power_w, trained.second);
  EXPECT_LT(m.training_range.max_util_frac[0], 0.5);  // cap003's 0.99 was not trained on
  // --keep-flagged: the flagged rows at the default pair too, still not those at 900 MHz.
  o.keep_flagged = true;
  const PowerModel kept = Calibrate(c, o);
  const auto at_default = range_of({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 14, 15});
  EXPECT_EQ(kept.training_range.max_util_frac, at_default.first);
  EXPECT_EQ(kept.training_range.max_power_w, at_default.second);
}

TEST(PowerLimitCalibrate, DvfsOnOneVfPairIsAnOptionError) {
  const std::string dir = ScratchDir();
  const Corpus c = ReadCorpus(WriteFile(dir + "/t.csv", TrainingCsv(SeedFromTestName())));
  CalibrationOptions o;  // dvfs
  try {
    Calibrate(c, o);
    FAIL() << "expected an OptionError";
  } catch (const OptionError& e) {
    EXPECT_STREQ(e.what(),
                 "DVFS needs at least two V-F pairs; this corpus has one (1000 MHz core, 3000 MHz "
                 "memory): use --method fixed");
  }
  CrossValidationOptions cv;
  cv.folds = 3;
  EXPECT_THROW(CrossValidate(c, o, PredictMode::kDvfs, cv), OptionError);
  o.method = FitMethod::kFixed;
  EXPECT_THROW(CrossValidate(c, o, PredictMode::kScaling, cv), OptionError);
}

TEST(PowerLimitCalibrate, ModelFileKeepsLimitRangeAndNotes) {
  const std::string dir = ScratchDir();
  const Corpus c = ReadCorpus(WriteFile(dir + "/t.csv", TrainingCsv(SeedFromTestName())));
  CalibrationOptions o;
  o.method = FitMethod::kFixed;
  const PowerModel m = Calibrate(c, o);
  const std::string json = ModelToJson(m);
  const PowerModel back = ReadModel(WriteFile(dir + "/m.json", json));
  EXPECT_EQ(back.power_limit_w, kCorpusLimitW);
  EXPECT_EQ(back.training_range.max_util_frac, m.training_range.max_util_frac);
  EXPECT_EQ(back.training_range.max_power_w, m.training_range.max_power_w);
  EXPECT_EQ(back.training_notes, m.training_notes);
  EXPECT_EQ(ModelToJson(back), json);
  // A model file without the new keys (written before them) reads with them unknown.
  nlohmann::json old = nlohmann::json::parse(json);
  old.erase("power_limit_w");
  old.erase("training_range");
  old.erase("training_notes");
  const PowerModel old_model = ReadModel(WriteFile(dir + "/old.json", old.dump(2)));
  EXPECT_FALSE(old_model.power_limit_w.has_value());
  EXPECT_FALSE(old_model.training_range.known());
}

// ---------------------------------------------------------------------------------------
// Capping and the clock solve.

// A synthetic DVFS model (TPDS Eqs. 4-6): core levels 500..1000 MHz (v 0.8..1), one memory
// level; P(U, f) rises with f, so P(f*) = P_limit has one solution.
PowerModel SyntheticDvfsModel() {
  PowerModel m;
  m.method = FitMethod::kDvfs;
  m.layout.domains = {{"core", 1000, {"A", "B"}}, {"mem", 3000, {"M"}}};
  m.freq_levels_mhz = {{500, 750, 1000}, {3000}};
  m.voltage_rel = {{0.8, 0.9, 1.0}, {1.0}};
  m.static_w = {30.0, 10.0};
  m.idle_dyn_w_per_mhz = {0.05, 0.002};
  m.component_w_per_mhz = {0.2, 0.1, 0.01};
  m.training_range.max_util_frac = {0.5, 0.8, 0.8};
  m.training_range.max_power_w = 200.0;
  return m;
}

TEST(PowerLimitPredict, CappedPredictionIsTheLimitAndTheClockMeetsIt) {
  const PowerModel m = SyntheticDvfsModel();
  const double u[3] = {1.0, 0.5, 0.5};
  const double f[2] = {1000, 3000};
  const double uncapped = m.Predict(u, f);  // 30 + 50 + 200 + 50 + 10 + 6 + 15 = 361 W
  ASSERT_NEAR(uncapped, 361.0, 1e-9);
  const CappedPower p = ApplyPowerLimit(m, u, f, kLimitW);
  EXPECT_TRUE(p.capped);
  EXPECT_EQ(p.predicted_w, kLimitW);
  EXPECT_EQ(p.uncapped_w, uncapped);
  ASSERT_TRUE(std::isfinite(p.f_core_mhz));
  EXPECT_GT(p.f_core_mhz, 500.0);
  EXPECT_LT(p.f_core_mhz, 1000.0);
  double at[2] = {p.f_core_mhz, 3000};
  // Within the solve's 0.01 MHz: |dP/df| < 1 W/MHz here, so P(f*) within 0.05 W under the limit.
  EXPECT_LE(m.Predict(u, at), kLimitW);
  EXPECT_NEAR(m.Predict(u, at), kLimitW, 0.05);
  // Under the limit: untouched; no limit: untouched.
  EXPECT_FALSE(ApplyPowerLimit(m, u, f, 400.0).capped);
  EXPECT_FALSE(ApplyPowerLimit(m, u, f, std::nullopt).capped);
  EXPECT_EQ(ApplyPowerLimit(m, u, f, std::nullopt).predicted_w, uncapped);
  // Even the lowest level exceeds a 100 W limit: no clock meets it.
  EXPECT_TRUE(std::isnan(CapCoreFrequencyMhz(m, u, f, 100.0)));
}

TEST(PowerLimitPredict, ExtrapolationFlagsNameWorkloadAndComponent) {
  const PowerModel m = SyntheticDvfsModel();
  const double inside[3] = {0.6, 0.8, 0.8};  // 0.6 <= 1.25 x 0.5 + 0.05
  const double beyond[3] = {0.7, 0.8, 0.8};  // 0.7 > 0.675
  EXPECT_TRUE(ExtrapolationFlags(m, inside, 250.0).empty());
  EXPECT_EQ(ExtrapolationFlags(m, beyond, 250.0),
            std::vector<std::string>{"util_beyond_training:A"});
  EXPECT_EQ(ExtrapolationFlags(m, inside, 6.28e6),
            std::vector<std::string>{"power_beyond_training"});
  const std::string note = ExtrapolationMessage(m, "gemm_big", beyond, 6.28e6);
  EXPECT_NE(note.find("gemm_big: A utilisation 0.7"), std::string::npos) << note;
  EXPECT_NE(note.find("predicted 6.28e+06 W > 1.5 x training max 200 W"), std::string::npos)
      << note;

  Corpus act;
  act.path = "act.csv";
  act.kind = CorpusKind::kActivity;
  act.layout = m.layout;
  act.benchmark = {"gemm_big"};
  act.line = {2};
  act.freq_mhz = Eigen::MatrixXd(1, 2);
  act.freq_mhz << 1000, 3000;
  act.util_frac = Eigen::MatrixXd(1, 3);
  act.util_frac << 1.0, 0.5, 0.5;
  const std::vector<ActivityPrediction> rows = PredictActivity(m, act, false, kLimitW);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].predicted_w, kLimitW);
  // A, used beyond what training reached, carries more than 10% of the power: extrapolates:A.
  EXPECT_EQ(rows[0].flags, "capped;util_beyond_training:A;power_beyond_training;extrapolates:A");
  const std::string csv = ActivityPredictionsToCsv(m, rows, false);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "benchmark,f_core_mhz,f_mem_mhz,predicted_w,uncapped_w,capped,capped_f_core_mhz,flags");
  EXPECT_NE(ActivityExtrapolationWarning(rows).find("gemm_big: A utilisation 1"),
            std::string::npos);
}

// ---------------------------------------------------------------------------------------
// Identifiability.

TEST(PowerLimitIdentifiability, IdenticalUtilisationsWithDifferentPowerAreNamed) {
  const std::string dir = ScratchDir();
  std::string s = "benchmark,power_w,f_core_mhz,A,B\n";
  const double power[9] = {133, 150, 170, 190, 220, 250, 280, 310, 346};
  for (int k = 0; k < 9; ++k) {
    s += fmt::format("sm_sweep_int_add_{:03d},{},1980,0.25,0.5\n", k + 1, power[k]);
  }
  s += "other_001,120,1980,0.3,0.5\nother_002,121,1980,0.3,0.5\n";  // within 5%: fine
  const Corpus c = ReadCorpus(WriteFile(dir + "/sweep.csv", s));
  const std::vector<IndistinguishableRows> groups = FindIndistinguishableRows(c);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].rows.size(), 9u);
  EXPECT_EQ(groups[0].message,
            "rows sm_sweep_int_add_001 ... sm_sweep_int_add_009 have identical utilisations but "
            "power from 133 to 346 W: the model cannot tell them apart");
}

// ---------------------------------------------------------------------------------------
// Validation: every workload gets a row; apps CSV; metrics split.

std::string HeldoutCsv() {
  return "# wattcal-tidy default_f_core_mhz=1000 default_f_mem_mhz=3000 power_limit_w=160\n"
         "benchmark,power_w,f_core_mhz,f_mem_mhz,flags,core:A,core:B,mem:M\n" +
         Row("app1", TruthW(0.2, 0.3, 0.4), 1000, 0.2, 0.3, 0.4, "") +
         Row("app2", TruthW(0.4, 0.6, 0.2), 1000, 0.4, 0.6, 0.2, "") +
         // Measured at a throttled clock under the cap; the model at full clock exceeds the 160 W limit.
         Row("hot", 160, 880, 0.5, 1.0, 1.0, "power_cap") +
         // Far beyond the training range of A.
         Row("wide", TruthW(1.0, 0.1, 0.1), 1000, 1.0, 0.1, 0.1, "");
}

TEST(PowerLimitValidate, FixedModeGivesEveryWorkloadARowCappedAtTheLimit) {
  const std::string dir = ScratchDir();
  const Corpus train = ReadCorpus(WriteFile(dir + "/t.csv", TrainingCsv(SeedFromTestName())));
  CalibrationOptions o;
  o.method = FitMethod::kFixed;
  const PowerModel m = Calibrate(train, o);
  const Corpus heldout = ReadCorpus(WriteFile(dir + "/h.csv", HeldoutCsv()));
  const std::vector<PredictionRow> rows =
      PredictHeldout(m, heldout, PredictMode::kFixed, kCorpusLimitW);
  ASSERT_EQ(rows.size(), 4u);
  const PredictionRow& hot = rows[2];
  EXPECT_EQ(hot.benchmark, "hot");
  EXPECT_TRUE(hot.capped);
  EXPECT_TRUE(hot.measured_capped);
  EXPECT_EQ(hot.predicted_w, kCorpusLimitW);
  EXPECT_GT(hot.uncapped_w, kCorpusLimitW);
  EXPECT_EQ(hot.flags, "capped;predicted_at_reference_clock");
  EXPECT_TRUE(std::isnan(hot.f_run_core_mhz));  // a fixed model has no V-F curve
  EXPECT_NE(rows[3].flags.find("util_beyond_training:A"), std::string::npos);
  EXPECT_NE(ExtrapolationWarning(rows).find("wide: A utilisation 1"), std::string::npos);

  // dvfs mode: the flagged row is predicted at the reference clock, an unflagged off-range row
  // is an error naming the workload.
  EXPECT_EQ(PredictHeldout(m, heldout, PredictMode::kDvfs, kCorpusLimitW).size(), 4u);
  Corpus unflagged = heldout;
  unflagged.flags[2] = "";
  testing::ExpectInputError(
      [&] { PredictHeldout(m, unflagged, PredictMode::kDvfs, kCorpusLimitW); }, 5,
      {"f_core_mhz", "'hot' at 880 MHz", "not flagged power_cap"});

  const std::string apps = AppsPredictionsToCsv(rows, m.DefaultFrequencies());
  EXPECT_EQ(apps.substr(0, apps.find('\n')),
            "workload,measured_w,predicted_w,uncapped_w,capped,error_pct,measured_capped,"
            "f_core_mhz,flags");
  EXPECT_NE(apps.find("\nhot,160.000000,160.000000,"), std::string::npos) << apps;
  EXPECT_NE(apps.find(",1,0.000000,1,,capped;predicted_at_reference_clock\n"), std::string::npos)
      << apps;

  const ValidationMetrics metrics = ComputeValidationMetrics(rows);
  EXPECT_TRUE(metrics.has_capping);
  EXPECT_EQ(metrics.capped.points, 1);
  EXPECT_EQ(metrics.full_clock.points, 3);
  EXPECT_EQ(metrics.capped.mape_pct, 0.0);
  const nlohmann::json j = MetricsToJson(metrics, MetricsOptions());
  ASSERT_TRUE(j.contains("by_capping"));
  EXPECT_EQ(j["by_capping"]["capped"]["points"], 1);
  EXPECT_EQ(j["by_capping"]["full_clock"]["points"], 3);
  EXPECT_EQ(j["by_capping"]["all"]["points"], 4);
  // Without capping the metrics keep their old keys.
  EXPECT_FALSE(MetricsToJson(ComputeValidationMetrics({rows[0], rows[1]}), MetricsOptions())
                   .contains("by_capping"));
}

// ---------------------------------------------------------------------------------------
// Stages, end to end.

TEST(PowerLimitStages, CalibrateNamesFlaggedRowsAndRefusesSinglePairDvfs) {
  const std::string dir = ScratchDir();
  const std::string train = WriteFile(dir + "/t.csv", TrainingCsv(SeedFromTestName()));
  CommandResult r = RunStage("wattcal-calibrate", {"--train", train, "--out", dir + "/dvfs.json"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("DVFS needs at least two V-F pairs; this corpus has one (1000 MHz core, "
                          "3000 MHz memory): use --method fixed"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(FileExists(dir + "/dvfs.json"));
  EXPECT_FALSE(HasProvenance(dir + "/dvfs.json"));

  r = RunStage("wattcal-calibrate",
               {"--train", train, "--method", "fixed", "--out", dir + "/m.json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(
      r.output.find("left out 3 flagged rows (power_cap: cap001, cap002; clock_moved: moved001)"),
      std::string::npos)
      << r.output;
  const nlohmann::json model = nlohmann::json::parse(ReadFile(dir + "/m.json"));
  EXPECT_EQ(model["power_limit_w"], kCorpusLimitW);
  EXPECT_EQ(model["training_range"]["max_util_frac"].size(), 3u);
  const nlohmann::json manifest =
      nlohmann::json::parse(ReadFile(testing::ProvenancePath(dir + "/m.json")));
  EXPECT_NE(manifest.dump().find("cap001"), std::string::npos);

  r = RunStage("wattcal-calibrate", {"--train", train, "--method", "fixed", "--keep-flagged",
                                     "--power-limit-w", "280", "--out", dir + "/k.json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("left out"), std::string::npos) << r.output;
  EXPECT_EQ(nlohmann::json::parse(ReadFile(dir + "/k.json"))["power_limit_w"], 280.0);
}

TEST(PowerLimitStages, CalibrateWarnsAboutIdenticalUtilisations) {
  const std::string dir = ScratchDir();
  std::string s = TrainingCsv(SeedFromTestName());
  s += Row("sm_sweep_001", 133, 1000, 0.25, 0.5, 0.5, "") +
       Row("sm_sweep_002", 346, 1000, 0.25, 0.5, 0.5, "");
  const std::string train = WriteFile(dir + "/t.csv", s);
  const CommandResult r = RunStage(
      "wattcal-calibrate", {"--train", train, "--method", "fixed", "--out", dir + "/m.json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(
      r.output.find("rows sm_sweep_001 and sm_sweep_002 have identical utilisations but power "
                    "from 133 to 346 W: the model cannot tell them apart"),
      std::string::npos)
      << r.output;
}

TEST(PowerLimitStages, ValidateWritesAppsPredictionsAndTheCappingSplit) {
  const std::string dir = ScratchDir();
  const std::string train = WriteFile(dir + "/t.csv", TrainingCsv(SeedFromTestName()));
  const std::string heldout = WriteFile(dir + "/h.csv", HeldoutCsv());
  ASSERT_EQ(RunStage("wattcal-calibrate",
                     {"--train", train, "--method", "fixed", "--out", dir + "/m.json"})
                .exit_code,
            0);
  const std::vector<std::string> args = {
      "--model",   dir + "/m.json", "--heldout",          heldout,
      "--mode",    "fixed",         "--predictions",      dir + "/p.csv",
      "--metrics", dir + "/x.json", "--apps-predictions", dir + "/apps.csv"};
  CommandResult r = RunStage("wattcal-validate", args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("wide: A utilisation 1"), std::string::npos) << r.output;
  const std::string apps = ReadFile(dir + "/apps.csv");
  EXPECT_EQ(
      apps.rfind("workload,measured_w,predicted_w,uncapped_w,capped,error_pct,measured_capped,"
                 "f_core_mhz,flags\napp1,",
                 0),
      0u)
      << apps;
  EXPECT_NE(apps.find("\nhot,160.000000,160.000000,"), std::string::npos) << apps;
  EXPECT_TRUE(HasProvenance(dir + "/apps.csv"));
  const nlohmann::json metrics = nlohmann::json::parse(ReadFile(dir + "/x.json"));
  EXPECT_EQ(metrics["by_capping"]["capped"]["points"], 1);
  // Reruns are byte-identical.
  const std::string first = apps;
  ASSERT_EQ(RunStage("wattcal-validate", args).exit_code, 0);
  EXPECT_EQ(ReadFile(dir + "/apps.csv"), first);

  // An unflagged workload off the model's clock in dvfs mode: exit 2, nothing written.
  const std::string bad =
      WriteFile(dir + "/bad.csv",
                "# wattcal-tidy default_f_core_mhz=1000 default_f_mem_mhz=3000\n"
                "benchmark,power_w,f_core_mhz,f_mem_mhz,core:A,core:B,mem:M\n"
                "slow,100,700,3000,0.2,0.2,0.2\n");
  r = RunStage("wattcal-validate", {"--model", dir + "/m.json", "--heldout", bad, "--mode", "dvfs",
                                    "--predictions", dir + "/p2.csv", "--metrics", dir + "/x2.json",
                                    "--apps-predictions", dir + "/apps2.csv"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("bad.csv:3"), std::string::npos) << r.output;
  EXPECT_FALSE(FileExists(dir + "/p2.csv"));
  EXPECT_FALSE(FileExists(dir + "/apps2.csv"));
}

TEST(PowerLimitStages, PredictCapsAtTheLimit) {
  const std::string dir = ScratchDir();
  const std::string train = WriteFile(dir + "/t.csv", TrainingCsv(SeedFromTestName()));
  ASSERT_EQ(RunStage("wattcal-calibrate",
                     {"--train", train, "--method", "fixed", "--out", dir + "/m.json"})
                .exit_code,
            0);
  const std::string act = WriteFile(
      dir + "/a.csv", "benchmark,core:A,core:B,mem:M\nsmall,0.1,0.1,0.1\nbig,0.5,1.0,1.0\n");
  const CommandResult r = RunStage(
      "wattcal-predict",
      {"--model", dir + "/m.json", "--activity", act, "--mode", "fixed", "--out", dir + "/p.csv"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string p = ReadFile(dir + "/p.csv");
  EXPECT_EQ(p.substr(0, p.find('\n')),
            "benchmark,f_core_mhz,f_mem_mhz,predicted_w,uncapped_w,capped,capped_f_core_mhz,flags")
      << p;
  EXPECT_NE(p.find("\nbig,1000,3000,160.000000,"), std::string::npos) << p;
}

}  // namespace
}  // namespace wattcal
