// STYLE.md house rule 2: every options struct has defaults that pass Check(), and Check()
// rejects an invalid value of each field that has a rule with a message naming the field and
// the value. One invalid value per rule (plus NaN where a comparison could let it through).
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "fit/calibrate.h"
#include "fit/nnls.h"
#include "io/corpus_io.h"
#include "synth/synthetic_corpus.h"
#include "crossval/cross_validation.h"
#include "validate/metrics.h"

namespace wattcal {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Checks that `options` fails Check() and that the message contains every one of `mentions`
// (the field's name and the offending value as a user would write it).
template <typename Options>
void ExpectInvalid(const Options& options, const std::vector<std::string>& mentions) {
  std::string error;
  EXPECT_FALSE(options.Check(&error)) << "expected Check() to fail (" << mentions.front() << ")";
  EXPECT_FALSE(error.empty());
  for (const std::string& m : mentions) {
    EXPECT_NE(error.find(m), std::string::npos) << "expected '" << m << "' in: " << error;
  }
}

template <typename Options>
void ExpectValid(const Options& options) {
  std::string error;
  EXPECT_TRUE(options.Check(&error)) << error;
}

// ---------------------------------------------------------------------------------------
// CalibrationOptions

TEST(OptionsCheckCalibration, DefaultsPass) { ExpectValid(CalibrationOptions()); }

TEST(OptionsCheckCalibration, EachRuleNamesFieldAndValue) {
  CalibrationOptions o;
  o.loss_scale = -1.5;
  ExpectInvalid(o, {"loss_scale", "-1.5"});
  o = {};
  o.loss_scale = kNaN;
  ExpectInvalid(o, {"loss_scale", "nan"});

  o = {};
  o.voltage_min = 0.0;
  ExpectInvalid(o, {"voltage_min", "0"});
  o = {};
  o.voltage_min = 1.25;
  ExpectInvalid(o, {"voltage_min", "1.25"});

  o = {};
  o.voltage_max = 0.75;
  ExpectInvalid(o, {"voltage_max", "0.75"});
  o = {};
  o.voltage_max = kNaN;
  ExpectInvalid(o, {"voltage_max", "nan"});

  o = {};
  o.max_iterations = 0;
  ExpectInvalid(o, {"max_iterations", "0"});

  o = {};
  o.max_iterations = -3;
  ExpectInvalid(o, {"max_iterations", "-3"});

  o = {};
  o.alternating_tolerance_pct = 0.0;
  ExpectInvalid(o, {"alternating_tolerance_pct", "0"});

  o = {};
  o.alternating_patience = 0;
  ExpectInvalid(o, {"alternating_patience", "0"});

  o = {};
  o.threads = 0;
  ExpectInvalid(o, {"threads", "0"});
}

TEST(OptionsCheckCalibration, AlternatingSolverIsL2AbsoluteOnly) {
  CalibrationOptions o;
  o.solver = FitSolver::kAlternating;
  o.loss = FitLoss::kL2;
  ExpectValid(o);
  o.loss = FitLoss::kHuber;
  ExpectInvalid(o, {"solver = alternating", "loss = huber"});
  o.loss = FitLoss::kCauchy;
  ExpectInvalid(o, {"solver = alternating", "loss = cauchy"});
  o.loss = FitLoss::kL2;
  o.residual = FitResidual::kRelative;
  ExpectInvalid(o, {"solver = alternating", "residual = relative"});
  // The fixed method ignores the solver, so the combination does not matter there.
  o.method = FitMethod::kFixed;
  o.loss = FitLoss::kHuber;
  ExpectValid(o);
}

TEST(OptionsCheckCalibration, BoundaryValuesPass) {
  CalibrationOptions o;
  o.voltage_min = 1.0;
  o.voltage_max = 1.0;
  o.loss_scale = 0.0;
  o.max_iterations = 1;
  ExpectValid(o);
}

// ---------------------------------------------------------------------------------------
// CorpusReadOptions

TEST(OptionsCheckCorpusRead, DefaultsPass) { ExpectValid(CorpusReadOptions()); }

TEST(OptionsCheckCorpusRead, EachRuleNamesFieldAndValue) {
  CorpusReadOptions o;
  o.default_core_mhz = -975;
  ExpectInvalid(o, {"default_core_mhz", "-975"});
  o = {};
  o.default_core_mhz = kNaN;
  ExpectInvalid(o, {"default_core_mhz", "nan"});
  o = {};
  o.default_mem_mhz = kInf;
  ExpectInvalid(o, {"default_mem_mhz", "inf"});
  o = {};
  o.default_mem_mhz = -3505;
  ExpectInvalid(o, {"default_mem_mhz", "-3505"});
  o = {};
  o.default_core_mhz = 975;
  o.default_mem_mhz = 3505;
  ExpectValid(o);
}

// ---------------------------------------------------------------------------------------
// CrossValidationOptions

TEST(OptionsCheckCrossValidation, DefaultsPass) { ExpectValid(CrossValidationOptions()); }

TEST(OptionsCheckCrossValidation, EachRuleNamesFieldAndValue) {
  CrossValidationOptions o;
  o.folds = 1;
  ExpectInvalid(o, {"folds", "1"});
  o = {};
  o.folds = -2;
  ExpectInvalid(o, {"folds", "-2"});
  o = {};
  o.threads = 0;
  ExpectInvalid(o, {"threads", "0"});
  o = {};
  o.folds = 2;
  ExpectValid(o);
}

// ---------------------------------------------------------------------------------------
// MetricsOptions

TEST(OptionsCheckMetrics, DefaultsPass) { ExpectValid(MetricsOptions()); }

TEST(OptionsCheckMetrics, EachRuleNamesFieldAndValue) {
  MetricsOptions o;
  o.confidence_level = 0.0;
  ExpectInvalid(o, {"confidence_level", "0"});
  o = {};
  o.confidence_level = 1.0;
  ExpectInvalid(o, {"confidence_level", "1"});
  o = {};
  o.confidence_level = 95;  // a percentage where a fraction is expected
  ExpectInvalid(o, {"confidence_level", "95"});
  o = {};
  o.confidence_level = kNaN;
  ExpectInvalid(o, {"confidence_level", "nan"});

  o = {};
  o.within_pct = {1.0, -5.0};
  ExpectInvalid(o, {"within_pct[1]", "-5"});
  o = {};
  o.within_pct = {1.0, kInf};
  ExpectInvalid(o, {"within_pct[1]", "inf"});
  o = {};
  o.within_pct = {10.0, 5.0};
  ExpectInvalid(o, {"within_pct[1]", "5", "ascending"});
  o = {};
  o.within_pct = {2.5, 2.5};
  ExpectInvalid(o, {"within_pct[1]", "2.5"});
  o = {};
  o.within_pct = {1.0, 1.0000001};  // the same JSON key label "1" at 6 significant digits
  ExpectInvalid(o, {"within_pct[1]", "1.0000001"});

  o = {};
  o.within_pct = {};
  ExpectValid(o);
  o.within_pct = {0.0, 2.5};
  ExpectValid(o);
}

// ---------------------------------------------------------------------------------------
// NnlsOptions

TEST(OptionsCheckNnls, DefaultsPass) { ExpectValid(NnlsOptions()); }

TEST(OptionsCheckNnls, EachRuleNamesFieldAndValue) {
  NnlsOptions o;
  o.max_iterations = -1;
  ExpectInvalid(o, {"max_iterations", "-1"});
  o = {};
  // A sign slip on the default's magnitude: the message must show the value given.
  o.tolerance = -1e-12;
  ExpectInvalid(o, {"tolerance", "-1e-12"});
  o = {};
  o.tolerance = kNaN;
  ExpectInvalid(o, {"tolerance", "nan"});
  o = {};
  o.max_iterations = 0;  // 0 = automatic
  o.tolerance = 0.0;
  ExpectValid(o);
}

// ---------------------------------------------------------------------------------------
// SyntheticSpec: the spec shipped for the embedded default run passes; broken copies fail.

SyntheticSpec VirtualGpuSpec() {
  return ReadSyntheticSpec(std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/virtual_gpu.json");
}

TEST(OptionsCheckSyntheticSpec, VirtualGpuSpecPasses) {
  const SyntheticSpec spec = VirtualGpuSpec();
  ExpectValid(spec);
  // It is the spec the file describes, not an empty default that happens to pass.
  ASSERT_EQ(spec.layout.num_domains(), 2);
  EXPECT_EQ(spec.layout.domains[0].default_freq_mhz, 975.0);
  EXPECT_EQ(spec.layout.domains[1].default_freq_mhz, 3505.0);
  EXPECT_EQ(spec.layout.num_components(), 12);
  EXPECT_EQ(spec.coefficients.size(), 2u * 2 + 12);
  EXPECT_EQ(spec.voltage[0].freq_levels_mhz.size(), 8u);  // the 8 x 3 grid of the campaign
  EXPECT_EQ(spec.voltage[1].freq_levels_mhz.size(), 3u);
  EXPECT_EQ(spec.heldout_applications, 24);
}

TEST(OptionsCheckSyntheticSpec, BrokenCopiesFailNamingTheField) {
  const SyntheticSpec good = VirtualGpuSpec();
  SyntheticSpec s = good;
  s.noise_rel = 0.5;
  ExpectInvalid(s, {"noise_rel", "0.5"});
  s = good;
  s.noise_rel = kNaN;
  ExpectInvalid(s, {"noise_rel", "nan"});
  s = good;
  s.corrupted_rows = -1;
  ExpectInvalid(s, {"corrupted_rows", "-1"});
  s = good;
  s.coefficients[3] = -0.25;
  ExpectInvalid(s, {"coefficients", "-0.25"});
  s = good;
  s.coefficients.pop_back();
  ExpectInvalid(s, {"coefficients", "15"});
  s = good;
  s.voltage[1].freq_levels_mhz = {810, 3300, 4005};
  ExpectInvalid(s, {"voltage[1].freq_levels_mhz", "3505"});
  s = good;
  s.voltage[0].freq_levels_mhz = {1164, 975, 595};
  ExpectInvalid(s, {"voltage[0].freq_levels_mhz", "ascending"});
  s = good;
  s.voltage.pop_back();
  ExpectInvalid(s, {"voltage", "1"});
  // The three counts share one message that states the rules (without the value given).
  s = good;
  s.microbenchmarks_per_component = 0;
  ExpectInvalid(s, {"microbenchmarks_per_component"});
  s = good;
  s.mix_microbenchmarks = -1;
  ExpectInvalid(s, {"mix_microbenchmarks"});
  s = good;
  s.heldout_applications = 0;
  ExpectInvalid(s, {"heldout_applications"});
}

}  // namespace
}  // namespace wattcal
