#include "model/app_prediction.h"

#include <fmt/format.h>

#include <cmath>

#include "model/model_summary.h"
#include "model/power_limit.h"
#include "util/csv_field.h"
#include "util/errors.h"

namespace wattcal {

std::vector<AppPrediction> PredictApps(const PowerModel& model,
                                       const std::vector<AppActivity>& apps, const Layout& layout,
                                       std::optional<double> power_limit_w,
                                       const std::string& source) {
  if (apps.empty()) throw InputError(source, 0, "", "no workloads to predict");
  Corpus activity;
  activity.path = source;
  activity.kind = CorpusKind::kActivity;
  activity.layout = layout;
  activity.components_line = 0;
  activity.defaults_line = 0;
  const int nc = layout.num_components();
  activity.util_frac.resize(static_cast<int>(apps.size()), nc);
  for (size_t r = 0; r < apps.size(); ++r) {
    if (static_cast<int>(apps[r].util_frac.size()) != nc) {
      throw std::invalid_argument(
          fmt::format("PredictApps: workload '{}' has {} utilisations for {} components",
                      apps[r].workload, apps[r].util_frac.size(), nc));
    }
    activity.benchmark.push_back(apps[r].workload);
    activity.line.push_back(0);
    for (int c = 0; c < nc; ++c) activity.util_frac(static_cast<int>(r), c) = apps[r].util_frac[c];
  }
  const std::vector<ActivityPrediction> predicted =
      PredictActivity(model, activity, /*fixed=*/true, power_limit_w);
  std::vector<AppPrediction> out(apps.size());
  for (size_t r = 0; r < apps.size(); ++r) {
    AppPrediction& p = out[r];
    p.app = apps[r];
    p.prediction = predicted[r];
    p.f_core_mhz = std::isfinite(p.prediction.capped_f_core_mhz) ? p.prediction.capped_f_core_mhz
                                                                 : p.prediction.freq_mhz[0];
    // The run's energy: the predicted steady power over the run as it ran (its windows).
    if (std::isfinite(p.app.duration_s)) p.energy_j = p.prediction.predicted_w * p.app.duration_s;
    if (p.app.steps > 0) p.energy_per_step_j = p.energy_j / static_cast<double>(p.app.steps);
    // The energy's interval: the power's over the same time as energy_j.
    if (std::isfinite(p.energy_j) && p.prediction.predicted_w > 0.0) {
      p.energy_j_lo = p.energy_j * p.prediction.predicted_w_lo / p.prediction.predicted_w;
      p.energy_j_hi = p.energy_j * p.prediction.predicted_w_hi / p.prediction.predicted_w;
    }
    if (std::isfinite(p.app.measured_w) && p.app.measured_w > 0.0) {
      p.error_pct = 100.0 * (p.prediction.predicted_w - p.app.measured_w) / p.app.measured_w;
    }
    if (std::isfinite(p.app.measured_energy_j) && p.app.measured_energy_j > 0.0) {
      p.energy_error_pct = 100.0 * (p.energy_j - p.app.measured_energy_j) / p.app.measured_energy_j;
    }
  }
  return out;
}

std::string AppPredictionsToCsv(const std::vector<AppPrediction>& rows) {
  std::string s =
      "workload,predicted_w,predicted_w_lo,predicted_w_hi,uncapped_w,capped,f_core_mhz,"
      "duration_s,energy_j,energy_j_lo,energy_j_hi,flags,measured_w,error_pct,measured_energy_j,"
      "energy_error_pct,steps,energy_per_step_j,kernel_time_s,measured_f_core_mhz,measured_flags,"
      "windows\n";
  for (const AppPrediction& p : rows) {
    const ActivityPrediction& q = p.prediction;
    // The prediction (12 columns, the same with and without a power log), then the measurement.
    s += fmt::format("{},{:.6f},{},{},{:.6f},{},{:.6g},{},{},{},{},{},", CsvField(p.app.workload),
                     q.predicted_w, CsvFixed(q.predicted_w_lo, 6), CsvFixed(q.predicted_w_hi, 6),
                     q.uncapped_w, q.capped ? 1 : 0, p.f_core_mhz, CsvFixed(p.app.duration_s, 6),
                     CsvFixed(p.energy_j, 6), CsvFixed(p.energy_j_lo, 6),
                     CsvFixed(p.energy_j_hi, 6), CsvField(q.flags));
    s += fmt::format(
        "{},{},{},{},{},{},{},{},{},{}\n", CsvFixed(p.app.measured_w, 6), CsvFixed(p.error_pct, 6),
        CsvFixed(p.app.measured_energy_j, 6), CsvFixed(p.energy_error_pct, 6),
        p.app.steps > 0 ? std::to_string(p.app.steps) : std::string(),
        CsvFixed(p.energy_per_step_j, 6), CsvFixed(p.app.kernel_time_s, 6),
        std::isfinite(p.app.measured_f_core_mhz) ? fmt::format("{:.6g}", p.app.measured_f_core_mhz)
                                                 : std::string(),
        CsvField(p.app.measured_flags), p.app.windows);
  }
  return s;
}

std::string AppBreakdownToCsv(const PowerModel& model, const std::vector<AppPrediction>& rows) {
  std::string s = "workload,predicted_w,uncapped_w";
  for (const FrequencyDomain& d : model.layout.domains) s += ",static_" + d.name + "_w";
  for (const FrequencyDomain& d : model.layout.domains) s += ",idle_dyn_" + d.name + "_w";
  for (const std::string& c : model.layout.ComponentNames()) s += "," + ColumnSafeName(c) + "_w";
  s += "\n";
  for (const AppPrediction& p : rows) {
    const PowerBreakdown& b = p.prediction.breakdown;
    s += fmt::format("{},{:.6f},{:.6f}", CsvField(p.app.workload), p.prediction.predicted_w,
                     p.prediction.uncapped_w);
    for (double v : b.static_w) s += fmt::format(",{:.6f}", v);
    for (double v : b.idle_dyn_w) s += fmt::format(",{:.6f}", v);
    for (double v : b.component_w) s += fmt::format(",{:.6f}", v);
    s += "\n";
  }
  return s;
}

std::string AppPredictionSummary(const PowerModel& model, const std::vector<AppPrediction>& rows,
                                 std::optional<double> power_limit_w) {
  int capped = 0, beyond = 0, measured = 0, energy_measured = 0;
  double sum_ape = 0.0, sum_energy_ape = 0.0;
  for (const AppPrediction& p : rows) {
    capped += p.prediction.capped ? 1 : 0;
    beyond += p.prediction.flags.find("beyond_training") != std::string::npos ? 1 : 0;
    if (std::isfinite(p.error_pct)) {
      ++measured;
      sum_ape += std::fabs(p.error_pct);
    }
    if (std::isfinite(p.energy_error_pct)) {
      ++energy_measured;
      sum_energy_ape += std::fabs(p.energy_error_pct);
    }
  }
  const std::vector<double> reference =
      rows.empty() ? model.DefaultFrequencies() : rows.front().prediction.freq_mhz;
  std::string s =
      fmt::format("{} workloads predicted at {:.0f} MHz ({}): {} capped, {} beyond training",
                  rows.size(), reference[0],
                  power_limit_w ? fmt::format("board limit {:.0f} W", *power_limit_w)
                                : std::string("no board limit known"),
                  capped, beyond);
  if (measured > 0) {
    s += fmt::format("; measured: {} of them, MAPE {:.2f}%", measured, sum_ape / measured);
    if (energy_measured > 0) {
      s += fmt::format(" (energy MAPE {:.2f}% over {})", sum_energy_ape / energy_measured,
                       energy_measured);
    }
  } else {
    s += "; none measured (no power log)";
  }
  return s;
}

}  // namespace wattcal
