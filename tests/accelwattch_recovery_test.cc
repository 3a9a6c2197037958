// AccelWattch's dynamic scaling factors (MICRO'21 Eqs. 12-14) recovered from noisy dumps that
// go through wattcal-ingest, as a user runs the chain (Makefile.runs volta-dynamic):
//
//   wattcal-synth --accelwattch-sweeps (AccelWattch §4) -> ingest -> constant, static, idle
//   wattcal-synth --accelwattch-sweeps (dynamic list)   -> nvidia-smi log, windows, ncu raw page
//   wattcal-ingest --settle-ms 100 --accelwattch-activity -> activity table (counts, power)
//   wattcal-calibrate --method accelwattch --activity ... -> x, with the paper's orderings
//   wattcal-validate / wattcal-predict on held-out kernels at three clocks and any other
//
// against the virtual GV100's truth (truth_accelwattch.json: x_i = E_i / E-hat_i from
// microbench_specs/virtual_volta_energies.json; truth_power.csv).
//
// Two sources of error, tested apart:
// * With AccelWattch Eq. 10's fixed terms at their true values (from the truth's own
//   equation), the fit sees only the measurement noise (0.3% run-to-run per kernel, 0.5 W
//   sensor noise, the window's steady state). Worst errors over seeds 1-10: INTP 7.4% (its
//   kernels spend 9% of their power on it, issue power dominates), FPUP 5.8%, FP_SINP 4.3%,
//   the others <= 3.4%. Tolerances: INTP 11%, FPUP 9%, the others 6%. SCHEDP is not tested
//   (nanosleep draws < 0.5% of any kernel's power, so power cannot pin its factor: its worst
//   error is 131%).
// * With the fixed terms from wattcal-constant/-static/-idle on the AccelWattch §4 sweeps,
//   the static model's error for the int_fp category (the truth's half-warp weight 0.6 lies
//   between AccelWattch Eq. 4 and AccelWattch Eq. 5, so the chosen model misses the full-warp
//   static power by ~3 W at 80 SMs) is absorbed by the factors of the components int_fp
//   kernels stress, FPUP and FP_MULP; the others stay close. Worst over seeds 1-10: FPUP
//   13.3%, FP_MULP 10.3%, INTP 9.6%, the others <= 5.7%. Tolerances: FPUP 20%, FP_MULP 15%,
//   INTP 14%, the others 9%.
// The tolerances are about 1.5x the worst error over seeds 1-10 (SeedSweepStaysWithinTheTolerances
// below checks every seed against them and prints the worst).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <boost/filesystem.hpp>
#include <nlohmann/json.hpp>

#include "accelwattch/scaling_model.h"
#include "io/sweep.h"
#include "synth/accelwattch_sweeps.h"
#include "test_support.h"

namespace wattcal {
namespace {

using testing::CommandResult;
using testing::FileExists;
using testing::ReadFile;
using testing::RunStage;
using testing::ScratchDir;
using testing::SeedFromTestName;
using testing::WriteFile;

const std::string kSpecs = std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs";
const std::string kSpec = kSpecs + "/virtual_volta.json";
const std::string kEnergies = kSpecs + "/virtual_volta_energies.json";

nlohmann::json ReadJson(const std::string& path) { return nlohmann::json::parse(ReadFile(path)); }

void RunOk(const std::string& stage, const std::vector<std::string>& args) {
  std::vector<std::string> a = args;
  a.push_back("--quiet");
  const CommandResult r = RunStage(stage, a);
  ASSERT_EQ(r.exit_code, 0) << stage << "\n" << r.output;
}

// Synthesises `cfg` at `clocks` into dir and ingests it into dir/activity.csv (and
// dir/kernels.csv for the AccelWattch §4 stages).
void SynthIngest(const std::string& dir, unsigned seed, const std::string& cfg,
                 const std::string& clocks, bool activity) {
  std::vector<std::string> synth = {
      "--spec", kSpec, "--out-dir", dir, "--accelwattch-sweeps", "--seed", std::to_string(seed)};
  if (!cfg.empty()) synth.insert(synth.end(), {"--ubench", cfg});
  if (!clocks.empty()) synth.insert(synth.end(), {"--f-core-levels-mhz", clocks});
  ASSERT_NO_FATAL_FAILURE(RunOk("wattcal-synth", synth));
  std::vector<std::string> ingest = {"--power-log",        dir + "/power_log.csv", "--windows",
                                     dir + "/windows.csv", "--settle-ms",          "100"};
  if (activity) {
    ingest.insert(ingest.end(),
                  {"--counters", dir + "/counters.csv", "--description", dir + "/sweep.csv",
                   "--accelwattch-activity", dir + "/activity.csv"});
  } else {
    ingest.insert(ingest.end(), {"--out", dir + "/kernels.csv"});
  }
  ASSERT_NO_FATAL_FAILURE(RunOk("wattcal-ingest", ingest));
}

// The AccelWattch §4 stages on their sweeps: dir/{constant,static,idle}.json.
void FixedTermsFromSweeps(const std::string& dir, unsigned seed) {
  ASSERT_NO_FATAL_FAILURE(SynthIngest(dir, seed, "", "", false));
  const std::vector<std::string> sweep = {"--sweep", dir + "/kernels.csv", "--description",
                                          dir + "/sweep.csv"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> a = sweep;
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  ASSERT_NO_FATAL_FAILURE(RunOk("wattcal-constant", with({"--out", dir + "/constant.json"})));
  ASSERT_NO_FATAL_FAILURE(
      RunOk("wattcal-static", with({"--constant", dir + "/constant.json", "--reference-f-core-mhz",
                                    "1447", "--out", dir + "/static.json"})));
  ASSERT_NO_FATAL_FAILURE(
      RunOk("wattcal-idle", with({"--constant", dir + "/constant.json", "--f-core-mhz", "1447",
                                  "--out", dir + "/idle.json"})));
}

// AccelWattch Eq. 10's fixed terms at their true values, in the stages' output format: P_const; per
// category the static power of all SMs at 1 and 32 lanes from the truth's equation (exact for
// full warps as a linear model through them); per idle SM idle_sm_w + chip_static_w / N (what
// AccelWattch Eqs. 6-8 give on the truth, idle_power.h).
void TrueFixedTerms(const std::string& dir) {
  CampaignSpec campaign;
  std::string gpu, cfg;
  const VirtualVoltaSpec spec = ReadVirtualVoltaSpec(kSpec, &campaign, &gpu, &cfg);
  const double f = spec.reference_f_core_mhz;
  const int n = spec.sm_count;
  WriteFile(dir + "/constant.json", nlohmann::json{{"p_const_w", spec.constant_power_w}}.dump());
  nlohmann::json categories = nlohmann::json::object();
  for (const std::string& c : MixCategories()) {
    std::string bench;
    for (const VoltaBenchmark& b : spec.benchmarks) {
      if (b.category == c && bench.empty()) bench = b.benchmark;
    }
    ASSERT_FALSE(bench.empty()) << c;
    const double p1 = VoltaTruthPower(spec, bench, n, 1, f).static_w;
    const double p32 = VoltaTruthPower(spec, bench, n, spec.warp_size, f).static_w;
    categories[c] = {{"status", "ok"},
                     {"chosen_model", "linear"},
                     {"linear",
                      {{"p_static_first_lane_w", p1},
                       {"p_static_add_lane_w", (p32 - p1) / (spec.warp_size - 1)}}}};
  }
  WriteFile(dir + "/static.json", nlohmann::json{{"reference_f_core_mhz", f},
                                                 {"num_sms", n},
                                                 {"warp_size", spec.warp_size},
                                                 {"half_warp_lanes", spec.half_warp_lanes},
                                                 {"categories", categories}}
                                      .dump());
  WriteFile(
      dir + "/idle.json",
      nlohmann::json{{"f_core_mhz", f}, {"p_idle_sm_w", spec.idle_sm_w + spec.chip_static_w / n}}
          .dump());
}

struct Recovery {
  std::map<std::string, double> x, truth;
  double heldout_mape_pct = 0.0;
  std::string model_path;
};

// Fixed terms in `terms_dir`; the dynamic campaign and the fit in `dir`.
void Calibrate(const std::string& dir, const std::string& terms_dir, unsigned seed, Recovery* out) {
  const std::string train = dir + "/train";
  ASSERT_NO_FATAL_FAILURE(
      SynthIngest(train, seed, kSpecs + "/virtual_volta_dynamic_ubench.cfg", "1447", true));
  out->model_path = dir + "/model.json";
  ASSERT_NO_FATAL_FAILURE(RunOk(
      "wattcal-calibrate",
      {"--method", "accelwattch", "--activity", train + "/activity.csv", "--energies", kEnergies,
       "--constant", terms_dir + "/constant.json", "--static", terms_dir + "/static.json", "--idle",
       terms_dir + "/idle.json", "--default-category", "int", "--out", out->model_path}));
  const AccelWattchModel m = ReadAccelWattchModel(out->model_path);
  const nlohmann::json truth = ReadJson(train + "/truth_accelwattch.json");
  for (size_t i = 0; i < m.components.size(); ++i) {
    out->x[m.components[i]] = m.x[i];
    out->truth[m.components[i]] = truth["expected_scaling_factors"][m.components[i]].get<double>();
  }
}

void ExpectFactors(const Recovery& r, const std::map<std::string, double>& tolerance,
                   double default_tol) {
  ASSERT_EQ(r.x.size(), 12u);
  for (const auto& [c, x] : r.x) {
    if (c == "SCHEDP") continue;  // not identifiable from power (see the top of the file)
    const auto it = tolerance.find(c);
    const double tol = it == tolerance.end() ? default_tol : it->second;
    EXPECT_NEAR(x / r.truth.at(c), 1.0, tol) << c << ": x = " << x << ", true " << r.truth.at(c);
  }
}

TEST(AccelWattchRecovery, ScalingFactorsFromDumpsWithTrueFixedTerms) {
  const std::string dir = ScratchDir();
  ASSERT_NO_FATAL_FAILURE(TrueFixedTerms(dir));
  Recovery r;
  ASSERT_NO_FATAL_FAILURE(Calibrate(dir, dir, SeedFromTestName(), &r));
  ExpectFactors(r, {{"INTP", 0.11}, {"FPUP", 0.09}}, 0.06);
  // Every bound and every ordering of AccelWattch Eq. 14 holds in the result (checked on
  // reading too).
  const AccelWattchModel m = ReadAccelWattchModel(r.model_path);
  EXPECT_EQ(m.orderings.size(), 7u);
  for (const Ordering& o : m.orderings) {
    EXPECT_LE(m.x[m.FindComponent(o.lower)], m.x[m.FindComponent(o.upper)]) << o.Text();
  }
  EXPECT_EQ(m.fit.max_constraint_violation, 0.0);
}

// The whole chain: AccelWattch §4 stages, the dynamic fit, then the model on held-out kernels
// (other SM counts, divergent warps, ACT_CORE mixes, INT_MEM) at 1447, 1140 and 825 MHz, and
// predicted at clocks no kernel ran at against the truth's own power.
TEST(AccelWattchRecovery, WholeChainFromDumpsPredictsHeldOutKernels) {
  const std::string dir = ScratchDir();
  const unsigned seed = SeedFromTestName();
  const std::string terms = dir + "/sweeps";
  ASSERT_NO_FATAL_FAILURE(FixedTermsFromSweeps(terms, seed));
  Recovery r;
  ASSERT_NO_FATAL_FAILURE(Calibrate(dir, terms, seed + 1, &r));
  ExpectFactors(r, {{"FPUP", 0.20}, {"FP_MULP", 0.15}, {"INTP", 0.14}}, 0.09);

  const std::string heldout = dir + "/heldout";
  ASSERT_NO_FATAL_FAILURE(SynthIngest(
      heldout, seed + 2, kSpecs + "/virtual_volta_validation_ubench.cfg", "1447,1140,825", true));
  ASSERT_NO_FATAL_FAILURE(RunOk(
      "wattcal-validate",
      {"--mode", "accelwattch", "--model", r.model_path, "--heldout", heldout + "/activity.csv",
       "--predictions", dir + "/pred.csv", "--metrics", dir + "/metrics.json"}));
  const nlohmann::json metrics = ReadJson(dir + "/metrics.json");
  EXPECT_EQ(metrics["points"].get<int>(), 60);
  EXPECT_LT(metrics["mape_pct"].get<double>(), 3.5);
  EXPECT_GT(metrics["pearson_r"].get<double>(), 0.99);
  EXPECT_EQ(metrics["per_freq_pair"].size(), 3u);

  // AccelWattch Eq. 12 at clocks the kernels did not run at (activity per cycle kept, V ~ f),
  // against the truth's noise-free power there: full-warp kernels of a known category within 4%.
  ASSERT_NO_FATAL_FAILURE(RunOk(
      "wattcal-predict", {"--model", r.model_path, "--activity", heldout + "/activity.csv",
                          "--f-core-mhz", "510,1597", "--breakdown", "--out", dir + "/dvfs.csv"}));
  CampaignSpec campaign;
  std::string gpu, cfg;
  const VirtualVoltaSpec spec = ReadVirtualVoltaSpec(kSpec, &campaign, &gpu, &cfg);
  std::istringstream lines(ReadFile(dir + "/dvfs.csv"));
  std::string line;
  std::getline(lines, line);
  int checked = 0;
  while (std::getline(lines, line)) {
    std::vector<std::string> c;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) c.push_back(cell);
    ASSERT_GE(c.size(), 15u) << line;
    const int sms = std::stoi(c[4]), lanes = std::stoi(c[5]);
    // Divergent warps (the truth's dynamic power follows the sawtooth, the counters the lanes)
    // and kernels without a category (served by the default category's static model) carry
    // model error of their own: they are in the held-out MAPE above, not tested here.
    if (lanes != 32 || c[2].empty()) continue;
    const double f = std::stod(c[6]), predicted = std::stod(c[8]);
    const double truth = VoltaTruthPower(spec, c[1], sms, lanes, f).total_w();
    EXPECT_NEAR(predicted / truth, 1.0, 0.04) << line;
    ++checked;
  }
  EXPECT_GE(checked, 40);
}

// The recovery over seeds 1-10, the basis of the tolerances above (about 1.5x the worst): every
// seed must stay within them, so the single-seed tests' tolerances are what the data support, not
// what one lucky seed gave. ~2.5 s; prints the worst errors.
TEST(AccelWattchRecovery, SeedSweepStaysWithinTheTolerances) {
  std::map<std::string, double> worst_true_terms, worst_chain;
  const std::string base = ScratchDir();
  for (unsigned seed = 1; seed <= 10; ++seed) {
    const std::string dir = base + fmt::format("/s{}", seed);
    boost::filesystem::create_directories(dir);
    ASSERT_NO_FATAL_FAILURE(TrueFixedTerms(dir));
    Recovery a;
    ASSERT_NO_FATAL_FAILURE(Calibrate(dir + "/a", dir, seed, &a));
    ASSERT_NO_FATAL_FAILURE(FixedTermsFromSweeps(dir + "/sweeps", seed));
    Recovery b;
    ASSERT_NO_FATAL_FAILURE(Calibrate(dir + "/b", dir + "/sweeps", seed + 1, &b));
    SCOPED_TRACE(fmt::format("seed {}", seed));
    ExpectFactors(a, {{"INTP", 0.11}, {"FPUP", 0.09}}, 0.06);
    ExpectFactors(b, {{"FPUP", 0.20}, {"FP_MULP", 0.15}, {"INTP", 0.14}}, 0.09);
    for (const auto& [c, x] : a.x) {
      worst_true_terms[c] = std::max(worst_true_terms[c], std::abs(x / a.truth[c] - 1));
      worst_chain[c] = std::max(worst_chain[c], std::abs(b.x[c] / b.truth[c] - 1));
    }
  }
  for (const auto& [c, e] : worst_true_terms) {
    std::printf("%-10s worst |x/x_true - 1|: true fixed terms %6.2f%%, whole chain %6.2f%%\n",
                c.c_str(), 100 * e, 100 * worst_chain[c]);
  }
}

}  // namespace
}  // namespace wattcal
