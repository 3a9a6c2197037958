// Judging the activity-free DVFS model (clocks/vf_fit.h) the way a user would use it, by
// k-fold cross-validation by workload (crossval/cross_validation.h's AssignFolds):
//
//   - power across clocks: each held-out workload is measured at one anchor clock only; its
//     activity follows from that one power (VfModel::ActivityFrom) and it is predicted at every
//     other clock it ran at, beside the naive P(f) = P(anchor) * f / f_anchor;
//   - the energy-optimal clock: its run time at two clocks gives T(f) = t_mem + c / f (the CRISP
//     baselines' form: a part that does not scale with the core clock and one that does), its
//     energy E(f) = P(f) T(f) at every requested clock, with the clock the power limit holds when
//     P exceeds it; the clock of least E (and of least E x T) is chosen and scored against the
//     measured energies: the energy lost against the true optimum, beside two fixed choices (the
//     highest clock; the one clock best on average over the training workloads), and the same
//     choice kept between the two timed clocks (no extrapolation of T);
//   - energy at every clock from one clock's run: E(f) = P(f) T(f) against the measured energy
//     at each requested clock (not the anchor), its MAPE per clock and overall, with T(f) from
//     the two timed clocks and, beside it, from the anchor's run time alone (T(f) = T(anchor)
//     f_anchor / f: all of the run scales with the core clock, CRISP's t_mem = 0).
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "clocks/vf_fit.h"
#include "io/clock_runs.h"

namespace wattcal {

struct ClockCvOptions {
  int folds = 5;
  unsigned seed = 1;  // AssignFolds' shuffle
  // The one clock a held-out workload is measured at, MHz (a requested clock of the data); NaN:
  // the requested clock nearest the middle of the range.
  double anchor_mhz = std::numeric_limits<double>::quiet_NaN();
  // The two requested clocks whose run times give T(f); empty: no clock choice.
  std::vector<double> time_clocks_mhz;
  VfFitOptions fit;
};

struct ClockCvPoint {
  std::string workload;
  int fold = 0;
  double f_requested_mhz = 0.0;
  double f_core_mhz = 0.0;  // as it ran
  double measured_w = 0.0;
  double predicted_w = 0.0;     // the model at f_core_mhz, from the anchor
  double proportional_w = 0.0;  // P(anchor) * f_core / f_anchor
  // The model at the requested clock with the power limit: the clock it would hold and the power.
  double predicted_held_mhz = 0.0;
  double predicted_held_w = 0.0;
  bool measured_held_below = false;  // the GPU held a lower clock than requested
};

// One requested clock's candidate for a held-out workload.
struct ClockCandidate {
  double f_requested_mhz = 0.0;
  double predicted_f_mhz = 0.0;  // with the power limit
  double predicted_w = 0.0;
  double predicted_time_s = 0.0;
  double predicted_energy_j = 0.0;
  double measured_energy_j = 0.0;
  double measured_time_s = 0.0;
  // From the anchor's run time alone: T(anchor) f_anchor / f at the predicted clock.
  double predicted_time_anchor_s = 0.0;
  double predicted_energy_anchor_j = 0.0;
};

// The energy of the held-out workloads at one requested clock, predicted from the anchor.
struct EnergyAtClock {
  double f_requested_mhz = 0.0;
  int points = 0;
  double energy_mape_pct = 0.0;              // E = P T, T through the two timed clocks
  double energy_anchor_time_mape_pct = 0.0;  // E = P T, T from the anchor's run time alone
  double time_mape_pct = 0.0;                // T alone, through the two timed clocks
  double time_anchor_mape_pct = 0.0;         // T alone, from the anchor's run time
};

struct ClockChoice {
  std::string workload;
  int fold = 0;
  double t_mem_s = 0.0;  // T(f) = t_mem + c / f
  double c_s_mhz = 0.0;
  double chosen_mhz = 0.0;       // least predicted energy
  double optimum_mhz = 0.0;      // least measured energy
  double energy_loss_pct = 0.0;  // E_meas(chosen) / E_meas(optimum) - 1
  // The same choice among the clocks between the two timed ones only, where T(f) interpolates
  // rather than extrapolates.
  double chosen_within_mhz = 0.0;
  double within_loss_pct = 0.0;
  double chosen_edp_mhz = 0.0;
  double optimum_edp_mhz = 0.0;
  double edp_loss_pct = 0.0;
  double highest_mhz = 0.0;  // its highest measured requested clock
  double highest_loss_pct = 0.0;
  double best_fixed_mhz = 0.0;  // best on average over the fold's training workloads
  double best_fixed_loss_pct = 0.0;
  std::vector<ClockCandidate> candidates;
};

struct ClockCvResult {
  double anchor_mhz = 0.0;
  std::vector<std::vector<std::string>> fold_workloads;
  std::vector<VfModel> fold_models;
  std::vector<ClockCvPoint> points;  // every held-out point, by fold then table order
  std::vector<ClockChoice> choices;  // empty without time clocks
  // With time clocks: the energy at every requested clock but the anchor, and over them all.
  std::vector<EnergyAtClock> energy_by_clock;
  EnergyAtClock energy_overall;    // f_requested_mhz NaN
  std::vector<std::string> notes;  // workloads left unscored and why
  double mape_pct = 0.0;
  double proportional_mape_pct = 0.0;
  double mean_energy_loss_pct = 0.0;
  double mean_within_loss_pct = 0.0;
  double mean_edp_loss_pct = 0.0;
  double mean_highest_loss_pct = 0.0;
  double mean_best_fixed_loss_pct = 0.0;
};

// OptionError when the anchor or a time clock is not a requested clock, or folds are out of
// range; InputError from the fits, and naming the first row without a run time when time clocks
// are given.
ClockCvResult CrossValidateClocks(const ClockRunTable& table, const ClockCvOptions& options);

// The requested clock nearest the middle of the table's range (the default anchor).
double MiddleClock(const ClockRunTable& table);

// The energy MAPE of `choices` at every requested clock but `anchor_mhz` (ascending), and over
// them all (`overall`).
std::vector<EnergyAtClock> EnergyByClock(const std::vector<ClockChoice>& choices, double anchor_mhz,
                                         EnergyAtClock* overall);

// T(f) = t_mem + c / f through two (f, T) points; t_mem and c are held >= 0 (a run time that
// does not fall with the clock is all t_mem, one that falls faster than 1/f is all c / f).
void RunTimeThroughTwo(double f1, double t1, double f2, double t2, double* t_mem_s,
                       double* c_s_mhz);

// The table's rows of `workloads` only (or all but them, with `keep` false).
ClockRunTable SelectWorkloads(const ClockRunTable& table, const std::vector<std::string>& workloads,
                              bool keep);

}  // namespace wattcal
