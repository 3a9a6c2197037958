// wattcal-clocks (issue 25): the activity-free DVFS model recovers a known truth from power alone,
// power-limited rows included; its cross-validation and clock choice are exact on exact data; the
// per-run readers convert units and refuse bad tables with file and line; the stage writes its
// tables, figures and provenance, byte-identical on a rerun; and on the real A100 file it beats
// P ~ f from one clock by the margin the issue states.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "clocks/clock_cv.h"
#include "clocks/vf_fit.h"
#include "io/clock_runs.h"
#include "io/measured_voltage.h"
#include "report/clocks_report.h"
#include "test_support.h"
#include "util/errors.h"

namespace wattcal {
namespace {

using testing::ReadFile;
using testing::RunStage;
using testing::ScratchDir;
using testing::WriteFile;

// A virtual GPU without counters: 10 clocks, the voltage at its floor (0.8) up to 900 MHz and
// linear to 1 at 1400 MHz, 60 W static at v = 1, 15 W constant, eight workloads.
VfModel TruthModel(double power_limit_w) {
  VfModel m;
  m.reference_mhz = 1400;
  for (double f = 500; f <= 1400; f += 100) {
    m.clocks_mhz.push_back(f);
    m.v_rel.push_back(f <= 900 ? 0.8 : 0.8 + 0.2 * (f - 900) / 500);
  }
  m.static_w = 60;
  m.constant_w = 15;
  m.power_limit_w = power_limit_w;
  for (int w = 0; w < 8; ++w) m.activity_w_per_mhz[fmt::format("app{}", w)] = 0.04 + 0.025 * w;
  return m;
}

// The truth's runs as a user records them: each workload at every clock (the clock the power
// limit holds when it bites), power from the model, run time t_mem + c / f.
std::string TruthRunsCsv(const VfModel& truth) {
  std::string csv = "workload,f_core_requested_mhz,f_core_mhz,power_w,time_s\n";
  int i = 0;
  for (const auto& [w, g] : truth.activity_w_per_mhz) {
    const double t_mem = 0.002 * i, c = 5.0 + i;
    for (double f : truth.clocks_mhz) {
      const HeldClock h = ClockUnderLimit(truth, g, f);
      csv += fmt::format("{},{:.17g},{:.17g},{:.17g},{:.17g}\n", w, f, h.f_mhz, h.power_w,
                         t_mem + c / h.f_mhz);
    }
    ++i;
  }
  return csv;
}

// The run time of `workload` at the requested clock `f` in `table`.
double ReadTruthTime(const ClockRunTable& table, const std::string& workload, double f) {
  for (const ClockRun& r : table.runs) {
    if (r.workload == workload && r.f_requested_mhz == f) return r.time_s;
  }
  ADD_FAILURE() << workload << " has no run at " << f;
  return std::nan("");
}

TEST(ClocksFit, RecoversTheTruthFromPowerAlone) {
  const VfModel truth = TruthModel(250.0);
  const std::string path = WriteFile(ScratchDir() + "/runs.csv", TruthRunsCsv(truth));
  const ClockRunTable table = ReadClockRuns(path);
  int held = 0;
  for (const ClockRun& r : table.runs) held += r.HeldBelowRequest() ? 1 : 0;
  ASSERT_GE(held, 4) << "the truth must have power-limited rows";
  VfFitOptions options;
  options.power_limit_w = 250.0;
  const VfFitResult fit = FitVfModel(table, options);
  EXPECT_TRUE(fit.converged);
  EXPECT_LT(fit.mape_pct, 1e-4);
  for (size_t k = 0; k < truth.clocks_mhz.size(); ++k) {
    EXPECT_NEAR(fit.model.v_rel[k], truth.v_rel[k], 1e-5) << truth.clocks_mhz[k] << " MHz";
  }
  EXPECT_NEAR(fit.model.static_w, 60.0, 1e-3);
  EXPECT_NEAR(fit.model.constant_w, 15.0, 1e-3);
  for (const auto& [w, g] : truth.activity_w_per_mhz)
    EXPECT_NEAR(fit.model.activity_w_per_mhz.at(w), g, 1e-7) << w;
}

TEST(ClocksFit, CrossValidationAndClockChoiceAreExactOnExactData) {
  const VfModel truth = TruthModel(250.0);
  const ClockRunTable table =
      ReadClockRuns(WriteFile(ScratchDir() + "/runs.csv", TruthRunsCsv(truth)));
  ClockCvOptions options;
  options.folds = 4;
  options.anchor_mhz = 900;
  options.time_clocks_mhz = {600, 1000};
  options.fit.power_limit_w = 250.0;
  const ClockCvResult cv = CrossValidateClocks(table, options);
  EXPECT_EQ(cv.points.size(), 8u * 9u);
  EXPECT_LT(cv.mape_pct, 1e-3);
  EXPECT_GT(cv.proportional_mape_pct, 5.0);
  int limited = 0;
  for (const ClockCvPoint& p : cv.points) {
    if (!p.measured_held_below) continue;
    ++limited;
    // The clock the model says the limit holds is the one the truth ran at.
    EXPECT_NEAR(p.predicted_held_mhz, p.f_core_mhz, 0.05)
        << p.workload << " at " << p.f_requested_mhz;
    EXPECT_NEAR(p.predicted_held_w, 250.0, 1e-3);
  }
  EXPECT_GE(limited, 4);
  ASSERT_EQ(cv.choices.size(), 8u);
  for (const ClockChoice& c : cv.choices) {
    EXPECT_EQ(c.chosen_mhz, c.optimum_mhz) << c.workload;
    EXPECT_NEAR(c.energy_loss_pct, 0.0, 1e-9);
  }
}

// The fit's residuals: plain least squares in W by default, relative on request. On noisy data
// each fit is the better one by its own measure, and they differ.
TEST(ClocksFit, AbsoluteResidualsByDefaultRelativeOnRequest) {
  const VfModel truth = TruthModel(250.0);
  std::string csv = TruthRunsCsv(truth);
  // 3% multiplicative noise on every power (column 4), seeded.
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0.0, 0.03);
  std::istringstream in(csv);
  std::string line, noisy;
  std::getline(in, line);
  noisy = line + "\n";
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) f.push_back(cell);
    f[3] = fmt::format("{:.17g}", std::stod(f[3]) * (1.0 + noise(rng)));
    noisy += fmt::format("{},{},{},{},{}\n", f[0], f[1], f[2], f[3], f[4]);
  }
  const ClockRunTable table = ReadClockRuns(WriteFile(ScratchDir() + "/noisy.csv", noisy));
  VfFitOptions options;
  options.power_limit_w = 250.0;
  ASSERT_EQ(options.residuals, VfResiduals::kAbsolute);
  const VfFitResult plain = FitVfModel(table, options);
  options.residuals = VfResiduals::kRelative;
  const VfFitResult relative = FitVfModel(table, options);
  EXPECT_EQ(plain.residuals, VfResiduals::kAbsolute);
  EXPECT_EQ(relative.residuals, VfResiduals::kRelative);
  auto sums = [&](const VfFitResult& fit, double* watts, double* rel) {
    *watts = *rel = 0.0;
    for (size_t i = 0; i < table.runs.size(); ++i) {
      const double d = fit.fitted_w[i] - table.runs[i].power_w;
      *watts += d * d;
      *rel += d * d / (table.runs[i].power_w * table.runs[i].power_w);
    }
  };
  double plain_w, plain_rel, rel_w, rel_rel;
  sums(plain, &plain_w, &plain_rel);
  sums(relative, &rel_w, &rel_rel);
  EXPECT_LT(plain_w, rel_w * (1.0 - 1e-4));
  EXPECT_LT(rel_rel, plain_rel * (1.0 - 1e-4));
  EXPECT_NEAR(plain.cost, 0.5 * plain_w, 1e-6 * plain_w);
  EXPECT_NEAR(relative.cost, 0.5 * rel_rel, 1e-6 * rel_rel);
}

// Energy at every clock from one clock: exact with T(f) through two timed clocks on the truth
// (t_mem + c / f), and from the anchor's run time alone exact only where t_mem = 0.
TEST(ClocksFit, EnergyAtEveryClockFromOneClock) {
  const VfModel truth = TruthModel(250.0);
  const ClockRunTable table =
      ReadClockRuns(WriteFile(ScratchDir() + "/runs.csv", TruthRunsCsv(truth)));
  ClockCvOptions options;
  options.folds = 4;
  options.anchor_mhz = 900;
  options.time_clocks_mhz = {600, 1000};
  options.fit.power_limit_w = 250.0;
  const ClockCvResult cv = CrossValidateClocks(table, options);
  ASSERT_EQ(cv.energy_by_clock.size(), 9u);  // every clock but the anchor
  for (const EnergyAtClock& e : cv.energy_by_clock) {
    EXPECT_NE(e.f_requested_mhz, 900.0);
    EXPECT_EQ(e.points, 8);
    EXPECT_LT(e.energy_mape_pct, 1e-3) << e.f_requested_mhz;
    EXPECT_LT(e.time_mape_pct, 1e-6) << e.f_requested_mhz;
  }
  EXPECT_EQ(cv.energy_overall.points, 72);
  EXPECT_LT(cv.energy_overall.energy_mape_pct, 1e-3);
  EXPECT_GT(cv.energy_overall.energy_anchor_time_mape_pct, 1.0);
  // By hand at one clock: the anchor-time energy of every workload and its MAPE.
  double sum = 0.0;
  int n = 0;
  for (const ClockChoice& c : cv.choices) {
    const double g = truth.activity_w_per_mhz.at(c.workload);
    const double t_anchor = ReadTruthTime(table, c.workload, 900);
    for (const ClockCandidate& k : c.candidates) {
      const HeldClock h = ClockUnderLimit(truth, g, k.f_requested_mhz);
      EXPECT_NEAR(k.predicted_time_anchor_s, t_anchor * 900.0 / h.f_mhz, 1e-6 * t_anchor);
      EXPECT_NEAR(k.predicted_energy_anchor_j, h.power_w * t_anchor * 900.0 / h.f_mhz,
                  1e-4 * k.measured_energy_j);
      if (k.f_requested_mhz == 500) {
        sum += std::abs(h.power_w * t_anchor * 900.0 / h.f_mhz / k.measured_energy_j - 1.0);
        ++n;
      }
    }
  }
  ASSERT_EQ(n, 8);
  EXPECT_EQ(cv.energy_by_clock.front().f_requested_mhz, 500.0);
  EXPECT_NEAR(cv.energy_by_clock.front().energy_anchor_time_mape_pct, 100.0 * sum / n, 1e-3);
}

TEST(ClocksFit, RefusesDataThatCannotGiveTheVoltages) {
  const std::string dir = ScratchDir();
  const std::string head = "workload,f_core_mhz,power_w\n";
  testing::ExpectInputError(
      [&] {
        FitVfModel(ReadClockRuns(
                       WriteFile(dir + "/one_clock.csv",
                                 head + "a,600,100\na,900,150\nb,600,80\nb,900,120\nc,900,130\n")),
                   {});
      },
      6, {"one_clock.csv", "'c' was measured at one clock only", "--predict"});
  testing::ExpectInputError(
      [&] {
        FitVfModel(ReadClockRuns(
                       WriteFile(dir + "/one_workload.csv",
                                 head + "a,600,100\na,900,150\nb,600,80\nb,900,120\na,1200,200\n")),
                   {});
      },
      6, {"one_workload.csv", "1200 MHz has one workload only ('a')"});
  // Power falling with the clock for most workloads: the columns are mislabelled.
  testing::ExpectInputError(
      [&] {
        FitVfModel(ReadClockRuns(
                       WriteFile(dir + "/falling.csv", head + "a,600,150\na,900,100\nb,600,180\nb,"
                                                              "900,120\nc,600,90\nc,900,95\n")),
                   {});
      },
      3,
      {"falling.csv", "the power of 2 of the 3 workloads falls",
       "'a' from 150.0 W at 600 MHz (line 2) to 100.0 W at 900 MHz", "mislabelled"});
  // A drop between neighbouring clocks inside a rising curve is fitted, with a warning naming it.
  const VfFitResult fit =
      FitVfModel(ReadClockRuns(WriteFile(
                     dir + "/dip.csv",
                     head + "a,600,100\na,700,80\na,900,150\nb,600,80\nb,700,90\nb,900,120\n")),
                 {});
  ASSERT_EQ(fit.warnings.size(), 1u);
  EXPECT_NE(
      fit.warnings[0].find("dip.csv:3: 'a' draws 80.0 W at 700 MHz, 20% less than at 600 MHz"),
      std::string::npos)
      << fit.warnings[0];
}

TEST(ClockRuns, ReadsEveryShapeWithItsUnits) {
  const std::string dir = ScratchDir();
  // A begin/end energy monitor's table: energy in mJ, time in ms, clocks in GHz; a repeat merged.
  const ClockRunTable t = ReadClockRuns(WriteFile(dir + "/monitor.csv",
                                                  "workload,f_core_ghz,energy_mj,time_ms\nfft,0.6,"
                                                  "2000,20\nfft,0.6,2200,20\nfft,1.2,3000,10\n"));
  EXPECT_EQ(t.format, "wattcal");
  ASSERT_EQ(t.runs.size(), 2u);
  EXPECT_EQ(t.merged_repeats, 1);
  EXPECT_DOUBLE_EQ(t.runs[0].f_core_mhz, 600.0);
  EXPECT_NEAR(t.runs[0].power_w, 105.0, 1e-12);  // (100 W + 110 W) / 2
  EXPECT_NEAR(t.runs[0].time_s, 0.020, 1e-15);
  EXPECT_NEAR(t.runs[1].power_w, 300.0, 1e-12);
  // EnergAIzer: the requested clock from the name, the held one from avg_freq.
  const ClockRunTable e =
      ReadClockRuns(WriteFile(dir + "/nvml_parsed.csv",
                              "workload,energy,time,avg_freq,temp\nm_b1_freq1410_iter9.csv,5.0,20."
                              "0,1380.5,70\nm_b1_freq600_iter3.csv,2.0,40.0,600,60\n"));
  EXPECT_EQ(e.format, "energaizer");
  ASSERT_EQ(e.runs.size(), 2u);
  EXPECT_EQ(e.runs[0].workload, "m_b1");
  EXPECT_DOUBLE_EQ(e.runs[0].f_requested_mhz, 600.0);
  EXPECT_NEAR(e.runs[0].power_w, 50.0, 1e-12);  // 2 J over 40 ms
  EXPECT_TRUE(e.runs[1].HeldBelowRequest());
  EXPECT_DOUBLE_EQ(e.runs[1].f_core_mhz, 1380.5);
  testing::ExpectInputError(
      [&] {
        ReadClockRuns(WriteFile(dir + "/bad_name.csv",
                                "workload,energy,time,avg_freq\nm_b1_iter9.csv,5,20,1380\n"));
      },
      2, {"bad_name.csv", "workload", "_freq<MHz>_iter<N>.csv"});
  testing::ExpectInputError(
      [&] {
        ReadClockRuns(WriteFile(dir + "/no_power.csv", "workload,f_core_mhz,energy_j\na,600,3\n"));
      },
      1, {"no_power.csv", "power_w (or energy_j and time_s)"});
  testing::ExpectInputError(
      [&] {
        ReadClockRuns(WriteFile(dir + "/hot.csv", "workload,f_core_mhz,power_w\na,600,1e6\n"));
      },
      2, {"hot.csv", "power_w"});
  testing::ExpectInputError(
      [&] {
        ReadClockRuns(
            {WriteFile(dir + "/x.csv", "workload,f_core_mhz,power_w\na,600,100\n"),
             WriteFile(dir + "/y.csv", "workload,f_core_mhz,power_w\nb,600,90\na,900,120\n")});
      },
      3, {"y.csv", "'a' is also in", "x.csv (line 2)"});
}

TEST(ClockRuns, ReadsTheRealFiles) {
  WATTCAL_REQUIRE_DATASETS();
  const ClockRunTable a100 = ReadClockRuns(testing::Dataset("energaizer_a100/nvml_parsed.csv"));
  EXPECT_EQ(a100.format, "energaizer");
  EXPECT_EQ(a100.runs.size(), 217u);
  EXPECT_EQ(a100.Workloads().size(), 20u);
  int held = 0;
  for (const ClockRun& r : a100.runs) held += r.HeldBelowRequest() ? 1 : 0;
  EXPECT_EQ(held, 31);  // the dataset's README: 31 rows more than 1% below F, all at F >= 1140
  const ClockRunTable v100 = ReadClockRuns(
      std::vector<std::string>{testing::Dataset("nsfcac_v100/spec_accel_21apps_dvfs_mean.csv"),
                               testing::Dataset("nsfcac_v100/hpc_3apps_dvfs_mean.csv")});
  EXPECT_EQ(v100.format, "nsfcac");
  EXPECT_EQ(v100.runs.size(), 2808u);
  EXPECT_EQ(v100.RequestedClocks().size(), 117u);
}

TEST(MeasuredVoltage, ReadsNvidiaSmiQueriesAndCsv) {
  const std::string dir = ScratchDir();
  const std::string block = R"(
==============NVSMI LOG==============

Timestamp                                 : Fri Nov 27 10:00:00 2026
Driver Version                            : 580.159.04

Attached GPUs                             : 1
GPU 00000000:17:00.0
    Clocks
        Graphics                          : {0} MHz
        SM                                : {0} MHz
        Memory                            : 1215 MHz
    Max Clocks
        Graphics                          : 1410 MHz
    Voltage
        Graphics                          : {1} mV
)";
  const auto smi =
      ReadMeasuredVoltages(WriteFile(dir + "/voltage.txt", fmt::format(block, 1410, "881.250") +
                                                               fmt::format(block, 600, "712.500")));
  ASSERT_EQ(smi.size(), 2u);
  EXPECT_DOUBLE_EQ(smi[0].f_core_mhz, 600.0);
  EXPECT_DOUBLE_EQ(smi[0].voltage_mv, 712.5);
  EXPECT_DOUBLE_EQ(smi[1].voltage_mv, 881.25);
  const std::string no_voltage =
      fmt::format(block, 900, "1").substr(0, fmt::format(block, 900, "1").find("    Voltage"));
  testing::ExpectInputError(
      [&] { ReadMeasuredVoltages(WriteFile(dir + "/clock_only.txt", no_voltage)); }, 8,
      {"clock_only.txt", "without its voltage", "-d VOLTAGE,CLOCK"});
  const auto csv =
      ReadMeasuredVoltages(WriteFile(dir + "/v.csv", "f_core_mhz,voltage_v\n1410,0.88125\n"));
  ASSERT_EQ(csv.size(), 1u);
  EXPECT_DOUBLE_EQ(csv[0].voltage_mv, 881.25);
}

TEST(ClocksRunTime, ThroughTwoPointsWithPhysicalSigns) {
  double t_mem = 0, c = 0;
  RunTimeThroughTwo(500, 0.1 + 20.0 / 500, 1000, 0.1 + 20.0 / 1000, &t_mem, &c);
  EXPECT_NEAR(t_mem, 0.1, 1e-12);
  EXPECT_NEAR(c, 20.0, 1e-9);
  RunTimeThroughTwo(500, 1.0, 1000, 1.1, &t_mem, &c);  // slower at the higher clock: noise
  EXPECT_EQ(c, 0.0);
  EXPECT_NEAR(t_mem, 1.05, 1e-12);
  RunTimeThroughTwo(500, 0.05, 1000, 0.02, &t_mem, &c);  // faster than 1/f
  EXPECT_EQ(t_mem, 0.0);
  EXPECT_GT(c, 0.0);
}

TEST(ClocksReport, ShortNamesDropTheSharedSuffix) {
  EXPECT_EQ(ShortWorkloadNames({"bert_b8_modeprefill_attneager", "gpt2_b32_modeprefill_attneager"}),
            (std::vector<std::string>{"bert_b8", "gpt2_b32"}));
  EXPECT_EQ(ShortWorkloadNames({"fft", "ifft"}), (std::vector<std::string>{"fft", "ifft"}));
  EXPECT_EQ(ShortWorkloadNames({"a_x", "x"}), (std::vector<std::string>{"a_x", "x"}));
}

TEST(ClocksStage, WritesEveryTableFigureAndProvenanceByteIdentically) {
  WATTCAL_REQUIRE_GNUPLOT("wattcal-clocks figures");
  const std::string dir = ScratchDir();
  const std::string runs = WriteFile(dir + "/runs.csv", TruthRunsCsv(TruthModel(250.0)));
  const std::vector<std::string> args = {"--runs",          runs,  "--out-dir",     dir + "/run",
                                         "--anchor-mhz",    "900", "--time-clocks", "600,1000",
                                         "--power-limit-w", "250", "--folds",       "4"};
  const testing::CommandResult r = RunStage("wattcal-clocks", args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("CV by workload from 900 MHz: 0.00%"), std::string::npos) << r.output;
  EXPECT_EQ(ReadFile(dir + "/run/voltages.csv").substr(0, 17), "f_core_mhz,v_rel\n");
  EXPECT_EQ(ReadFile(dir + "/run/cv_predictions.csv")
                .rfind("workload,f_core_mhz,measured_w,predicted_w,", 0),
            0u);
  EXPECT_EQ(ReadFile(dir + "/run/clock_choice.csv").rfind("workload,chosen_f_core_mhz,", 0), 0u);
  const std::string energy = ReadFile(dir + "/run/energy_at_clocks.csv");
  EXPECT_EQ(energy.rfind("workload,fold,f_core_requested_mhz,predicted_f_core_mhz,predicted_w,"
                         "measured_time_s,predicted_time_s,predicted_time_anchor_only_s,"
                         "measured_energy_j,predicted_energy_j,predicted_energy_anchor_only_j,"
                         "energy_error_pct,energy_anchor_only_error_pct,anchor_f_core_mhz\n",
                         0),
            0u);
  EXPECT_EQ(std::count(energy.begin(), energy.end(), '\n'), 1 + 8 * 9);  // the anchor left out
  const nlohmann::json summary = nlohmann::json::parse(ReadFile(dir + "/run/clocks_summary.json"));
  EXPECT_EQ(summary["fit_residuals"], "absolute");
  EXPECT_LT(summary["energy_mape_pct"].get<double>(), 1e-3);
  ASSERT_EQ(summary["energy_by_clock"].size(), 9u);
  EXPECT_EQ(summary["energy_by_clock"][0]["f_core_requested_mhz"], 500.0);
  EXPECT_EQ(summary["energy_by_clock"][0]["points"], 8);
  EXPECT_NE(r.output.find("energy at every clock from 900 MHz: MAPE 0.00%"), std::string::npos)
      << r.output;
  EXPECT_TRUE(testing::HasProvenance(dir + "/run/vf_model.json"));
  for (const char* f : {"vf_curve", "cv_error_by_clock", "energy_error_by_clock"})
    testing::ExpectFigurePng(dir + "/run/figures/" + f + ".png");
  for (const char* f : {"power_vs_clock", "energy_vs_clock"}) {
    testing::ExpectFigurePng(dir + "/run/figures/" + std::string(f) + ".png",
                             FigureSize{1200, 1000});
  }
  const std::string index = ReadFile(dir + "/run/index.md");
  EXPECT_NE(index.find("## The energy-optimal clock"), std::string::npos);
  EXPECT_NE(index.find("## Energy at every clock from one clock"), std::string::npos);
  const std::vector<std::string> files = {"vf_model.json",
                                          "voltages.csv",
                                          "cv_predictions.csv",
                                          "clock_choice.csv",
                                          "energy_at_clocks.csv",
                                          "index.md",
                                          "index.html",
                                          "figures/power_vs_clock.svg",
                                          "figures/energy_error_by_clock.svg"};
  std::vector<std::string> before;
  for (const std::string& f : files) before.push_back(ReadFile(dir + "/run/" + f));
  ASSERT_EQ(RunStage("wattcal-clocks", args).exit_code, 0);
  for (size_t i = 0; i < files.size(); ++i)
    EXPECT_EQ(ReadFile(dir + "/run/" + files[i]), before[i]) << files[i];
}

TEST(ClocksStage, BadInputLeavesNothingBehind) {
  const std::string dir = ScratchDir();
  const std::string runs = WriteFile(
      dir + "/runs.csv", "workload,f_core_mhz,power_w\na,600,100\na,900,150\nb,900,120\n");
  const testing::CommandResult r =
      RunStage("wattcal-clocks", {"--runs", runs, "--out-dir", dir + "/run"});
  EXPECT_EQ(r.exit_code, static_cast<int>(kExitInput)) << r.output;
  EXPECT_NE(r.output.find("runs.csv:4"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("'b' was measured at one clock only"), std::string::npos) << r.output;
  EXPECT_FALSE(testing::FileExists(dir + "/run"));
  const testing::CommandResult anchor = RunStage(
      "wattcal-clocks", {"--runs", WriteFile(dir + "/ok.csv", TruthRunsCsv(TruthModel(250.0))),
                         "--out-dir", dir + "/run", "--anchor-mhz", "950", "--no-figures"});
  EXPECT_EQ(anchor.exit_code, static_cast<int>(kExitOptions)) << anchor.output;
  EXPECT_NE(anchor.output.find(
                "anchor clock 950 MHz is not one of the requested clocks (500 .. 1400 MHz)"),
            std::string::npos)
      << anchor.output;
  EXPECT_FALSE(testing::FileExists(dir + "/run"));
}

// A new workload measured at one clock, predicted at every calibrated clock: the truth's power,
// and the clock the limit holds where it bites; the measured voltage drawn beside the estimate.
TEST(ClocksStage, PredictsANewWorkloadFromOneClock) {
  const std::string dir = ScratchDir();
  VfModel truth = TruthModel(250.0);
  const std::string runs = WriteFile(dir + "/runs.csv", TruthRunsCsv(truth));
  const double g = 0.3;  // busier than any training workload
  const std::string fresh = WriteFile(
      dir + "/new.csv",
      fmt::format("workload,f_core_mhz,power_w\nnewapp,900,{:.17g}\n", truth.PowerAt(g, 900)));
  const std::string volts =
      WriteFile(dir + "/volts.csv", "f_core_mhz,voltage_mv\n500,700\n900,700\n1400,875\n");
  const testing::CommandResult r =
      RunStage("wattcal-clocks",
               {"--runs", runs, "--out-dir", dir + "/run", "--anchor-mhz", "900", "--power-limit-w",
                "250", "--predict", fresh, "--measured-voltage", volts, "--no-figures"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::istringstream in(ReadFile(dir + "/run/predictions.csv"));
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line,
            "workload,anchor_f_core_mhz,anchor_w,activity_w_per_mhz,f_core_requested_mhz,predicted_"
            "f_core_mhz,"
            "predicted_w,limited");
  int rows = 0, limited = 0;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) f.push_back(cell);
    ASSERT_EQ(f.size(), 8u) << line;
    EXPECT_NEAR(std::stod(f[3]), g, 1e-6);
    const HeldClock truth_held = ClockUnderLimit(truth, g, std::stod(f[4]));
    EXPECT_NEAR(std::stod(f[5]), truth_held.f_mhz, 0.05) << line;
    EXPECT_NEAR(std::stod(f[6]), truth_held.power_w, 1e-3) << line;
    limited += f[7] == "1" ? 1 : 0;
    ++rows;
  }
  EXPECT_EQ(rows, 10);
  EXPECT_GE(limited, 3);
  const std::string index = ReadFile(dir + "/run/index.md");
  EXPECT_NE(index.find("The measured supply voltage (3 readings from"), std::string::npos);
  EXPECT_NE(index.find("| 900 | 0.8000 | 0.8000 .. 0.8000 | 0.8000 |"), std::string::npos) << index;
}

// The issue's bar on the real A100 file (a plain scipy least-squares fit of the same model):
// cross-validation by workload from 1050 MHz at 4.0% or better, P ~ f at about 12.4%. The exact
// figures are pinned once, in expected/results.csv (HeadlineFigures).
TEST(ClocksStage, BeatsProportionalScalingOnTheRealA100) {
  WATTCAL_REQUIRE_DATASETS();
  const std::string dir = ScratchDir();
  const testing::CommandResult r = RunStage(
      "wattcal-clocks", {"--runs", testing::Dataset("energaizer_a100/nvml_parsed.csv"), "--out-dir",
                         dir, "--anchor-mhz", "1050", "--power-limit-w", "250", "--no-figures"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json s = nlohmann::json::parse(ReadFile(dir + "/clocks_summary.json"));
  EXPECT_LE(s["cv_mape_pct"].get<double>(), 3.95);
  EXPECT_NEAR(s["cv_proportional_mape_pct"].get<double>(), 12.4, 0.2);
  EXPECT_LE(s["training_mape_pct"].get<double>(), 3.0);
}

// The A100's voltage floor: relative residuals let the two lightest workloads (55-75 W, nearly
// flat across clocks) hold it at 0.804, above the measured supply voltage (about 0.76 relative
// to 1410 MHz); plain least squares in W puts it at 0.780 and predicts held-out power and energy
// better. Energy at every clock from the 1050 MHz run, with the run time through 600 and 1050 MHz.
TEST(ClocksStage, TheRealA100FloorAndEnergyAtEveryClock) {
  WATTCAL_REQUIRE_DATASETS();
  const std::string dir = ScratchDir();
  std::map<std::string, nlohmann::json> summary;
  std::map<std::string, double> floor;
  for (const std::string residuals : {"absolute", "relative"}) {
    const std::string out = dir + "/" + residuals;
    const testing::CommandResult r = RunStage(
        "wattcal-clocks", {"--runs", testing::Dataset("energaizer_a100/nvml_parsed.csv"),
                           "--out-dir", out, "--anchor-mhz", "1050", "--time-clocks", "600,1050",
                           "--power-limit-w", "250", "--fit-residuals", residuals, "--no-figures"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    summary[residuals] = nlohmann::json::parse(ReadFile(out + "/clocks_summary.json"));
    const std::string volts = ReadFile(out + "/voltages.csv");
    const size_t at = volts.find("\n510,");
    ASSERT_NE(at, std::string::npos) << volts;
    floor[residuals] = std::stod(volts.substr(at + 5));
  }
  EXPECT_NEAR(floor["relative"], 0.804, 0.002);
  EXPECT_NEAR(floor["absolute"], 0.780, 0.002);
  EXPECT_LT(summary["absolute"]["cv_mape_pct"].get<double>(),
            summary["relative"]["cv_mape_pct"].get<double>());
  EXPECT_LT(summary["absolute"]["energy_mape_pct"].get<double>(),
            summary["relative"]["energy_mape_pct"].get<double>());
  const nlohmann::json& s = summary["absolute"];
  EXPECT_LE(s["energy_mape_pct"].get<double>(), 4.0);
  // The anchor's run time alone (T ~ 1/f) is no substitute for a second timed clock here.
  EXPECT_GT(s["energy_anchor_time_only_mape_pct"].get<double>(), 8.0);
  ASSERT_EQ(s["energy_by_clock"].size(), 10u);
  for (const nlohmann::json& e : s["energy_by_clock"])
    EXPECT_LE(e["energy_mape_pct"].get<double>(), 8.0) << e.dump();
}

// Issue 35: small real data sets. The A100 file reduced to two or three clocks: a light workload
// draws less at 600 MHz than at 510 MHz (qwen2 1.5B, batch 8, 4096 tokens: 64 -> 56 W), which
// the fit once refused as "mislabelled" columns for the whole table. Such a workload is fitted as
// measured and named in a warning; only a table where most workloads fall is refused.
std::string A100AtClocks(const std::string& dir, const std::vector<int>& clocks) {
  std::istringstream in(ReadFile(testing::Dataset("energaizer_a100/nvml_parsed.csv")));
  std::string line, out;
  std::getline(in, line);
  out = line + "\n";
  while (std::getline(in, line)) {
    for (int f : clocks) {
      if (line.find(fmt::format("_freq{}_iter", f)) != std::string::npos) out += line + "\n";
    }
  }
  return WriteFile(dir + "/a100_" + std::to_string(clocks.size()) + "_clocks.csv", out);
}

TEST(ClocksStage, FitsTheRealA100ReducedToTwoOrThreeClocks) {
  WATTCAL_REQUIRE_DATASETS();
  const std::string dir = ScratchDir();
  for (const std::vector<int>& clocks : {std::vector<int>{510, 600}, {510, 600, 780}}) {
    SCOPED_TRACE(clocks.size());
    const std::string runs = A100AtClocks(dir, clocks);
    const std::string out = dir + "/run" + std::to_string(clocks.size());
    const testing::CommandResult r =
        RunStage("wattcal-clocks", {"--runs", runs, "--out-dir", out, "--no-figures"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("the power of 'qwen2model_qwen2-1p5b_pbf16_b8_s4096_modeprefill_"
                            "attneager' falls from"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("fitted as measured"), std::string::npos) << r.output;
    // Two clocks: the voltage, but not a0 apart from c.
    EXPECT_EQ(r.output.find("two clocks (510 and 600 MHz) give the voltage") != std::string::npos,
              clocks.size() == 2)
        << r.output;
    const nlohmann::json s = nlohmann::json::parse(ReadFile(out + "/clocks_summary.json"));
    EXPECT_TRUE(s["training_converged"].get<bool>());
    EXPECT_LE(s["cv_mape_pct"].get<double>(), 10.0) << s.dump();
  }
}

// A clock in GHz under a _mhz name (1.05 "MHz") is no GPU clock: refused with the file, line and
// column, and the name it would need; likewise MHz under _ghz and EnergAIzer's _freq<MHz>.
TEST(ClockRuns, RefusesAClockImplausibleForItsUnit) {
  const std::string dir = ScratchDir();
  testing::ExpectInputError(
      [&] {
        ReadClockRuns(
            WriteFile(dir + "/ghz.csv", "workload,f_core_mhz,power_w\na,1.05,200\na,1.41,250\n"));
      },
      2,
      {"ghz.csv", "f_core_mhz", "1.05 MHz is not a GPU core clock", "in GHz it would be 1050 MHz",
       "name the column f_core_ghz"});
  testing::ExpectInputError(
      [&] {
        ReadClockRuns(
            WriteFile(dir + "/mhz.csv",
                      "workload,f_core_requested_ghz,f_core_ghz,power_w\na,1.41,1410,250\n"));
      },
      2, {"mhz.csv", "f_core_ghz", "1410000 MHz is not a GPU core clock", "f_core_mhz"});
  testing::ExpectInputError(
      [&] {
        ReadClockRuns(WriteFile(dir + "/energaizer.csv",
                                "workload,energy,time,avg_freq\nm_b1_freq1_iter9.csv,5,20,1380\n"));
      },
      2, {"energaizer.csv", "workload (_freq)", "1 MHz is not a GPU core clock"});
  // The bounds themselves are clocks: 50 and 5000 MHz are read.
  EXPECT_EQ(ReadClockRuns(
                WriteFile(dir + "/edge.csv", "workload,f_core_mhz,power_w\na,50,20\na,5000,300\n"))
                .runs.size(),
            2u);
}

// Two rows of one workload at one requested clock are averaged, and a warning names both lines
// and both powers (once this was silent).
TEST(ClockRuns, RepeatsAreAveragedWithAWarningNamingBothLines) {
  const std::string dir = ScratchDir();
  const std::string runs = WriteFile(
      dir + "/runs.csv",
      "workload,f_core_mhz,power_w\na,600,100\nb,600,80\na,900,150\nb,900,120\na,600,110\nc,600,"
      "90\nc,900,140\nd,600,70\nd,900,95\n");
  const ClockRunTable t = ReadClockRuns(runs);
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_EQ(t.warnings[0], runs +
                               ":6: 'a' at 600 MHz repeats line 2: the runs are averaged (110.0 W "
                               "here, 100.0 W there)");
  EXPECT_DOUBLE_EQ(t.runs[0].power_w, 105.0);
  // The stage says so too.
  const testing::CommandResult r =
      RunStage("wattcal-clocks",
               {"--runs", runs, "--out-dir", dir + "/run", "--no-figures", "--folds", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(t.warnings[0]), std::string::npos) << r.output;
}

// --time-clocks needs a run time on every row: one empty time_s is refused naming its file and
// line (once an option error naming neither).
TEST(ClocksStage, TimeClocksNameTheRowWithoutARunTime) {
  const std::string dir = ScratchDir();
  const std::string runs =
      WriteFile(dir + "/runs.csv",
                "workload,f_core_mhz,power_w,time_s\na,600,100,2.0\na,900,150,1.5\nb,600,80,3.0\n"
                "b,900,120,\n");
  const testing::CommandResult r =
      RunStage("wattcal-clocks", {"--runs", runs, "--out-dir", dir + "/run", "--no-figures",
                                  "--folds", "2", "--time-clocks", "600,900"});
  testing::ExpectRefused(r, static_cast<int>(kExitInput),
                         {runs + ":5: time: 'b' at 900 MHz has no run time", "--time-clocks"},
                         {dir + "/run/vf_model.json"});
  EXPECT_FALSE(testing::FileExists(dir + "/run"));
}

}  // namespace
}  // namespace wattcal
