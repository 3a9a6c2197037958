// Bootstrap confidence intervals of the fixed-frequency calibration (issue 15): a synthetic
// corpus with known coefficients and noise, resampled by benchmark; the intervals, their model
// JSON key, determinism and the command line.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "fit/bootstrap.h"
#include "fit/calibrate.h"
#include "io/corpus_io.h"
#include "model/activity_prediction.h"
#include "model/app_prediction.h"
#include "model/model_io.h"
#include "model/model_summary.h"
#include "model/prediction_interval.h"
#include "test_support.h"
#include "util/errors.h"
#include "util/stats.h"

namespace wattcal {
namespace {

constexpr double kCoreMhz = 1000.0;
constexpr double kMemMhz = 2000.0;
constexpr double kStaticW = 45.0;
// Power at full use, W (gamma_i = omega_i / f of the component's domain).
const std::vector<double> kOmegaW = {30.0, 55.0, 20.0, 70.0, 40.0};

// A standard normal draw from raw mt19937_64 output (Box-Muller), the same on every library.
double Normal(std::mt19937_64& gen) {
  const double u1 = (static_cast<double>(gen() >> 11) + 0.5) * 0x1.0p-53;
  const double u2 = (static_cast<double>(gen() >> 11) + 0.5) * 0x1.0p-53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

// `benchmarks` benchmarks of 3 launches each at the default pair (plus one row per benchmark at
// another core clock, which the fixed model leaves out), P = static + sum omega_i U_i + a
// per-benchmark offset (sd 2 W) + per-launch noise (sd 1 W).
Corpus SyntheticCorpus(int benchmarks, uint64_t seed) {
  Corpus c;
  c.path = "synthetic_bootstrap.csv";
  c.kind = CorpusKind::kMeasured;
  c.layout.domains = {{"core", kCoreMhz, {"FP32", "FP64", "INT", "SFU"}},
                      {"mem", kMemMhz, {"DRAM"}}};
  c.components_line = 1;
  c.defaults_line = 0;
  const int nc = 5;
  const int rows = benchmarks * 4;
  c.power_w.resize(rows);
  c.freq_mhz.resize(rows, 2);
  c.util_frac.resize(rows, nc);
  std::mt19937_64 gen(seed);
  int r = 0;
  for (int b = 0; b < benchmarks; ++b) {
    std::vector<double> u(nc);
    for (int i = 0; i < nc; ++i) u[i] = static_cast<double>(gen() >> 11) * 0x1.0p-53;
    const double offset = 2.0 * Normal(gen);
    for (int k = 0; k < 4; ++k, ++r) {
      c.benchmark.push_back("bench" + std::to_string(b));
      c.line.push_back(r + 2);
      c.freq_mhz(r, 0) = k < 3 ? kCoreMhz : 800.0;
      c.freq_mhz(r, 1) = kMemMhz;
      double p = kStaticW + offset + 1.0 * Normal(gen);
      for (int i = 0; i < nc; ++i) {
        c.util_frac(r, i) = u[i];
        p += kOmegaW[i] * u[i] * (k < 3 ? 1.0 : 0.8);
      }
      c.power_w(r) = p;
    }
  }
  return c;
}

CalibrationOptions FixedOptions(int replicates) {
  CalibrationOptions o;
  o.method = FitMethod::kFixed;
  o.loss = FitLoss::kL2;
  o.show_progress = false;
  o.bootstrap_replicates = replicates;
  return o;
}

TEST(Bootstrap, UniformIndexIsFixedAndInRange) {
  std::mt19937_64 a(BootstrapReplicateSeed(1, 0)), b(BootstrapReplicateSeed(1, 0));
  std::vector<int> counts(7, 0);
  for (int k = 0; k < 7000; ++k) {
    const uint64_t i = UniformIndex(a, 7);
    ASSERT_LT(i, 7u);
    ASSERT_EQ(i, UniformIndex(b, 7));
    ++counts[i];
  }
  for (int n : counts) EXPECT_GT(n, 800);
  EXPECT_NE(BootstrapReplicateSeed(1, 0), BootstrapReplicateSeed(1, 1));
  EXPECT_NE(BootstrapReplicateSeed(1, 0), BootstrapReplicateSeed(2, 0));
}

TEST(Bootstrap, IntervalsCoverTheTruth) {
  const Corpus corpus = SyntheticCorpus(40, 15);
  const PowerModel model = Calibrate(corpus, FixedOptions(400));
  const CoefficientCi& ci = model.coefficient_ci95;
  ASSERT_TRUE(ci.known());
  EXPECT_EQ(ci.bootstrap_replicates, 400);
  EXPECT_EQ(ci.seed, 1u);
  ASSERT_EQ(ci.static_w.size(), 2u);
  ASSERT_EQ(ci.idle_dyn_w_per_mhz.size(), 2u);
  ASSERT_EQ(ci.component_w_per_mhz.size(), 5u);
  int covered = 0;
  auto covers = [](const std::pair<double, double>& p, double truth) {
    return p.first <= truth && truth <= p.second;
  };
  covered += covers(ci.static_w[0], kStaticW);

  const std::vector<double> freq = {kCoreMhz, kCoreMhz, kCoreMhz, kCoreMhz, kMemMhz};
  for (size_t i = 0; i < kOmegaW.size(); ++i) {
    const auto& p = ci.component_w_per_mhz[i];
    EXPECT_LE(p.first, p.second);
    EXPECT_LE(p.first, model.component_w_per_mhz[i] * 1.0000001 + 1e-12) << i;
    EXPECT_GE(p.second, model.component_w_per_mhz[i] * 0.9999999 - 1e-12) << i;
    // Informative: narrower than the coefficient itself.
    EXPECT_LT(p.second - p.first, kOmegaW[i] / freq[i]) << i;
    covered += covers(p, kOmegaW[i] / freq[i]);
  }
  // 6 identifiable coefficients at nominal 95% (percentile intervals with 40 benchmarks cover
  // a little less): most cover the truth.
  EXPECT_GE(covered, 4);
  // The fixed model has no memory static power and no idle dynamic terms: [0, 0].
  EXPECT_EQ(ci.static_w[1], std::make_pair(0.0, 0.0));
  EXPECT_EQ(ci.idle_dyn_w_per_mhz[0], std::make_pair(0.0, 0.0));
}

TEST(Bootstrap, CoverageOverManyCorpora) {
  // 20 corpora x 6 identifiable coefficients: the nominal 95% intervals cover the truth in at
  // least 80% of the 120 cases.
  int covered = 0, total = 0;
  for (uint64_t seed = 100; seed < 120; ++seed) {
    const PowerModel m = Calibrate(SyntheticCorpus(40, seed), FixedOptions(200));
    const CoefficientCi& ci = m.coefficient_ci95;
    covered += ci.static_w[0].first <= kStaticW && kStaticW <= ci.static_w[0].second;
    ++total;
    for (size_t i = 0; i < kOmegaW.size(); ++i) {
      const double truth = kOmegaW[i] / (i < 4 ? kCoreMhz : kMemMhz);
      covered +=
          ci.component_w_per_mhz[i].first <= truth && truth <= ci.component_w_per_mhz[i].second;
      ++total;
    }
  }
  EXPECT_GE(covered, total * 8 / 10) << covered << " of " << total;
  std::printf("bootstrap coverage: %d of %d\n", covered, total);
}

TEST(Bootstrap, IndependentOfThreadCountAndRepeatable) {
  const Corpus corpus = SyntheticCorpus(20, 3);
  CalibrationOptions one = FixedOptions(60);
  CalibrationOptions two = one;
  two.threads = 2;
  const std::string a = ModelToJson(Calibrate(corpus, one));
  EXPECT_EQ(a, ModelToJson(Calibrate(corpus, one)));
  EXPECT_EQ(a, ModelToJson(Calibrate(corpus, two)));
  CalibrationOptions other_seed = one;
  other_seed.bootstrap_seed = 2;
  EXPECT_NE(a, ModelToJson(Calibrate(corpus, other_seed)));
}

TEST(Bootstrap, NoReplicatesNoKey) {
  const PowerModel model = Calibrate(SyntheticCorpus(12, 4), FixedOptions(0));
  EXPECT_FALSE(model.coefficient_ci95.known());
  EXPECT_EQ(ModelToJson(model).find("coefficient_ci95"), std::string::npos);
  EXPECT_EQ(FormatModelSummary(model).find("bootstrap"), std::string::npos);
}

TEST(Bootstrap, RefusedForDvfs) {
  CalibrationOptions o = FixedOptions(10);
  o.method = FitMethod::kDvfs;
  std::string error;
  EXPECT_FALSE(o.Check(&error));
  EXPECT_NE(error.find("--bootstrap"), std::string::npos) << error;
  EXPECT_THROW(Calibrate(SyntheticCorpus(12, 4), o), OptionError);
}

TEST(Bootstrap, ModelJsonRoundTrip) {
  const PowerModel model = Calibrate(SyntheticCorpus(15, 5), FixedOptions(30));
  const std::string text = ModelToJson(model);
  EXPECT_NE(text.find("\"coefficient_ci95\""), std::string::npos);
  const std::string path =
      testing::WriteFile(testing::ScratchDir() + "/bootstrap_model.json", text);
  const PowerModel back = ReadModel(path);
  EXPECT_EQ(back.coefficient_ci95.bootstrap_replicates, 30);
  EXPECT_EQ(back.coefficient_ci95.seed, 1u);
  EXPECT_EQ(back.coefficient_ci95.static_w, model.coefficient_ci95.static_w);
  EXPECT_EQ(back.coefficient_ci95.idle_dyn_w_per_mhz, model.coefficient_ci95.idle_dyn_w_per_mhz);
  EXPECT_EQ(back.coefficient_ci95.component_w_per_mhz, model.coefficient_ci95.component_w_per_mhz);
  EXPECT_EQ(ModelToJson(back), text);
  EXPECT_NE(FormatModelSummary(back).find("bootstrap 95% intervals (30 resamples"),
            std::string::npos);
  // A broken interval is an error naming it.
  std::string bad = text;
  const size_t at = bad.find("\"component_w_per_mhz\": [\n      [");
  ASSERT_NE(at, std::string::npos);
  bad.replace(bad.find('[', at + 30), 1, "[1e300, ");
  testing::WriteFile(path, bad);
  try {
    ReadModel(path);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("coefficient_ci95.component_w_per_mhz[0]"),
              std::string::npos)
        << e.what();
  }
}

TEST(Bootstrap, CommandLine) {
  const std::string dir = testing::ScratchDir();
  const std::string train =
      testing::WriteFile(dir + "/bootstrap_train.csv", CorpusToTidyCsv(SyntheticCorpus(15, 6)));
  const testing::CommandResult a = testing::RunStage(
      "wattcal-calibrate", {"--train", train, "--out", dir + "/a.json", "--method", "fixed",
                            "--bootstrap", "40", "--seed", "7"});
  ASSERT_EQ(a.exit_code, 0) << a.output;
  const testing::CommandResult b = testing::RunStage(
      "wattcal-calibrate", {"--train", train, "--out", dir + "/b.json", "--method", "fixed",
                            "--bootstrap", "40", "--seed", "7", "--threads", "2"});
  ASSERT_EQ(b.exit_code, 0) << b.output;
  const std::string model_a = testing::ReadFile(dir + "/a.json");
  EXPECT_EQ(model_a, testing::ReadFile(dir + "/b.json"));
  EXPECT_NE(model_a.find("\"seed\": 7"), std::string::npos);
  EXPECT_NE(a.output.find("bootstrap 95% intervals (40 resamples"), std::string::npos) << a.output;
  const testing::CommandResult none = testing::RunStage(
      "wattcal-calibrate", {"--train", train, "--out", dir + "/c.json", "--method", "fixed"});
  ASSERT_EQ(none.exit_code, 0) << none.output;
  EXPECT_EQ(testing::ReadFile(dir + "/c.json").find("coefficient_ci95"), std::string::npos);
  const testing::CommandResult dvfs = testing::RunStage(
      "wattcal-calibrate",
      {"--train", train, "--out", dir + "/d.json", "--method", "dvfs", "--bootstrap", "10"});
  EXPECT_EQ(dvfs.exit_code, 1);  // an option error (bootstrap is for the fixed method)
  EXPECT_NE(dvfs.output.find("--bootstrap"), std::string::npos) << dvfs.output;
  EXPECT_FALSE(testing::FileExists(dir + "/d.json"));
}

// ---------------------------------------------------------------------------------------
// The prediction interval (model/prediction_interval.h): the replicates and out-of-bag errors
// that --bootstrap keeps, and what predict makes of them.

// The rows of `c` at the default pair as an activity file (utilisations only).
Corpus ActivityOf(const Corpus& c) {
  Corpus a = c.Subset(c.RowsAtDefault());
  a.kind = CorpusKind::kActivity;
  a.power_w.resize(0);
  return a;
}

TEST(PredictionInterval, HeldOutBenchmarksFallInsideAbout95In100) {
  // Trained on 40 benchmarks; 150 unseen benchmarks of the same kind predicted.
  const PowerModel model = Calibrate(SyntheticCorpus(40, 15), FixedOptions(200));
  const PredictionIntervalData& pi = model.prediction_interval;
  ASSERT_TRUE(pi.known());
  EXPECT_EQ(pi.replicate_coefficients.size(), 200u);
  EXPECT_EQ(pi.oob_ratio_quantiles.size(), 199u);
  // About 37% of 40 benchmarks x 3 rows out of bag per replicate.
  EXPECT_GT(pi.oob_predictions, 200 * 120 * 30 / 100);
  EXPECT_LT(pi.oob_predictions, 200 * 120 * 45 / 100);
  const Corpus heldout = SyntheticCorpus(150, 99);
  const Corpus at_default = heldout.Subset(heldout.RowsAtDefault());
  const std::vector<ActivityPrediction> p =
      PredictActivity(model, ActivityOf(heldout), /*fixed=*/true);
  ASSERT_EQ(static_cast<int>(p.size()), at_default.rows());
  int inside = 0;
  std::vector<double> width_pct, abs_error_pct;
  for (int r = 0; r < at_default.rows(); ++r) {
    const ActivityPrediction& q = p[r];
    ASSERT_TRUE(std::isfinite(q.predicted_w_lo)) << r;
    EXPECT_LE(q.predicted_w_lo, q.predicted_w);
    EXPECT_GE(q.predicted_w_hi, q.predicted_w);
    const double measured = at_default.power_w(r);
    inside += q.predicted_w_lo <= measured && measured <= q.predicted_w_hi;
    width_pct.push_back(100.0 * (q.predicted_w_hi - q.predicted_w_lo) / q.predicted_w);
    abs_error_pct.push_back(100.0 * std::fabs(q.predicted_w - measured) / measured);
  }
  const double coverage = static_cast<double>(inside) / at_default.rows();
  const double median_width = Quantile(width_pct, 0.5);
  const double median_error = Quantile(abs_error_pct, 0.5);
  std::printf("held-out coverage %.3f, median width %.2f%%, median |error| %.2f%%\n", coverage,
              median_width, median_error);
  EXPECT_GE(coverage, 0.90);
  // Not vastly wider than the error: for normal errors a 95% interval is 3.92 sd wide and the
  // median |error| 0.67 sd (a ratio of 5.8); the replicates' spread adds a little.
  EXPECT_LT(median_width, 9.0 * median_error);
}

TEST(PredictionInterval, WideWhereAComponentIsPoorlyPinned) {
  // FP64 (column 1) is used by one benchmark only: the replicates that leave it out cannot see
  // its power, so a workload that rests on FP64 gets a wide interval, one that does not a narrow
  // one.
  Corpus c = SyntheticCorpus(40, 21);
  for (int r = 0; r < c.rows(); ++r) {
    if (c.benchmark[r] == "bench0") continue;
    c.power_w(r) -= kOmegaW[1] * c.util_frac(r, 1) * (c.freq_mhz(r, 0) == kCoreMhz ? 1.0 : 0.8);
    c.util_frac(r, 1) = 0.0;
  }
  const PowerModel model = Calibrate(c, FixedOptions(200));
  const std::vector<double> f = {kCoreMhz, kMemMhz};
  auto width = [&](const std::vector<double>& u) {
    const double w = model.Predict(u.data(), f.data());
    const PowerInterval i = PredictionInterval95(model, u.data(), f.data(), std::nullopt, w);
    return (i.hi_w - i.lo_w) / w;
  };
  const double without = width({0.5, 0.0, 0.5, 0.5, 0.5});
  const double with = width({0.5, 1.0, 0.5, 0.5, 0.5});
  EXPECT_GT(with, 2.0 * without) << with << " vs " << without;
}

TEST(PredictionInterval, CappedIntervalIsCappedAndNoneWithoutReplicates) {
  const PowerModel model = Calibrate(SyntheticCorpus(40, 15), FixedOptions(100));
  const std::vector<double> f = {kCoreMhz, kMemMhz};
  const std::vector<double> u = {1.0, 1.0, 1.0, 1.0, 1.0};  // 45 + 215 W
  const double limit = 200.0;
  const PowerInterval capped = PredictionInterval95(model, u.data(), f.data(), limit, limit);
  EXPECT_LE(capped.hi_w, limit);
  EXPECT_LT(capped.lo_w, limit);
  EXPECT_GT(capped.lo_w, 0.8 * limit);
  // No replicates (no --bootstrap), a DVFS model, a ported one: no interval, and a reason.
  const PowerModel plain = Calibrate(SyntheticCorpus(40, 15), FixedOptions(0));
  EXPECT_FALSE(plain.prediction_interval.known());
  EXPECT_FALSE(PredictionInterval95(plain, u.data(), f.data(), std::nullopt, 260.0).known());
  EXPECT_NE(NoPredictionIntervalReason(plain).find("--bootstrap"), std::string::npos);
  EXPECT_EQ(NoPredictionIntervalReason(model), "");
  PowerModel ported = model;
  ported.trained_on += std::string(PowerModel::kPortedMarker) + "x to y)";
  EXPECT_FALSE(PredictionInterval95(ported, u.data(), f.data(), std::nullopt, 260.0).known());
  EXPECT_NE(NoPredictionIntervalReason(ported).find("ported"), std::string::npos);
}

TEST(PredictionInterval, ModelFileRoundTripAndBrokenQuantiles) {
  const PowerModel model = Calibrate(SyntheticCorpus(15, 5), FixedOptions(30));
  const std::string text = ModelToJson(model);
  EXPECT_NE(text.find("\"prediction_interval\""), std::string::npos);
  const std::string path = testing::WriteFile(testing::ScratchDir() + "/pi_model.json", text);
  const PowerModel back = ReadModel(path);
  EXPECT_EQ(back.prediction_interval.replicate_coefficients,
            model.prediction_interval.replicate_coefficients);
  EXPECT_EQ(back.prediction_interval.oob_ratio_quantiles,
            model.prediction_interval.oob_ratio_quantiles);
  EXPECT_EQ(ModelToJson(back), text);
  EXPECT_EQ(
      ModelToJson(Calibrate(SyntheticCorpus(15, 5), FixedOptions(0))).find("prediction_interval"),
      std::string::npos);
  // Quantiles that decrease are an error naming the field.
  std::string bad = text;
  const size_t at = bad.find("\"oob_ratio_quantiles\": [");
  ASSERT_NE(at, std::string::npos);
  const size_t first = bad.find_first_of("0123456789", at + 24);
  bad.insert(first, "9");
  testing::WriteFile(path, bad);
  try {
    ReadModel(path);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("prediction_interval.oob_ratio_quantiles[1]"),
              std::string::npos)
        << e.what();
  }
}

TEST(PredictionInterval, AppsTableCarriesThePowerAndEnergyIntervals) {
  const Corpus train = SyntheticCorpus(40, 15);
  const PowerModel model = Calibrate(train, FixedOptions(100));
  AppActivity app;
  app.workload = "job";
  app.util_frac = {0.5, 0.2, 0.4, 0.1, 0.6};
  app.duration_s = 2.0;  // the run's windows: the energy and its interval are over them
  const std::vector<AppPrediction> rows =
      PredictApps(model, {app}, train.layout, std::nullopt, "apps");
  ASSERT_EQ(rows.size(), 1u);
  const AppPrediction& p = rows[0];
  EXPECT_LT(p.prediction.predicted_w_lo, p.prediction.predicted_w);
  EXPECT_GT(p.prediction.predicted_w_hi, p.prediction.predicted_w);
  EXPECT_DOUBLE_EQ(p.energy_j_lo, p.prediction.predicted_w_lo * 2.0);
  EXPECT_DOUBLE_EQ(p.energy_j_hi, p.prediction.predicted_w_hi * 2.0);
  const std::string csv = AppPredictionsToCsv(rows);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "workload,predicted_w,predicted_w_lo,predicted_w_hi,uncapped_w,capped,f_core_mhz,"
            "duration_s,energy_j,energy_j_lo,energy_j_hi,flags,measured_w,error_pct,"
            "measured_energy_j,energy_error_pct,steps,energy_per_step_j,kernel_time_s,"
            "measured_f_core_mhz,measured_flags,windows");
  EXPECT_NE(csv.find(fmt::format("job,{:.6f},{:.6f},{:.6f},", p.prediction.predicted_w,
                                 p.prediction.predicted_w_lo, p.prediction.predicted_w_hi)),
            std::string::npos)
      << csv;
  // Without replicates the cells are empty.
  const std::vector<AppPrediction> plain =
      PredictApps(Calibrate(train, FixedOptions(0)), {app}, train.layout, std::nullopt, "apps");
  const std::string plain_csv = AppPredictionsToCsv(plain);
  EXPECT_NE(plain_csv.find(fmt::format("job,{:.6f},,,", plain[0].prediction.predicted_w)),
            std::string::npos)
      << plain_csv;
}

}  // namespace
}  // namespace wattcal
