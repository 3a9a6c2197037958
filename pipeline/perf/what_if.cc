#include "perf/what_if.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "model/power_limit.h"
#include "model/vf_curve.h"
#include "perf/perf_models.h"
#include "util/csv_field.h"
#include "util/errors.h"
#include "util/nan.h"

namespace wattcal {

namespace {

double ChangePct(double value, double base) {
  return std::isfinite(value) && std::isfinite(base) && base > 0.0 ? 100.0 * (value - base) / base
                                                                   : kNaN;
}

// The run-time model of one workload: T(f) / T(f0).
struct TimeModel {
  const CrispCounters* crisp = nullptr;
  double memory_share = 0.0;
  std::string name;

  double Ratio(double f_mhz, double f0_mhz) const {
    if (crisp != nullptr) {
      return PredictTimeS(PerfModelKind::kCrisp, *crisp, f_mhz) /
             PredictTimeS(PerfModelKind::kCrisp, *crisp, f0_mhz);
    }
    // CRISP Eq. 2 with memory = m of the run's time (in units of the recorded run).
    return LinearModelCycles(1.0, memory_share, f0_mhz / f_mhz);
  }
};

TimeModel TimeModelFor(const PowerModel& model, const AppActivity& app,
                       const std::vector<CrispCounters>& crisp) {
  TimeModel t;
  for (const CrispCounters& c : crisp) {
    if (c.kernel == app.workload) t.crisp = &c;
  }
  if (t.crisp != nullptr) {
    t.name = "crisp";
  } else {
    t.memory_share = MemoryShare(model, app.util_frac);
    t.name = fmt::format("memory_split(m={:.3f})", t.memory_share);
  }
  return t;
}

std::string CurveRange(const VfCurve& curve) {
  return fmt::format("{:.0f} to {:.0f} MHz", curve.lowest_mhz(), curve.reference_mhz());
}

// One row at core clock f (already settled) against the recorded run's row.
WhatIfRow RowAt(const PowerModel& model, const VfCurve& curve, const AppPrediction& app,
                const WhatIfRow& base, const TimeModel& time, double f_mhz) {
  WhatIfRow r;
  r.workload = app.app.workload;
  r.f_core_mhz = f_mhz;
  r.predicted_w = PowerOnCurve(model, curve, app.app.util_frac.data(), f_mhz);
  r.time_model = time.name;
  const double ratio = time.Ratio(f_mhz, base.f_core_mhz);
  r.run_time_s = base.run_time_s * ratio;
  r.energy_j = r.predicted_w * r.run_time_s;
  r.power_change_pct = ChangePct(r.predicted_w, base.predicted_w);
  r.time_change_pct = 100.0 * (ratio - 1.0);
  // E = P T: the energy's change does not need the duration.
  r.energy_change_pct = 100.0 * (r.predicted_w * ratio / base.predicted_w - 1.0);
  std::vector<std::string> flags;
  if (f_mhz < curve.lowest_mhz()) {
    flags.push_back(fmt::format("{}:{:.0f}MHz", kPredictionFlagBelowCurve, curve.lowest_mhz()));
  }
  r.flags = JoinFlags(flags);
  return r;
}

void AddFlag(WhatIfRow* r, const std::string& flag) {
  r->flags += (r->flags.empty() ? "" : ";") + flag;
}

// --max-slowdown-pct: among a workload's rows (the recorded one included), the least energy with
// time_change_pct <= P.
void MarkLeastEnergy(std::vector<WhatIfRow>* rows, size_t first, double max_slowdown_pct) {
  size_t best = rows->size();
  for (size_t i = first; i < rows->size(); ++i) {
    const WhatIfRow& r = (*rows)[i];
    if (!(r.time_change_pct <= max_slowdown_pct + 1e-9)) continue;
    if (best == rows->size() || r.energy_change_pct < (*rows)[best].energy_change_pct) best = i;
  }
  if (best < rows->size()) {
    AddFlag(&(*rows)[best], fmt::format("least_energy_within_{:g}pct", max_slowdown_pct));
  }
}

}  // namespace

std::string WhatIfRoute() {
  return "a V-F curve comes from power recorded at other core clocks: the calibration suite at "
         "locked clocks (wattcal-capture --lock-clocks MHZ,..., then wattcal-calibrate --method "
         "dvfs "
         "estimates the voltages, or wattcal-clocks writes a vf_model.json for --vf-curve), or a "
         "suite whose tensor benchmarks the power cap held below the reference clock (their "
         "windows give wattcal-calibrate the curve). wattcal-capture --app does not lock clocks "
         "(it refuses --lock-clocks): an application at several clocks cannot be recorded with it "
         "today";
}

double MemoryShare(const PowerModel& model, const std::vector<double>& util_frac) {
  const std::vector<int> domain_of = model.layout.ComponentDomains();
  double m = 0.0;
  for (size_t i = 0; i < domain_of.size() && i < util_frac.size(); ++i) {
    if (domain_of[i] == 1) m += util_frac[i];
  }
  return std::clamp(m, 0.0, 1.0);
}

std::vector<WhatIfRow> PredictWhatIf(const PowerModel& model, const VfCurve& curve,
                                     const std::vector<AppPrediction>& apps,
                                     const WhatIfSettings& settings) {
  if (!curve.known()) {
    throw OptionError(
        "--at-clock and --at-power-limit need a V-F curve, and the model (trained on " +
        model.trained_on + ") has none: " + WhatIfRoute());
  }
  for (double f : settings.clocks_mhz) {
    if (!(f >= curve.lowest_mhz() && f <= curve.reference_mhz())) {
      throw OptionError(fmt::format(
          "--at-clock {} MHz lies outside the V-F curve ({}; {}): the data show nothing there. To "
          "reach it, {}",
          f, CurveRange(curve), curve.source, WhatIfRoute()));
    }
  }
  const double floor_mhz = kSettleSearchFloorFraction * curve.reference_mhz();
  std::vector<WhatIfRow> out;
  for (const AppPrediction& app : apps) {
    const double* u = app.app.util_frac.data();
    const TimeModel time = TimeModelFor(model, app.app, settings.crisp);
    const size_t first = out.size();
    WhatIfRow base;
    base.workload = app.app.workload;
    base.setting = "as_recorded";
    base.f_core_mhz = std::min(app.f_core_mhz, curve.reference_mhz());
    base.predicted_w = app.prediction.predicted_w;
    base.run_time_s = app.app.duration_s;
    base.energy_j = base.predicted_w * base.run_time_s;
    base.power_change_pct = base.time_change_pct = base.energy_change_pct = 0.0;
    base.time_model = time.name;
    base.flags = app.prediction.capped ? kPredictionFlagCapped : "";
    const auto measured = settings.measured_f_core_mhz.find(app.app.workload);
    if (measured != settings.measured_f_core_mhz.end()) base.measured_f_core_mhz = measured->second;
    out.push_back(base);
    auto on_curve = [&](double f) { return PowerOnCurve(model, curve, u, f); };
    for (double f : settings.clocks_mhz) {
      double settled = f;
      if (settings.board_limit_w) {
        settled = SettleClockMhz(on_curve, floor_mhz, f, *settings.board_limit_w);
        if (!std::isfinite(settled)) settled = floor_mhz;
      }
      WhatIfRow r = RowAt(model, curve, app, base, time, settled);
      r.setting = "clock";
      r.setting_value = f;
      if (settled < f) AddFlag(&r, kPredictionFlagCapped);
      out.push_back(r);
    }
    for (double limit : settings.limits_w) {
      const double settled = SettleClockMhz(on_curve, floor_mhz, curve.reference_mhz(), limit);
      if (!std::isfinite(settled)) {
        throw OptionError(fmt::format(
            "--at-power-limit {} W lies below what {} draws even at {:.0f} MHz, the lowest clock "
            "searched ({:.1f} W: its static and memory power and what is left of its dynamic "
            "power there, on the curve held at its lowest point, {:.0f} MHz): no clock meets that "
            "cap",
            limit, app.app.workload, floor_mhz, on_curve(floor_mhz), curve.lowest_mhz()));
      }
      WhatIfRow r = RowAt(model, curve, app, base, time, settled);
      r.setting = "power_limit";
      r.setting_value = limit;
      if (settled < curve.reference_mhz()) AddFlag(&r, kPredictionFlagCapped);
      out.push_back(r);
    }
    if (std::isfinite(settings.max_slowdown_pct))
      MarkLeastEnergy(&out, first, settings.max_slowdown_pct);
  }
  return out;
}

std::string WhatIfToCsv(const std::vector<WhatIfRow>& rows, const std::string& vf_source) {
  std::string s =
      "workload,setting,setting_value,f_core_mhz,measured_f_core_mhz,predicted_w,run_time_s,energy_"
      "j,power_change_pct,"
      "time_change_pct,energy_change_pct,time_model,vf_source,flags\n";
  for (const WhatIfRow& r : rows) {
    s += fmt::format(
        "{},{},{},{:.2f},{},{:.6f},{},{},{:.6f},{:.6f},{:.6f},{},{},{}\n", CsvField(r.workload),
        r.setting, std::isfinite(r.setting_value) ? fmt::format("{:g}", r.setting_value) : "",
        r.f_core_mhz,
        std::isfinite(r.measured_f_core_mhz) ? fmt::format("{:.2f}", r.measured_f_core_mhz)
                                             : std::string(),
        r.predicted_w, CsvFixed(r.run_time_s, 6), CsvFixed(r.energy_j, 6), r.power_change_pct,
        r.time_change_pct, r.energy_change_pct, CsvField(r.time_model), CsvField(vf_source),
        CsvField(r.flags));
  }
  return s;
}

}  // namespace wattcal
