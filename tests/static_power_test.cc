// Power-gating- and divergence-aware static power (AccelWattch MICRO'21 §4.3-4.5) and idle-SM
// power (AccelWattch §4.6, AccelWattch Eqs. 6-8), on sweeps computed straight from the virtual
// Volta's truth (microbench_specs/virtual_volta.json, pipeline/synth/accelwattch_sweeps.h), without
// the sensor in between:
//
//   StaticPowerOptions*  defaults pass Check(); rules name their fields
//   StaticPowerFit*      AccelWattch Eq. 5's basis (certified values), gating terms and both
//                        divergence models exact on noise-free data, the half-warp/linear
//                        choice under seeded noise, sweeps that cannot tell the models apart
//   IdlePowerOptions*, IdlePowerFit*   a worked example of AccelWattch Eqs. 6-8 by hand, the
//                        geometric mean leaving out non-positive estimates, AccelWattch Eq. 10's
//                        idle term on the truth
// The whole journey (synth -> ingest -> stages) is in static_power_pipeline_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "accelwattch/idle_power.h"
#include "accelwattch/static_power.h"
#include "io/sweep.h"
#include "synth/accelwattch_sweeps.h"
#include "util/rng.h"
#include "test_support.h"
#include "util/errors.h"

namespace wattcal {
namespace {

using ::wattcal::testing::SeedFromTestName;

struct Truth {
  VirtualVoltaSpec spec;
  std::vector<UbenchConfig> ubench;
};

Truth LoadTruth() {
  Truth t;
  CampaignSpec campaign;
  std::string gpu, cfg;
  t.spec =
      ReadVirtualVoltaSpec(std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/virtual_volta.json",
                           &campaign, &gpu, &cfg);
  t.ubench = ReadUbenchCfg(cfg, t.spec.sm_count, t.spec.warp_size);
  return t;
}

// One row per ubench line and core clock, power = truth x (1 + noise_rel N(0, 1)).
Sweep TruthSweep(const Truth& t, double noise_rel, unsigned seed) {
  Rng rng(seed);
  Sweep s;
  s.path = "truth.csv";
  int64_t line = 1;
  for (double f : t.spec.f_core_levels_mhz) {
    for (const UbenchConfig& c : t.ubench) {
      SweepPoint p;
      p.benchmark = p.kernel = c.name;
      p.category = t.spec.FindBenchmark(c.name)->category;
      p.active_sms = c.active_sms;
      p.lanes_per_warp = c.lanes_per_warp;
      p.f_core_mhz = f;
      p.power_w = VoltaTruthPower(t.spec, c.name, c.active_sms, c.lanes_per_warp, f).total_w() *
                  (1.0 + noise_rel * rng.Normal());
      p.line = ++line;
      s.points.push_back(p);
    }
  }
  return s;
}

StaticPowerOptions OptionsFor(const Truth& t) {
  StaticPowerOptions o;
  o.p_const_w = t.spec.constant_power_w;
  o.reference_f_core_mhz = t.spec.reference_f_core_mhz;
  return o;
}

const CategoryStatic& Category(const StaticPowerReport& r, const std::string& name) {
  for (const CategoryStatic& c : r.categories) {
    if (c.category == name) return c;
  }
  throw std::runtime_error("no category " + name);
}

TEST(StaticPowerOptions, DefaultsNeedOnlyTheConstantAndRulesNameTheirFields) {
  std::string error;
  StaticPowerOptions o;
  EXPECT_FALSE(o.Check(&error));  // p_const_w has no default: it comes from wattcal-constant
  EXPECT_NE(error.find("p_const_w"), std::string::npos) << error;
  o.p_const_w = 32.5;
  EXPECT_TRUE(o.Check(&error)) << error;
  o.half_warp_lanes = 32;
  EXPECT_FALSE(o.Check(&error));
  EXPECT_NE(error.find("half_warp_lanes = 32"), std::string::npos) << error;
  o.half_warp_lanes = 16;
  o.min_frequencies = 1;
  EXPECT_FALSE(o.Check(&error));
  EXPECT_NE(error.find("min_frequencies = 1"), std::string::npos) << error;
  o.min_frequencies = 3;
  o.reference_f_core_mhz = -1;
  EXPECT_FALSE(o.Check(&error));
  EXPECT_NE(error.find("reference_f_core_mhz = -1"), std::string::npos) << error;
}

// Certified: AccelWattch Eq. 5 (MICRO'21 §4.4) in units of P_add beyond the first lane, H = 16:
// y = 1 -> 0, y = 16 -> 15, y = 17 -> 15/2 + 0 = 7.5, y = 24 -> 7.5 + 7/2 = 11, y = 32 -> 15
// (16- and 32-lane warps draw the same, the maxima of the sawtooth).
TEST(StaticPowerFit, HalfWarpBasisIsEq5) {
  EXPECT_DOUBLE_EQ(HalfWarpBasis(1, 16), 0.0);
  EXPECT_DOUBLE_EQ(HalfWarpBasis(16, 16), 15.0);
  EXPECT_DOUBLE_EQ(HalfWarpBasis(17, 16), 7.5);
  EXPECT_DOUBLE_EQ(HalfWarpBasis(24, 16), 11.0);
  EXPECT_DOUBLE_EQ(HalfWarpBasis(32, 16), 15.0);
}

// Noise-free truth: the gating terms are the truth's increments exactly (the truth is linear
// in the SM count and, up to H lanes, in the lanes), and the virtual GPU was sized to
// AccelWattch §4.3's figures (47x, 31x, +70%, +10%).
TEST(StaticPowerFit, GatingTermsAreExactOnTheTruth) {
  const Truth t = LoadTruth();
  const StaticPowerReport r = FitStaticPower(TruthSweep(t, 0.0, 1), OptionsFor(t));
  const GatingTerms& g = r.gating;
  ASSERT_EQ(g.status, "ok");
  EXPECT_EQ(g.benchmark, "INT_STATIC");
  EXPECT_EQ(r.num_sms, 80);
  auto p = [&](int k, int y) {
    return VoltaTruthPower(t.spec, "INT_STATIC", k, y, t.spec.reference_f_core_mhz).total_w();
  };
  EXPECT_NEAR(g.first_sm_w, p(1, 1) - 32.5, 1e-9);
  EXPECT_NEAR(g.add_sm_w, p(2, 1) - p(1, 1), 1e-9);
  EXPECT_NEAR(g.add_lane_per_sm_w, (p(80, 2) - p(80, 1)) / 80, 1e-12);
  EXPECT_NEAR(g.first_to_add_sm_ratio, 46.56, 0.01);
  EXPECT_NEAR(g.first_to_add_lane_ratio, 30.73, 0.01);
  EXPECT_NEAR(g.sm_all_vs_1_increase_pct, 70.67, 0.01);
  EXPECT_NEAR(g.lanes_8_vs_1_increase_pct, 9.55, 0.01);
}

// Noise-free truth: categories of half-warp weight 1 follow AccelWattch Eq. 5 exactly, and a
// category set to weight 0 follows AccelWattch Eq. 4 exactly, with P_first and the full warp's
// static power equal to the truth's chip static power (tau f of AccelWattch Eq. 3) at 1 and
// 32 lanes.
TEST(StaticPowerFit, PureCategoriesFitTheirModelExactly) {
  Truth t = LoadTruth();
  for (VoltaCategory& c : t.spec.categories) {
    if (c.category == "int_fp_tensor") c.half_warp_weight = 0.0;
  }
  const StaticPowerReport r = FitStaticPower(TruthSweep(t, 0.0, 1), OptionsFor(t));
  const double fr = t.spec.reference_f_core_mhz;
  struct Expect {
    std::string category, benchmark, model;
  };
  for (const Expect& e : {Expect{"int_add", "INT_ADD_STATIC", "half_warp"},
                          Expect{"int_mul", "INT_MUL_STATIC", "half_warp"},
                          Expect{"light", "LIGHT_STATIC", "half_warp"},
                          Expect{"int_fp_tensor", "INT_FP_TENSOR_STATIC", "linear"}}) {
    SCOPED_TRACE(e.category);
    const CategoryStatic& c = Category(r, e.category);
    ASSERT_EQ(c.status, "ok");
    EXPECT_EQ(c.chosen_model, e.model);
    EXPECT_TRUE(c.distinguishable);
    const DivergenceModel& m = e.model == "half_warp" ? c.half_warp : c.linear;
    EXPECT_LT(m.rmse_w, 1e-7);
    EXPECT_NEAR(m.p_static_first_lane_w, VoltaTruthPower(t.spec, e.benchmark, 80, 1, fr).static_w,
                1e-7);
    EXPECT_NEAR(m.p_static_full_warp_w, VoltaTruthPower(t.spec, e.benchmark, 80, 32, fr).static_w,
                1e-7);
    EXPECT_LT(c.eq3_mape_pct, 1e-8);
  }
  EXPECT_TRUE(r.excluded.empty());
}

// Seeded noise of 0.3% per kernel (the virtual Volta's run-to-run noise): every category whose
// half-warp weight is >= 0.75 picks AccelWattch Eq. 5, every one <= 0.25 picks AccelWattch Eq. 4
// (int_fp, weight 0.6, is reported, not asserted: AccelWattch §4.5's "less pronounced" middle
// ground). The chosen model's P_first and full-warp static power lie within 5% of the same model
// fitted to the noise-free truth (for mixed categories that model is itself off the truth:
// AccelWattch Eq. 4 on a weight-0.25 mix puts P_first ~5% high, which is the models'
// misspecification, not the fit's).
TEST(StaticPowerFit, NoisySweepsChooseTheModelOfTheirMix) {
  const Truth t = LoadTruth();
  const StaticPowerReport r =
      FitStaticPower(TruthSweep(t, 0.003, SeedFromTestName()), OptionsFor(t));
  const StaticPowerReport exact = FitStaticPower(TruthSweep(t, 0.0, 1), OptionsFor(t));
  for (const VoltaCategory& vc : t.spec.categories) {
    SCOPED_TRACE(vc.category);
    const CategoryStatic& c = Category(r, vc.category);
    const CategoryStatic& e = Category(exact, vc.category);
    ASSERT_EQ(c.status, "ok");
    ASSERT_EQ(c.benchmarks.size(), 1u);
    if (vc.half_warp_weight > 0.25 && vc.half_warp_weight < 0.75) continue;
    const std::string expected = vc.half_warp_weight >= 0.75 ? "half_warp" : "linear";
    EXPECT_EQ(e.chosen_model, expected);
    EXPECT_EQ(c.chosen_model, expected);
    const DivergenceModel& m = expected == "half_warp" ? c.half_warp : c.linear;
    const DivergenceModel& m0 = expected == "half_warp" ? e.half_warp : e.linear;
    EXPECT_NEAR(m.p_static_first_lane_w, m0.p_static_first_lane_w, 0.05 * m0.p_static_first_lane_w);
    EXPECT_NEAR(m.p_static_full_warp_w, m0.p_static_full_warp_w, 0.05 * m0.p_static_full_warp_w);
  }
}

TEST(StaticPowerFit, LanesUpToHalfAWarpCannotTellTheModelsApart) {
  Sweep s;
  s.path = "lanes.csv";
  int64_t line = 1;
  for (int y : {1, 8, 16}) {
    for (double f : {800.0, 1100.0, 1400.0}) {
      SweepPoint p;
      p.benchmark = p.kernel = "INT_ADD_STATIC";
      p.category = "int_add";
      p.active_sms = 80;
      p.lanes_per_warp = y;
      p.f_core_mhz = f;
      p.power_w = 30.0 + (20.0 + y) * f / 1400.0 + 1e-8 * f * f * f;
      p.line = ++line;
      s.points.push_back(p);
    }
  }
  StaticPowerOptions o;
  o.p_const_w = 30.0;
  const StaticPowerReport r = FitStaticPower(s, o);
  const CategoryStatic& c = Category(r, "int_add");
  ASSERT_EQ(c.status, "ok");
  EXPECT_FALSE(c.distinguishable);
  EXPECT_EQ(c.chosen_model, "linear");
  EXPECT_NEAR(c.linear.p_static_add_lane_w, 1.0, 1e-9);
  EXPECT_NE(Category(r, "int_mul").status, "ok");
  EXPECT_NE(r.gating.status, "ok");  // one SM count only
  o.gating_benchmark = "absent";
  EXPECT_THROW(FitStaticPower(s, o), OptionError);
  o.gating_benchmark.clear();
  o.reference_f_core_mhz = 1000.0;
  try {
    FitStaticPower(s, o);
    FAIL() << "no row at 1000 MHz";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "f_core_mhz");
  }
}

TEST(IdlePowerOptions, DefaultsNeedOnlyTheConstantAndRulesNameTheirFields) {
  std::string error;
  IdlePowerOptions o;
  EXPECT_FALSE(o.Check(&error));
  EXPECT_NE(error.find("p_const_w"), std::string::npos) << error;
  o.p_const_w = 32.5;
  EXPECT_TRUE(o.Check(&error)) << error;
  o.lanes_per_warp = 0;
  EXPECT_FALSE(o.Check(&error));
  EXPECT_NE(error.find("lanes_per_warp = 0"), std::string::npos) << error;
}

SweepPoint Row(const std::string& b, int k, double power_w) {
  SweepPoint p;
  p.benchmark = p.kernel = b;
  p.active_sms = k;
  p.lanes_per_warp = 32;
  p.f_core_mhz = 1000.0;
  p.power_w = power_w;
  return p;
}

// Worked by hand with N = 4 SMs, P_const = 10 W:
//   A: P(4) = 30 W -> AccelWattch Eq. 6: (30 - 10) / 4 = 5 W per active SM;
//      P(2) = 24 W -> AccelWattch Eq. 7: 24 - 10 - 5 * 2 = 4 W for 2 idle SMs (2 W each);
//      P(1) = 20 W -> 20 - 10 - 5 = 5 W for 3 idle SMs (5/3 W each);
//      least squares through the origin: (4 * 2 + 5 * 3) / (2^2 + 3^2) = 23/13 W.
//   B: P(4) = 50 W -> 10 W per active SM; P(3) = 41 W -> 41 - 10 - 30 = 1 W for 1 idle SM.
//   AccelWattch Eq. 8: sqrt(23/13 * 1) = 1.3301 W (arithmetic mean 18/13 = 1.3846 W).
TEST(IdlePowerFit, WorkedExampleOfEqs6To8) {
  Sweep s;
  s.path = "idle.csv";
  s.points = {Row("A", 4, 30), Row("A", 2, 24), Row("A", 1, 20), Row("B", 4, 50), Row("B", 3, 41)};
  IdlePowerOptions o;
  o.p_const_w = 10.0;
  const IdlePowerReport r = FitIdlePower(s, o);
  ASSERT_EQ(r.status, "ok");
  ASSERT_EQ(r.benchmarks.size(), 2u);
  EXPECT_DOUBLE_EQ(r.benchmarks[0].per_active_sm_w, 5.0);
  ASSERT_EQ(r.benchmarks[0].configs.size(), 2u);
  EXPECT_DOUBLE_EQ(r.benchmarks[0].configs[0].per_idle_sm_w, 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(r.benchmarks[0].configs[1].idle_sms_w, 4.0);
  EXPECT_DOUBLE_EQ(r.benchmarks[0].per_idle_sm_w, 23.0 / 13.0);
  EXPECT_DOUBLE_EQ(r.benchmarks[1].per_idle_sm_w, 1.0);
  EXPECT_NEAR(r.per_idle_sm_w, std::sqrt(23.0 / 13.0), 1e-12);
  EXPECT_NEAR(r.arithmetic_mean_w, 18.0 / 13.0, 1e-12);
  EXPECT_EQ(r.benchmarks_used, 2);
}

TEST(IdlePowerFit, NonPositiveEstimatesLeaveTheGeometricMean) {
  Sweep s;
  s.path = "idle.csv";
  s.points = {Row("A", 4, 30), Row("A", 2, 24), Row("C", 4, 30), Row("C", 2, 19)};
  IdlePowerOptions o;
  o.p_const_w = 10.0;
  IdlePowerReport r = FitIdlePower(s, o);
  EXPECT_EQ(r.benchmarks_used, 1);
  EXPECT_DOUBLE_EQ(r.per_idle_sm_w, 2.0);
  EXPECT_FALSE(r.benchmarks[1].used);
  EXPECT_NE(r.benchmarks[1].note.find("<= 0"), std::string::npos);
  o.benchmarks = {"C"};
  r = FitIdlePower(s, o);
  EXPECT_NE(r.status, "ok");
  EXPECT_TRUE(std::isnan(r.per_idle_sm_w));
  s.points = {Row("A", 4, 30)};
  o.benchmarks.clear();
  EXPECT_THROW(FitIdlePower(s, o), InputError);  // no benchmark on fewer SMs
}

// Noise-free truth: AccelWattch Eqs. 6-8 give AccelWattch Eq. 10's idle term, idle_sm_w +
// chip_static_w / N (the chip-wide power G is shared out over all N SMs), at every clock scaled by
// f / f_ref.
TEST(IdlePowerFit, RecoversEq10IdleTermOnTheTruth) {
  const Truth t = LoadTruth();
  IdlePowerOptions o;
  o.p_const_w = t.spec.constant_power_w;
  o.f_core_mhz = t.spec.reference_f_core_mhz;
  const IdlePowerReport r = FitIdlePower(TruthSweep(t, 0.0, 1), o);
  ASSERT_EQ(r.status, "ok");
  EXPECT_EQ(r.benchmarks_used, 2);  // ACT_CORE1, ACT_CORE2 (INT_STATIC's SM sweep has 1 lane)
  EXPECT_NEAR(r.per_idle_sm_w, t.spec.idle_sm_w + t.spec.chip_static_w / 80, 1e-10);
  o.f_core_mhz = 0.0;  // the highest clock, 1597 MHz
  const IdlePowerReport top = FitIdlePower(TruthSweep(t, 0.0, 1), o);
  EXPECT_NEAR(top.per_idle_sm_w, (0.15 + 10.7 / 80) * 1597.0 / 1447.0, 1e-10);
}

}  // namespace
}  // namespace wattcal
