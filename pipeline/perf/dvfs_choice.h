// Choosing a kernel's core V-F pair: predicted run time at each pair (a run-time model's
// output, perf_models.h) joined with the calibrated power model (TPDS Eqs. 4-6, or the scaling
// form of TPDS Eq. 10) into energy, EDP and ED²P, minimised under an optional slowdown budget —
// the controller of CRISP §4/§5.2 (Nath & Tullsen, MICRO'15), one decision per kernel.
//
// Conventions (all stated in the README):
//   * Candidates: the core frequency levels of the power model at which the times file has a
//     prediction; the memory frequency stays at the model's default (the run-time models
//     predict core-frequency scaling only). The default pair is the model's default pair; the
//     times file must predict there.
//   * Activity: each kernel's utilisations measured at the default pair (a tidy/gpmTOOL
//     activity or measured file, matched by name). With activity_scaling = events (default),
//     the counted events are conserved when the clock changes, so utilisations follow the run
//     time: U_core(f) = U_core(f0) T(f0) f0 / (T(f) f), U_mem(f) = U_mem(f0) T(f0) / T(f);
//     with fixed, U(f) = U(f0) (gpmTOOL's assumption for its prediction files).
//   * Power: dvfs = P_model(U(f), f); scaling = P_model(U(f), f) / P_model(U(f0), f0) x
//     P_meas(f0) (needs measured power at the default pair in the activity file).
//   * E = P T, EDP = E T, ED²P = E T². Slowdown = 100 (T(f) / T(f0) - 1) %. Ties go to the
//     higher frequency (the shorter run).
//   * With true run times (the virtual GPU's SM model, or measurements), the same power model
//     evaluated with the true times (and the activity they imply) is the truth: the choice's
//     true objective is compared with the true optimum under the same budget.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/corpus.h"
#include "model/power_model.h"
#include "perf/perf_models.h"

namespace wattcal {

enum class DvfsObjective { kEnergy, kEdp, kEd2p };
const char* DvfsObjectiveName(DvfsObjective objective);  // "energy", "edp", "ed2p"

enum class PowerMode { kDvfs, kScaling };
const char* PowerModeName(PowerMode mode);  // "dvfs", "scaling"
bool ParsePowerMode(const std::string& text, PowerMode* mode);

enum class ActivityScaling { kEvents, kFixed };
const char* ActivityScalingName(ActivityScaling scaling);  // "events", "fixed"
bool ParseActivityScaling(const std::string& text, ActivityScaling* scaling);

struct DvfsOptions {
  // What the choice minimises.
  DvfsObjective objective = DvfsObjective::kEdp;
  // Largest predicted slowdown against the default pair, %; < 0 = no budget.
  double max_slowdown_pct = -1.0;
  // How power at a pair is predicted (see above).
  PowerMode power_mode = PowerMode::kDvfs;
  // How utilisations follow the clock (see above).
  ActivityScaling activity_scaling = ActivityScaling::kEvents;
  // Run-time models to choose with (names in the times file); empty = all of them.
  std::vector<std::string> perf_models;

  bool Check(std::string* error) const;
};

// One candidate pair of one kernel under one run-time model.
struct DvfsPoint {
  double f_core_mhz = 0.0;
  double time_s = 0.0;
  double power_w = 0.0;
  double energy_j = 0.0;
  double edp_js = 0.0;
  double ed2p_js2 = 0.0;
  double slowdown_pct = 0.0;
};

// The decision for one kernel and run-time model.
struct DvfsChoice {
  std::string kernel;
  std::string perf_model;
  double f_mem_mhz = 0.0;  // the memory frequency every candidate runs at (0: one domain)
  // Every candidate, ascending frequency, as predicted.
  std::vector<DvfsPoint> predicted;
  int chosen = -1;         // index into `predicted`
  int default_index = -1;  // index of the default pair
  // With true times: every candidate as it truly is, the true optimum under the budget, and
  // the true point of the choice.
  bool has_truth = false;
  std::vector<DvfsPoint> truth;
  int optimum = -1;

  const DvfsPoint& choice() const { return predicted[static_cast<size_t>(chosen)]; }
  const DvfsPoint& at_default() const { return predicted[static_cast<size_t>(default_index)]; }
};

// Chooses the pair of every kernel in `times` (order of first appearance) under every run-time
// model (AllPerfModels order for known names, then the others by first appearance). `actual`
// may be empty (no truth). Throws OptionError when `options` fails Check(), and InputError
// naming the offending file, line and field when the model is not a DVFS model, the layouts
// differ, a kernel has no (or two) activity rows at the default pair, a kernel of the activity
// has no predicted times (it would be dropped from the choices), a model lacks the default
// pair, the scaling mode finds no measured power, a requested run-time model is absent, or a
// true time is missing for a candidate.
std::vector<DvfsChoice> ChooseOperatingPoints(const PowerModel& model,
                                              const std::string& model_path, const Corpus& activity,
                                              const std::vector<TimePrediction>& times,
                                              const std::string& times_path,
                                              const std::vector<ActualTime>& actual,
                                              const std::string& actual_path,
                                              const DvfsOptions& options);

// The objective's value at a point.
double ObjectiveValue(DvfsObjective objective, const DvfsPoint& point);

// The table, one row per choice:
//   kernel,perf_model,objective,f_core_mhz,f_mem_mhz,predicted_time_s,predicted_power_w,
//   predicted_energy_j,predicted_edp_js,predicted_ed2p_js2,slowdown_pct,default_f_core_mhz,
//   default_time_s,default_power_w,default_energy_j,energy_saving_pct,edp_saving_pct,
//   ed2p_saving_pct
// and with truth: true_time_s,true_power_w,true_energy_j,true_edp_js,true_ed2p_js2,
//   true_slowdown_pct,true_energy_saving_pct,true_edp_saving_pct,true_ed2p_saving_pct,
//   optimum_f_core_mhz,objective_loss_pct
// (savings are against the default pair; objective_loss_pct = 100 (true objective at the
// choice / true objective at the optimum - 1)).
std::string DvfsChoicesToCsv(const std::vector<DvfsChoice>& choices, const DvfsOptions& options);

// Every candidate: kernel,perf_model,f_core_mhz,f_mem_mhz,predicted_time_s,predicted_power_w,
//   predicted_energy_j,predicted_edp_js,predicted_ed2p_js2,chosen[,true_time_s,true_power_w,
//   true_energy_j,true_edp_js,true_ed2p_js2,optimum]
std::string DvfsCurvesToCsv(const std::vector<DvfsChoice>& choices);

// Per run-time model: kernels, mean predicted savings, and with truth the mean/max objective
// loss, kernels chosen optimally, mean true savings of energy / EDP / ED²P and slowdown, and
// the kernels whose true slowdown broke the budget.
struct DvfsModelSummary {
  std::string perf_model;
  int kernels = 0;
  double mean_energy_saving_pct = 0.0;  // predicted
  double mean_edp_saving_pct = 0.0;
  double mean_ed2p_saving_pct = 0.0;
  bool has_truth = false;
  double mean_objective_loss_pct = 0.0;
  double max_objective_loss_pct = 0.0;
  int optimal_choices = 0;
  double mean_true_energy_saving_pct = 0.0;
  double mean_true_edp_saving_pct = 0.0;
  double mean_true_ed2p_saving_pct = 0.0;
  double mean_true_slowdown_pct = 0.0;
  int budget_violations = 0;
};
std::vector<DvfsModelSummary> SummariseDvfs(const std::vector<DvfsChoice>& choices,
                                            const DvfsOptions& options);
nlohmann::json DvfsSummaryToJson(const std::vector<DvfsModelSummary>& summary,
                                 const DvfsOptions& options);
// A short table for the terminal.
std::string FormatDvfsSummary(const std::vector<DvfsModelSummary>& summary,
                              const DvfsOptions& options);

}  // namespace wattcal
