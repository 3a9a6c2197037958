// AccelWattch's whole power model (MICRO'21 Eq. 10/12; accelwattch/power_model.h): the
// energy-estimate and fixed-term readers, AccelWattch Eq. 12 by hand at the kernel's own V-F pair
// and at another one, the component table of AccelWattch Eq. 13 built from an activity table, the
// model file's round trip, and the stages as a user runs them: wattcal-calibrate --method
// accelwattch --activity recovers known factors from noise-free measurements exactly,
// wattcal-predict evaluates AccelWattch Eq. 12 with its breakdown at any pair, wattcal-validate
// scores an activity table; errors exit 2 naming FILE:LINE and the field, bad options exit 1,
// nothing is left behind.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "accelwattch/activity.h"
#include "accelwattch/model_terms.h"
#include "accelwattch/power_model.h"
#include "accelwattch/scaling_model.h"
#include "util/rng.h"
#include "test_support.h"
#include "util/errors.h"

namespace wattcal {
namespace {

using testing::CommandResult;
using testing::FileExists;
using testing::HasProvenance;
using testing::ReadFile;
using testing::RunStage;
using testing::ScratchDir;
using testing::WriteFile;

// Three components: A counts two events, voltage-scaled core logic; B core clock, not
// voltage-scaled; M follows the memory clock. E-hat at 1000 MHz.
const char* kEnergies = R"({
  "format": "wattcal-accelwattch-energies",
  "version": 1,
  "about": "test",
  "reference_f_core_mhz": 1000,
  "components": [
    {"component": "A", "events": ["a1", "a2"], "energy_per_event_pj": 2.0, "clock": "core", "voltage_scaled": true},
    {"component": "B", "events": ["b"], "energy_per_event_pj": 10.0, "clock": "core", "voltage_scaled": false},
    {"component": "M", "events": ["m"], "energy_per_event_pj": 5.0, "clock": "memory", "voltage_scaled": false}
  ]
}
)";

// The keys wattcal-constant, -static and -idle write (only those the model reads).
const char* kConstant = R"({"p_const_w": 30.0})";
const char* kStatic = R"({
  "reference_f_core_mhz": 1000.0, "num_sms": 10, "warp_size": 32, "half_warp_lanes": 16,
  "categories": {
    "int": {"status": "ok", "chosen_model": "half_warp",
            "half_warp": {"p_static_first_lane_w": 5.0, "p_static_add_lane_w": 0.5},
            "linear": {"p_static_first_lane_w": 99.0, "p_static_add_lane_w": 99.0}},
    "int_fp": {"status": "ok", "chosen_model": "linear",
               "linear": {"p_static_first_lane_w": 6.0, "p_static_add_lane_w": 0.25}},
    "light": {"status": "no lane sweep", "chosen_model": ""}
  }
})";
const char* kIdle = R"({"f_core_mhz": 1000.0, "p_idle_sm_w": 0.2})";

struct Files {
  std::string dir, energies, constant, stat, idle;
};

Files WriteTerms(const std::string& dir) {
  return {dir, WriteFile(dir + "/energies.json", kEnergies),
          WriteFile(dir + "/constant.json", kConstant), WriteFile(dir + "/static.json", kStatic),
          WriteFile(dir + "/idle.json", kIdle)};
}

const char* kHeader =
    "kernel,benchmark,category,active_sms,lanes_per_warp,f_core_mhz,f_mem_mhz,elapsed_s,"
    "launches,mean_power_w,a1,a2,b,m\n";

KernelActivity HandKernel() {
  KernelActivity k;
  k.kernel = "k1";
  k.category = "int";
  k.active_sms = 4;
  k.lanes_per_warp = 24;
  k.f_core_mhz = 800;
  k.f_mem_mhz = 500;
  k.elapsed_s = 2.0;
  k.events = {{"a1", 1e12}, {"a2", 1e12}, {"b", 2e11}, {"m", 4e11}};
  k.line = 2;
  return k;
}

TEST(AccelWattchPowerModel, Eq12ByHandAtTheKernelsPairAndAnother) {
  const Files f = WriteTerms(ScratchDir());
  const AccelWattchEnergies e = ReadAccelWattchEnergies(f.energies);
  const AccelWattchFixedTerms t = ReadAccelWattchFixedTerms(f.constant, f.stat, f.idle, "");
  ASSERT_EQ(t.categories.size(), 2u);  // "light" has no fitted model
  const std::vector<double> x = {1.5, 2.0, 0.5};
  const KernelActivity k = HandKernel();

  // At 800/500 MHz: A = 1.5 * 2 pJ * 0.8^2 * 2e12 / 2 s; B = 2 * 10 pJ * 1e11/s;
  // M = 0.5 * 5 pJ * 2e11/s; static: half-warp basis at 24 lanes = 7.5 + 3.5 = 11, so
  // (5 + 0.5 * 11) / 10 SMs * 4 active * 0.8; idle 0.2 * 6 * 0.8; P_const 30.
  const AccelWattchBreakdown own = EvaluateAccelWattch(e, t, x, k, "act.csv", 800, 500);
  ASSERT_EQ(own.dynamic_w.size(), 3u);
  EXPECT_NEAR(own.dynamic_w[0], 1.5 * 1.28, 1e-12);
  EXPECT_NEAR(own.dynamic_w[1], 2.0, 1e-12);
  EXPECT_NEAR(own.dynamic_w[2], 0.5, 1e-12);
  EXPECT_NEAR(own.static_w, 10.5 / 10 * 4 * 0.8, 1e-12);
  EXPECT_NEAR(own.idle_w, 0.2 * 6 * 0.8, 1e-12);
  EXPECT_DOUBLE_EQ(own.const_w, 30.0);
  EXPECT_EQ(own.static_category, "int");
  EXPECT_NEAR(own.total_w(), 1.92 + 2.0 + 0.5 + 3.36 + 0.96 + 30.0, 1e-12);

  // At 1000/1000 MHz, the same activity per cycle: A's rate x1.25 and energy x(1/0.8)^2,
  // B's rate x1.25, M's rate x2; static and idle x1.25 (V ~ f).
  const AccelWattchBreakdown other = EvaluateAccelWattch(e, t, x, k, "act.csv", 1000, 1000);
  EXPECT_NEAR(other.dynamic_w[0], 1.5 * 2.5, 1e-12);
  EXPECT_NEAR(other.dynamic_w[1], 2.0 * 1.25, 1e-12);
  EXPECT_NEAR(other.dynamic_w[2], 0.5 * 2.0, 1e-12);
  EXPECT_NEAR(other.static_w, 4.2, 1e-12);
  EXPECT_NEAR(other.idle_w, 1.2, 1e-12);

  // A linear-category kernel on a full warp: AccelWattch Eq. 4, 6 + 0.25 * 31.
  KernelActivity lin = k;
  lin.category = "int_fp";
  lin.lanes_per_warp = 32;
  lin.active_sms = 10;
  const AccelWattchBreakdown l = EvaluateAccelWattch(e, t, x, lin, "act.csv", 1000, 500);
  EXPECT_NEAR(l.static_w, 6.0 + 0.25 * 31, 1e-12);
  EXPECT_DOUBLE_EQ(l.idle_w, 0.0);
}

// A measured V-f curve instead of V ~ f: static and idle power follow V, energy per event V^2,
// the event rate the clock; clocks outside the curve are errors naming the kernel's line.
TEST(AccelWattchPowerModel, MeasuredVoltageCurve) {
  const Files f = WriteTerms(ScratchDir());
  const AccelWattchEnergies e = ReadAccelWattchEnergies(f.energies);
  AccelWattchFixedTerms t = ReadAccelWattchFixedTerms(f.constant, f.stat, f.idle, "");
  // 0.8 V below 800 MHz (a voltage floor), rising to 1.0 V at 1000 MHz and 1.1 V at 1200.
  ReadVoltageCurve(WriteFile(f.dir + "/vf.csv",
                             "f_core_mhz,voltage_mv,note\n600,800,floor\n800,800,floor\n"
                             "1000,1000,\n1200,1100,\n"),
                   &t);
  EXPECT_EQ(t.VoltageModelName().rfind("measured V-f curve", 0), 0u);
  EXPECT_NEAR(t.VoltageRatio(900, 1000), 0.9, 1e-12);
  EXPECT_NEAR(t.VoltageRatio(1100, 1000), 1.05, 1e-12);
  const std::vector<double> x = {1.5, 2.0, 0.5};
  const KernelActivity k = HandKernel();  // counted at 800/500 MHz, 4 SMs, 24 lanes
  // At 1100 MHz: V/V_ref = 1.05 (E-hat at 1000 MHz), V/V_static = V/V_idle = 1.05.
  const AccelWattchBreakdown b = EvaluateAccelWattch(e, t, x, k, "act.csv", 1100, 500);
  EXPECT_NEAR(b.dynamic_w[0], 1.5 * 2e-12 * 1.05 * 1.05 * 1e12 * 1100.0 / 800.0, 1e-12);
  EXPECT_NEAR(b.dynamic_w[1], 2.0 * 10e-12 * 1e11 * 1100.0 / 800.0, 1e-12);
  EXPECT_NEAR(b.dynamic_w[2], 0.5, 1e-12);
  EXPECT_NEAR(b.static_w, 10.5 / 10 * 4 * 1.05, 1e-12);
  EXPECT_NEAR(b.idle_w, 0.2 * 6 * 1.05, 1e-12);
  // At the kernel's own 800 MHz the floor gives V/V_ref = 0.8 (as V ~ f would, by design here).
  EXPECT_NEAR(EvaluateAccelWattch(e, t, x, k, "act.csv", 700, 500).static_w, 10.5 / 10 * 4 * 0.8,
              1e-12);
  try {
    EvaluateAccelWattch(e, t, x, k, "act.csv", 1300, 500);
    ADD_FAILURE() << "1300 MHz lies outside the curve";
  } catch (const InputError& err) {
    EXPECT_NE(std::string(err.what()).find("act.csv:2: f_core_mhz"), std::string::npos)
        << err.what();
  }
  // Round trip through the model file.
  AccelWattchModel m;
  m.has_terms = true;
  m.energies = e;
  m.fixed = t;
  m.components = e.ComponentNames();
  m.x = x;
  m.lower_bound.assign(3, 0.001);
  m.upper_bound.assign(3, 1000.0);
  m.prior_x.assign(3, 1.0);
  const std::string path = WriteFile(f.dir + "/model.json", AccelWattchModelToJson(m));
  const AccelWattchModel back = ReadAccelWattchModel(path);
  EXPECT_EQ(back.fixed.voltage_v, t.voltage_v);
  EXPECT_EQ(back.fixed.voltage_f_core_mhz, t.voltage_f_core_mhz);
  EXPECT_EQ(AccelWattchModelToJson(back), ReadFile(path));
  // Errors: descending clocks, a static clock outside the curve.
  AccelWattchFixedTerms u = ReadAccelWattchFixedTerms(f.constant, f.stat, f.idle, "");
  EXPECT_THROW(ReadVoltageCurve(
                   WriteFile(f.dir + "/bad.csv", "f_core_mhz,voltage_v\n900,0.9\n800,0.8\n"), &u),
               InputError);
  EXPECT_THROW(ReadVoltageCurve(
                   WriteFile(f.dir + "/low.csv", "f_core_mhz,voltage_v\n500,0.8\n900,0.9\n"), &u),
               OptionError);
}

// What-if SM and lane counts: AccelWattch Eq. 10's static and idle terms follow k and y, the
// dynamic activity is kept per active SM.
TEST(AccelWattchPowerModel, WhatIfActiveSmsAndLanes) {
  const Files f = WriteTerms(ScratchDir());
  AccelWattchModel m;
  m.has_terms = true;
  m.energies = ReadAccelWattchEnergies(f.energies);
  m.fixed = ReadAccelWattchFixedTerms(f.constant, f.stat, f.idle, "");
  m.components = m.energies.ComponentNames();
  m.x = {1.5, 2.0, 0.5};
  ActivityTable activity;
  activity.path = "act.csv";
  activity.kernels = {HandKernel()};
  AccelWattchEvaluationGrid grid;
  grid.active_sms = {1, 4, 10};
  grid.lanes_per_warp = {16, 24};
  const std::vector<AccelWattchPrediction> p = PredictAccelWattchActivity(m, activity, grid);
  ASSERT_EQ(p.size(), 6u);
  // k-major, then y: (1,16) (1,24) (4,16) (4,24) (10,16) (10,24), all at the kernel's 800/500 MHz.
  EXPECT_EQ(p[5].active_sms, 10);
  EXPECT_EQ(p[5].lanes_per_warp, 24);
  EXPECT_TRUE(p[3].at_measured_pair);
  EXPECT_FALSE(p[2].at_measured_pair);
  const double dynamic_at_4 = 1.5 * 1.28 + 2.0 + 0.5;
  EXPECT_NEAR(p[3].breakdown.dynamic_total_w, dynamic_at_4, 1e-12);
  EXPECT_NEAR(p[5].breakdown.dynamic_total_w, dynamic_at_4 * 10 / 4, 1e-12);
  EXPECT_NEAR(p[1].breakdown.dynamic_total_w, dynamic_at_4 / 4, 1e-12);
  // Half-warp basis: 15 at 16 lanes, 11 at 24; static (5 + 0.5 basis) / 10 SMs * k * 0.8.
  EXPECT_NEAR(p[2].breakdown.static_w, 12.5 / 10 * 4 * 0.8, 1e-12);
  EXPECT_NEAR(p[0].breakdown.static_w, 12.5 / 10 * 1 * 0.8, 1e-12);
  EXPECT_NEAR(p[0].breakdown.idle_w, 0.2 * 9 * 0.8, 1e-12);
  EXPECT_DOUBLE_EQ(p[4].breakdown.idle_w, 0.0);
  // The first SM's cost against each further one's, at 24 lanes.
  EXPECT_NEAR(p[3].breakdown.total_w() - p[1].breakdown.total_w(),
              3 * (10.5 / 10 * 0.8 - 0.2 * 0.8 + dynamic_at_4 / 4), 1e-9);
  grid.active_sms = {11};
  EXPECT_THROW(PredictAccelWattchActivity(m, activity, grid), OptionError);
  grid.active_sms = {};
  grid.lanes_per_warp = {0};
  EXPECT_THROW(PredictAccelWattchActivity(m, activity, grid), OptionError);
}

TEST(AccelWattchPowerModel, KernelsTheModelCannotDescribeAreInputErrors) {
  const Files f = WriteTerms(ScratchDir());
  const AccelWattchEnergies e = ReadAccelWattchEnergies(f.energies);
  const AccelWattchFixedTerms t = ReadAccelWattchFixedTerms(f.constant, f.stat, f.idle, "");
  const std::vector<double> x(3, 1.0);
  auto message = [&](const KernelActivity& k, double fm) {
    try {
      EvaluateAccelWattch(e, t, x, k, "act.csv", 1000, fm);
    } catch (const InputError& err) {
      return std::string(err.what());
    }
    return std::string("no error");
  };
  KernelActivity k = HandKernel();
  k.active_sms = 11;
  EXPECT_NE(message(k, 0).find("act.csv:2: active_sms"), std::string::npos) << message(k, 0);
  k = HandKernel();
  k.category = "light";  // no fitted static model
  EXPECT_NE(message(k, 0).find("act.csv:2: category"), std::string::npos) << message(k, 0);
  k.category = "";  // no category and no default
  EXPECT_NE(message(k, 0).find("--default-category"), std::string::npos) << message(k, 0);
  k = HandKernel();
  k.events.erase("a2");
  EXPECT_NE(message(k, 0).find("act.csv:2: a2"), std::string::npos) << message(k, 0);
  k = HandKernel();
  k.f_mem_mhz = 0;  // the memory component cannot be carried to another memory clock
  EXPECT_NE(message(k, 900).find("act.csv:2: f_mem_mhz"), std::string::npos) << message(k, 900);

  // The default category serves kernels without one; an unfitted default is an option error.
  const AccelWattchFixedTerms with_default =
      ReadAccelWattchFixedTerms(f.constant, f.stat, f.idle, "int_fp");
  k = HandKernel();
  k.category = "";
  EXPECT_EQ(EvaluateAccelWattch(e, with_default, x, k, "act.csv", 800, 500).static_category,
            "int_fp");
  EXPECT_THROW(ReadAccelWattchFixedTerms(f.constant, f.stat, f.idle, "light"), OptionError);
}

TEST(AccelWattchPowerModel, EnergyFileErrorsNameTheLine) {
  const std::string dir = ScratchDir();
  auto error = [&](const std::string& text) {
    const std::string path = WriteFile(dir + "/e.json", text);
    try {
      ReadAccelWattchEnergies(path);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string bad = kEnergies;
  bad.replace(bad.find("\"b\"]"), 4, "\"a1\"]");  // one counter in two components
  EXPECT_NE(error(bad).find("e.json:8: components[1].events[0]"), std::string::npos) << error(bad);
  bad = kEnergies;
  bad.replace(bad.find("10.0"), 4, "-1.0");
  EXPECT_NE(error(bad).find("e.json:8: components[1].energy_per_event_pj"), std::string::npos)
      << error(bad);
  bad = kEnergies;
  bad.replace(bad.find("\"memory\""), 8, "\"uncore\"");
  EXPECT_NE(error(bad).find("e.json:9: components[2].clock"), std::string::npos) << error(bad);
  bad = kEnergies;
  bad.replace(bad.find("\"version\": 1"), 12, "\"version\": 7");
  EXPECT_NE(error(bad).find("e.json:3: version"), std::string::npos) << error(bad);
}

// Noise-free measurements of `kernels` kernels from known factors, as an activity table.
std::string NoiseFreeActivity(const Files& f, const std::vector<double>& x, int kernels,
                              unsigned seed) {
  const AccelWattchEnergies e = ReadAccelWattchEnergies(f.energies);
  const AccelWattchFixedTerms t = ReadAccelWattchFixedTerms(f.constant, f.stat, f.idle, "");
  Rng rng(seed);
  std::string csv = kHeader;
  for (int i = 0; i < kernels; ++i) {
    KernelActivity k;
    k.kernel = fmt::format("kernel_{:02d}", i);
    k.category = i % 2 ? "int" : "int_fp";
    k.active_sms = 1 + static_cast<int>(rng.Index(10));
    k.lanes_per_warp = 1 + static_cast<int>(rng.Index(32));
    k.f_core_mhz = 600 + 100 * static_cast<double>(rng.Index(6));
    k.f_mem_mhz = 500 + 500 * static_cast<double>(rng.Index(2));
    k.elapsed_s = rng.Uniform(0.5, 2.0);
    for (const char* ev : {"a1", "a2", "b", "m"}) k.events[ev] = std::round(rng.Uniform(0, 4e12));
    k.line = i + 2;
    const double p = EvaluateAccelWattch(e, t, x, k, "gen", k.f_core_mhz, k.f_mem_mhz).total_w();
    csv += fmt::format(
        "{},bench_{},{},{},{},{},{},{:.17g},1,{:.17g},{:.17g},{:.17g},{:.17g},{:.17g}\n", k.kernel,
        i % 3, k.category, k.active_sms, k.lanes_per_warp, k.f_core_mhz, k.f_mem_mhz, k.elapsed_s,
        p, k.events["a1"], k.events["a2"], k.events["b"], k.events["m"]);
  }
  return csv;
}

std::vector<std::string> CalibrateArgs(const Files& f, const std::string& activity,
                                       const std::string& out) {
  return {"--method", "accelwattch", "--activity", activity,   "--energies",
          f.energies, "--constant",  f.constant,   "--static", f.stat,
          "--idle",   f.idle,        "--out",      out,        "--quiet"};
}

TEST(AccelWattchPowerModel, CalibratePredictValidateFromActivity) {
  const Files f = WriteTerms(ScratchDir());
  const std::vector<double> truth = {1.7, 0.6, 2.4};
  const std::string train = WriteFile(f.dir + "/train.csv", NoiseFreeActivity(f, truth, 24, 11));
  const std::string heldout = WriteFile(f.dir + "/heldout.csv", NoiseFreeActivity(f, truth, 8, 12));
  const std::string model_path = f.dir + "/model.json";
  std::vector<std::string> args = CalibrateArgs(f, train, model_path);
  args.insert(args.end(), {"--components-out", f.dir + "/table.csv"});
  const CommandResult c = RunStage("wattcal-calibrate", args);
  ASSERT_EQ(c.exit_code, 0) << c.output;
  ASSERT_TRUE(HasProvenance(model_path));
  ASSERT_TRUE(HasProvenance(f.dir + "/table.csv"));

  // Noise-free data: the factors come back to solver precision, and the file carries the
  // whole model (energies and fixed terms) so that predict needs nothing else.
  const AccelWattchModel m = ReadAccelWattchModel(model_path);
  ASSERT_TRUE(m.has_terms);
  ASSERT_EQ(m.components, (std::vector<std::string>{"A", "B", "M"}));
  for (size_t i = 0; i < truth.size(); ++i)
    EXPECT_NEAR(m.x[i], truth[i], 1e-6 * truth[i]) << m.components[i];
  EXPECT_DOUBLE_EQ(m.fixed.p_const_w, 30.0);
  EXPECT_EQ(m.fixed.categories.size(), 2u);
  EXPECT_EQ(m.energies.components[2].clock, "memory");
  EXPECT_LT(m.fit.train_mape_pct, 1e-6);
  // The model file round-trips exactly.
  EXPECT_EQ(AccelWattchModelToJson(m), ReadFile(model_path));

  // predict at each kernel's own pair reproduces the measurements, with a breakdown that sums.
  const std::string pred = f.dir + "/pred.csv";
  CommandResult p = RunStage("wattcal-predict", {"--model", model_path, "--activity", heldout,
                                                 "--out", pred, "--breakdown", "--quiet"});
  ASSERT_EQ(p.exit_code, 0) << p.output;
  std::istringstream lines(ReadFile(pred));
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(
      line,
      "kernel,benchmark,category,static_category,active_sms,lanes_per_warp,f_core_mhz,f_mem_mhz,"
      "predicted_w,measured_w,error_pct,const_w,static_w,idle_w,dynamic_w,A_w,B_w,M_w");
  int rows = 0;
  while (std::getline(lines, line)) {
    std::vector<double> v;
    std::stringstream ss(line);
    std::string cell;
    std::vector<std::string> cells;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    ASSERT_EQ(cells.size(), 18u) << line;
    const double predicted = std::stod(cells[8]), measured = std::stod(cells[9]);
    EXPECT_NEAR(predicted, measured, 1e-5 * measured) << line;
    double parts = 0, dynamic = 0;
    for (int i = 11; i <= 13; ++i) parts += std::stod(cells[i]);
    for (int i = 15; i <= 17; ++i) dynamic += std::stod(cells[i]);
    EXPECT_NEAR(dynamic, std::stod(cells[14]), 1e-5);
    EXPECT_NEAR(parts + std::stod(cells[14]), predicted, 1e-5);
    ++rows;
  }
  EXPECT_EQ(rows, 8);

  // At other pairs: 8 kernels x 2 x 1 pairs, no measured power there; byte-identical rerun.
  const std::string pairs = f.dir + "/pairs.csv";
  const std::vector<std::string> pair_args = {"--model",     model_path, "--activity",   heldout,
                                              "--out",       pairs,      "--f-core-mhz", "700,1100",
                                              "--f-mem-mhz", "1000",     "--quiet"};
  p = RunStage("wattcal-predict", pair_args);
  ASSERT_EQ(p.exit_code, 0) << p.output;
  const std::string first = ReadFile(pairs);
  EXPECT_EQ(std::count(first.begin(), first.end(), '\n'), 17);
  EXPECT_NE(first.find(",700,1000,"), std::string::npos);
  EXPECT_NE(first.find(",1100,1000,"), std::string::npos);
  ASSERT_EQ(RunStage("wattcal-predict", pair_args).exit_code, 0);
  EXPECT_EQ(ReadFile(pairs), first);

  // validate scores the held-out activity table through the model's own terms.
  const std::string metrics = f.dir + "/metrics.json";
  const CommandResult v = RunStage(
      "wattcal-validate", {"--mode", "accelwattch", "--model", model_path, "--heldout", heldout,
                           "--metrics", metrics, "--predictions", f.dir + "/vpred.csv", "--quiet"});
  ASSERT_EQ(v.exit_code, 0) << v.output;
  const nlohmann::json j = nlohmann::json::parse(ReadFile(metrics));
  EXPECT_LT(j["mape_pct"].get<double>(), 1e-4);
  EXPECT_EQ(j["points"].get<int>(), 8);
  EXPECT_TRUE(j.contains("per_freq_pair"));
}

// Units come from the column names: power in mW and time in ms read as W and s; the same
// quantity in two units is an error naming the second column.
TEST(AccelWattchPowerModel, ActivityUnitsFromColumnNames) {
  const std::string dir = ScratchDir();
  const std::string w =
      WriteFile(dir + "/w.csv", std::string(kHeader) + "k1,b,int,4,24,800,500,2,1,120.5,1,2,3,4\n");
  const std::string mw =
      WriteFile(dir + "/mw.csv",
                "kernel,benchmark,category,active_sms,lanes_per_warp,f_core_mhz,f_mem_mhz,"
                "elapsed_ms,launches,mean_power_mw,a1,a2,b,m\n"
                "k1,b,int,4,24,800,500,2000,1,120500,1,2,3,4\n");
  const ActivityTable a = ReadActivityTable(w), b = ReadActivityTable(mw);
  ASSERT_EQ(b.num_kernels(), 1);
  EXPECT_TRUE(LooksLikeActivityTable(mw));
  EXPECT_DOUBLE_EQ(b.kernels[0].elapsed_s, a.kernels[0].elapsed_s);
  EXPECT_DOUBLE_EQ(b.kernels[0].mean_power_w, a.kernels[0].mean_power_w);
  EXPECT_EQ(b.counters, a.counters);
  const std::string both =
      WriteFile(dir + "/both.csv",
                "kernel,active_sms,lanes_per_warp,f_core_mhz,elapsed_s,mean_power_w,"
                "mean_power_mw\nk1,4,24,800,2,120.5,120500\n");
  try {
    ReadActivityTable(both);
    ADD_FAILURE() << "two power columns";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("both.csv:1: mean_power_mw"), std::string::npos)
        << e.what();
  }
}

TEST(AccelWattchPowerModel, StageErrorsAndNoPartialOutput) {
  const Files f = WriteTerms(ScratchDir());
  const std::vector<double> truth = {1.0, 1.0, 1.0};
  std::string csv = NoiseFreeActivity(f, truth, 6, 3);
  // Line 4: a kernel on more SMs than the GPU has.
  std::vector<std::string> rows;
  std::istringstream in(csv);
  std::string line;
  while (std::getline(in, line)) rows.push_back(line);
  std::vector<std::string> cells;
  {
    std::stringstream ss(rows[3]);
    std::string cell;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
  }
  cells[3] = "12";
  std::string joined;
  for (size_t i = 0; i < cells.size(); ++i) joined += (i ? "," : "") + cells[i];
  rows[3] = joined;
  std::string bad;
  for (const std::string& r : rows) bad += r + "\n";
  const std::string activity = WriteFile(f.dir + "/bad.csv", bad);
  const std::string out = f.dir + "/model.json";
  CommandResult r = RunStage("wattcal-calibrate", CalibrateArgs(f, activity, out));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("bad.csv:4: active_sms"), std::string::npos) << r.output;
  EXPECT_FALSE(FileExists(out));

  // A measured power missing from a training kernel.
  std::string no_power = csv;
  const size_t second_row = no_power.find('\n', no_power.find('\n') + 1) + 1;
  const size_t row_end = no_power.find('\n', second_row);
  std::string row = no_power.substr(second_row, row_end - second_row);
  std::vector<std::string> c;
  std::stringstream ss(row);
  std::string cell;
  while (std::getline(ss, cell, ',')) c.push_back(cell);
  c[9] = "";
  row.clear();
  for (size_t i = 0; i < c.size(); ++i) row += (i ? "," : "") + c[i];
  no_power.replace(second_row, row_end - second_row, row);
  r = RunStage("wattcal-calibrate",
               CalibrateArgs(f, WriteFile(f.dir + "/nopower.csv", no_power), out));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("nopower.csv:3: mean_power_w"), std::string::npos) << r.output;
  EXPECT_FALSE(FileExists(out));

  // Options: the whole model needs all four term files; --components excludes --activity.
  const std::string good = WriteFile(f.dir + "/good.csv", csv);
  r = RunStage("wattcal-calibrate", {"--method", "accelwattch", "--activity", good, "--energies",
                                     f.energies, "--out", out});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--constant"), std::string::npos) << r.output;
  r = RunStage("wattcal-calibrate",
               {"--method", "dvfs", "--train", good, "--energies", f.energies, "--out", out});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_FALSE(FileExists(out));

  // --voltage-curve: one that misses the static term's clock is an option error; a good one
  // is carried in the model file.
  std::vector<std::string> curve_args = CalibrateArgs(f, good, out);
  curve_args.insert(curve_args.end(),
                    {"--voltage-curve",
                     WriteFile(f.dir + "/vf_low.csv", "f_core_mhz,voltage_v\n500,0.7\n900,0.9\n")});
  r = RunStage("wattcal-calibrate", curve_args);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("outside the curve"), std::string::npos) << r.output;
  EXPECT_FALSE(FileExists(out));
  curve_args.back() = WriteFile(f.dir + "/vf.csv", "f_core_mhz,voltage_v\n500,0.7\n1100,1.05\n");
  r = RunStage("wattcal-calibrate", curve_args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(ReadFile(out).find("\"voltage_curve\""), std::string::npos);

  // predict: --f-core-mhz must be > 0, and a dvfs-only flag is refused for AccelWattch models.
  ASSERT_EQ(RunStage("wattcal-calibrate", CalibrateArgs(f, good, out)).exit_code, 0);
  const std::string pred = f.dir + "/pred.csv";
  r = RunStage("wattcal-predict",
               {"--model", out, "--activity", good, "--out", pred, "--f-core-mhz", "0"});
  testing::ExpectRefused(r, 1, {"--f-core-mhz"}, {pred});
  r = RunStage("wattcal-predict",
               {"--model", out, "--activity", good, "--out", pred, "--mode", "fixed"});
  testing::ExpectRefused(r, 1, {"--mode"}, {pred});
}

}  // namespace
}  // namespace wattcal
