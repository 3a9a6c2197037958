#include "clocks/clock_cv.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "util/errors.h"
#include "util/logging.h"
#include "util/stats.h"
#include "crossval/cross_validation.h"

namespace wattcal {
namespace {

bool SameClock(double a, double b) { return std::abs(a - b) < 1e-6; }

const ClockRun* RunAt(const std::vector<const ClockRun*>& rows, double requested_mhz) {
  for (const ClockRun* r : rows) {
    if (SameClock(r->f_requested_mhz, requested_mhz)) return r;
  }
  return nullptr;
}

double RequireClock(const std::vector<double>& clocks, double f, const std::string& what) {
  for (double c : clocks) {
    if (SameClock(c, f)) return c;
  }
  throw OptionError(fmt::format("{} {:g} MHz is not one of the requested clocks ({:g} .. {:g} MHz)",
                                what, f, clocks.front(), clocks.back()));
}

// The requested clock of least mean relative measured energy over `workloads` (each against its
// own least energy), among the clocks every one of them ran at.
double BestFixedClock(const std::map<std::string, std::vector<const ClockRun*>>& by_workload,
                      const std::vector<std::string>& workloads,
                      const std::vector<double>& clocks) {
  double best = clocks.back(), best_mean = std::numeric_limits<double>::infinity();
  for (double f : clocks) {
    double sum = 0.0;
    bool all = true;
    for (const std::string& w : workloads) {
      const auto& rows = by_workload.at(w);
      const ClockRun* r = RunAt(rows, f);
      if (r == nullptr) {
        all = false;
        break;
      }
      double least = std::numeric_limits<double>::infinity();
      for (const ClockRun* x : rows) least = std::min(least, x->energy_j);
      sum += r->energy_j / least;
    }
    if (all && sum < best_mean) {
      best_mean = sum;
      best = f;
    }
  }
  return best;
}

ClockChoice ChooseClock(const VfModel& model, double g, const std::vector<const ClockRun*>& rows,
                        const std::vector<double>& time_clocks, const ClockRun& anchor) {
  ClockChoice c;
  const ClockRun* r1 = RunAt(rows, time_clocks[0]);
  const ClockRun* r2 = RunAt(rows, time_clocks[1]);
  RunTimeThroughTwo(r1->f_core_mhz, r1->time_s, r2->f_core_mhz, r2->time_s, &c.t_mem_s, &c.c_s_mhz);
  double best_e = std::numeric_limits<double>::infinity(), best_edp = best_e, best_within = best_e;
  const double lo = std::min(time_clocks[0], time_clocks[1]),
               hi = std::max(time_clocks[0], time_clocks[1]);
  double least_e = best_e, least_edp = best_e;
  for (const ClockRun* r : rows) {
    ClockCandidate k;
    k.f_requested_mhz = r->f_requested_mhz;
    const HeldClock held = ClockUnderLimit(model, g, r->f_requested_mhz);
    k.predicted_f_mhz = held.f_mhz;
    k.predicted_w = held.power_w;
    k.predicted_time_s = c.t_mem_s + c.c_s_mhz / held.f_mhz;
    k.predicted_energy_j = k.predicted_w * k.predicted_time_s;
    k.predicted_time_anchor_s = anchor.time_s * anchor.f_core_mhz / held.f_mhz;
    k.predicted_energy_anchor_j = k.predicted_w * k.predicted_time_anchor_s;
    k.measured_energy_j = r->energy_j;
    k.measured_time_s = r->time_s;
    if (k.predicted_energy_j < best_e) {
      best_e = k.predicted_energy_j;
      c.chosen_mhz = k.f_requested_mhz;
    }
    if (r->f_requested_mhz >= lo - 1e-6 && r->f_requested_mhz <= hi + 1e-6 &&
        k.predicted_energy_j < best_within) {
      best_within = k.predicted_energy_j;
      c.chosen_within_mhz = k.f_requested_mhz;
    }
    if (k.predicted_energy_j * k.predicted_time_s < best_edp) {
      best_edp = k.predicted_energy_j * k.predicted_time_s;
      c.chosen_edp_mhz = k.f_requested_mhz;
    }
    if (r->energy_j < least_e) {
      least_e = r->energy_j;
      c.optimum_mhz = r->f_requested_mhz;
    }
    if (r->energy_j * r->time_s < least_edp) {
      least_edp = r->energy_j * r->time_s;
      c.optimum_edp_mhz = r->f_requested_mhz;
    }
    c.candidates.push_back(k);
  }
  c.energy_loss_pct = 100.0 * (RunAt(rows, c.chosen_mhz)->energy_j / least_e - 1.0);
  c.within_loss_pct = 100.0 * (RunAt(rows, c.chosen_within_mhz)->energy_j / least_e - 1.0);
  const ClockRun* edp = RunAt(rows, c.chosen_edp_mhz);
  c.edp_loss_pct = 100.0 * (edp->energy_j * edp->time_s / least_edp - 1.0);
  c.highest_mhz = rows.back()->f_requested_mhz;
  c.highest_loss_pct = 100.0 * (rows.back()->energy_j / least_e - 1.0);
  return c;
}

}  // namespace

std::vector<EnergyAtClock> EnergyByClock(const std::vector<ClockChoice>& choices, double anchor_mhz,
                                         EnergyAtClock* overall) {
  // Sums of absolute relative errors: energy, energy (anchor time), time, time (anchor time).
  std::map<double, std::array<double, 4>> sums;
  std::map<double, int> counts;
  std::array<double, 4> all = {0.0, 0.0, 0.0, 0.0};
  int n = 0;
  for (const ClockChoice& c : choices) {
    for (const ClockCandidate& k : c.candidates) {
      if (SameClock(k.f_requested_mhz, anchor_mhz)) continue;
      const std::array<double, 4> e = {
          std::abs(k.predicted_energy_j / k.measured_energy_j - 1.0),
          std::abs(k.predicted_energy_anchor_j / k.measured_energy_j - 1.0),
          std::abs(k.predicted_time_s / k.measured_time_s - 1.0),
          std::abs(k.predicted_time_anchor_s / k.measured_time_s - 1.0)};
      auto& s = sums[k.f_requested_mhz];
      for (size_t i = 0; i < 4; ++i) {
        s[i] += e[i];
        all[i] += e[i];
      }
      ++counts[k.f_requested_mhz];
      ++n;
    }
  }
  auto make = [](double f, const std::array<double, 4>& s, int count) {
    EnergyAtClock a;
    a.f_requested_mhz = f;
    a.points = count;
    const double scale = count > 0 ? 100.0 / count : std::nan("");
    a.energy_mape_pct = s[0] * scale;
    a.energy_anchor_time_mape_pct = s[1] * scale;
    a.time_mape_pct = s[2] * scale;
    a.time_anchor_mape_pct = s[3] * scale;
    return a;
  };
  std::vector<EnergyAtClock> out;
  for (const auto& [f, s] : sums) out.push_back(make(f, s, counts.at(f)));
  *overall = make(std::nan(""), all, n);
  return out;
}

void RunTimeThroughTwo(double f1, double t1, double f2, double t2, double* t_mem_s,
                       double* c_s_mhz) {
  const double c = (t1 - t2) / (1.0 / f1 - 1.0 / f2);
  const double t_mem = t1 - c / f1;
  if (c < 0.0) {
    *c_s_mhz = 0.0;
    *t_mem_s = 0.5 * (t1 + t2);
  } else if (t_mem < 0.0) {
    *t_mem_s = 0.0;
    *c_s_mhz =
        (t1 / f1 + t2 / f2) / (1.0 / (f1 * f1) + 1.0 / (f2 * f2));  // least squares through 0
  } else {
    *c_s_mhz = c;
    *t_mem_s = t_mem;
  }
}

double MiddleClock(const ClockRunTable& table) {
  const std::vector<double> clocks = table.RequestedClocks();
  const double middle = 0.5 * (clocks.front() + clocks.back());
  double best = clocks.front();
  for (double f : clocks) {
    if (std::abs(f - middle) < std::abs(best - middle)) best = f;
  }
  return best;
}

ClockRunTable SelectWorkloads(const ClockRunTable& table, const std::vector<std::string>& workloads,
                              bool keep) {
  const std::set<std::string> set(workloads.begin(), workloads.end());
  ClockRunTable out = table;
  out.runs.clear();
  for (const ClockRun& r : table.runs) {
    if ((set.count(r.workload) > 0) == keep) out.runs.push_back(r);
  }
  return out;
}

ClockCvResult CrossValidateClocks(const ClockRunTable& table, const ClockCvOptions& options) {
  const std::vector<std::string> workloads = table.Workloads();
  if (options.folds < 2 || options.folds > static_cast<int>(workloads.size())) {
    throw OptionError(fmt::format("--folds {}: need 2 .. {} (the number of workloads)",
                                  options.folds, workloads.size()));
  }
  const std::vector<double> clocks = table.RequestedClocks();
  ClockCvResult result;
  result.anchor_mhz =
      RequireClock(clocks, std::isnan(options.anchor_mhz) ? MiddleClock(table) : options.anchor_mhz,
                   "anchor clock");
  const bool choose = !options.time_clocks_mhz.empty();
  std::vector<double> time_clocks;
  if (choose) {
    if (options.time_clocks_mhz.size() != 2 ||
        SameClock(options.time_clocks_mhz[0], options.time_clocks_mhz[1])) {
      throw OptionError("--time-clocks: two different requested clocks");
    }
    for (const ClockRun& r : table.runs) {
      if (std::isfinite(r.time_s)) continue;
      throw InputError(r.path, r.line, "time",
                       fmt::format("'{}' at {:g} MHz has no run time: --time-clocks (the clock "
                                   "choice) needs one on every row",
                                   r.workload, r.f_requested_mhz));
    }
    for (double f : options.time_clocks_mhz)
      time_clocks.push_back(RequireClock(clocks, f, "time clock"));
  }
  std::map<std::string, std::vector<const ClockRun*>> by_workload;
  for (const ClockRun& r : table.runs) by_workload[r.workload].push_back(&r);

  result.fold_workloads = AssignFolds(workloads, options.folds, options.seed);
  std::vector<double> errors, proportional_errors;
  Progress progress("cross-validation by workload",
                    static_cast<int64_t>(result.fold_workloads.size()));
  for (size_t k = 0; k < result.fold_workloads.size(); ++k) {
    progress.Tick();
    const std::vector<std::string>& held = result.fold_workloads[k];
    const ClockRunTable training = SelectWorkloads(table, held, false);
    const VfModel model = FitVfModel(training, options.fit).model;
    result.fold_models.push_back(model);
    std::vector<std::string> trained;
    for (const std::string& w : workloads) {
      if (std::find(held.begin(), held.end(), w) == held.end()) trained.push_back(w);
    }
    const double best_fixed = choose ? BestFixedClock(by_workload, trained, clocks) : 0.0;
    for (const std::string& w : held) {
      const auto& rows = by_workload.at(w);
      const ClockRun* anchor = RunAt(rows, result.anchor_mhz);
      if (anchor == nullptr) {
        result.notes.push_back(fmt::format(
            "'{}' has no run at the anchor clock {:g} MHz: not scored", w, result.anchor_mhz));
        continue;
      }
      const double g = model.ActivityFrom(anchor->power_w, anchor->f_core_mhz);
      for (const ClockRun* r : rows) {
        if (r == anchor) continue;
        ClockCvPoint p;
        p.workload = w;
        p.fold = static_cast<int>(k);
        p.f_requested_mhz = r->f_requested_mhz;
        p.f_core_mhz = r->f_core_mhz;
        p.measured_w = r->power_w;
        p.predicted_w = model.PowerAt(g, r->f_core_mhz);
        p.proportional_w = anchor->power_w * r->f_core_mhz / anchor->f_core_mhz;
        const HeldClock h = ClockUnderLimit(model, g, r->f_requested_mhz);
        p.predicted_held_mhz = h.f_mhz;
        p.predicted_held_w = h.power_w;
        p.measured_held_below = r->HeldBelowRequest();
        errors.push_back(std::abs(p.predicted_w - p.measured_w) / p.measured_w);
        proportional_errors.push_back(std::abs(p.proportional_w - p.measured_w) / p.measured_w);
        result.points.push_back(p);
      }
      if (!choose) continue;
      if (RunAt(rows, time_clocks[0]) == nullptr || RunAt(rows, time_clocks[1]) == nullptr) {
        result.notes.push_back(fmt::format("'{}' lacks a run at a time clock: no clock chosen", w));
        continue;
      }
      ClockChoice c = ChooseClock(model, g, rows, time_clocks, *anchor);
      c.workload = w;
      c.fold = static_cast<int>(k);
      c.best_fixed_mhz = best_fixed;
      const ClockRun* fixed = RunAt(rows, best_fixed);
      double least = std::numeric_limits<double>::infinity();
      for (const ClockRun* r : rows) least = std::min(least, r->energy_j);
      c.best_fixed_loss_pct =
          fixed != nullptr ? 100.0 * (fixed->energy_j / least - 1.0) : std::nan("");
      result.choices.push_back(std::move(c));
    }
  }
  result.mape_pct = 100.0 * Mean(errors);
  result.proportional_mape_pct = 100.0 * Mean(proportional_errors);
  std::vector<double> e, within, edp, hi, fixed;
  for (const ClockChoice& c : result.choices) {
    e.push_back(c.energy_loss_pct);
    within.push_back(c.within_loss_pct);
    edp.push_back(c.edp_loss_pct);
    hi.push_back(c.highest_loss_pct);
    if (std::isfinite(c.best_fixed_loss_pct)) fixed.push_back(c.best_fixed_loss_pct);
  }
  if (choose)
    result.energy_by_clock =
        EnergyByClock(result.choices, result.anchor_mhz, &result.energy_overall);
  result.mean_energy_loss_pct = Mean(e);
  result.mean_within_loss_pct = Mean(within);
  result.mean_edp_loss_pct = Mean(edp);
  result.mean_highest_loss_pct = Mean(hi);
  result.mean_best_fixed_loss_pct = Mean(fixed);
  return result;
}

}  // namespace wattcal
