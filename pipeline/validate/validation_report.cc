#include "validate/validation_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/filesystem.hpp>
#include <cmath>

#include "util/errors.h"
#include "validate/workload_errors.h"

namespace wattcal {

TruthComparison CompareWithTruth(const PowerModel& fitted, const PowerModel& truth,
                                 std::vector<PredictionRow> truth_rows) {
  const std::string mismatch = fitted.layout.Mismatch(truth.layout);
  if (!mismatch.empty()) {
    throw InputError(truth.trained_on, 0, "layout", "the truth describes another GPU: " + mismatch);
  }
  TruthComparison t;
  t.present = true;
  const std::vector<double> a = fitted.Coefficients();
  const std::vector<double> b = truth.Coefficients();
  std::vector<std::string> names;
  for (const FrequencyDomain& d : fitted.layout.domains) names.push_back("static_" + d.name + "_w");
  for (const FrequencyDomain& d : fitted.layout.domains)
    names.push_back("idle_dyn_" + d.name + "_w_per_mhz");
  for (const std::string& c : fitted.layout.ComponentNames()) names.push_back(c + " (W/MHz)");
  const size_t nd = fitted.static_w.size();
  for (size_t d = 0; d < nd; ++d) {
    t.static_total_w += a[d];
    t.true_static_total_w += b[d];
  }
  for (size_t i = nd; i < a.size(); ++i) {
    if (b[i] <= 0.0) continue;
    const double e = std::abs(a[i] - b[i]) / b[i];
    if (e > t.max_coefficient_rel_error) {
      t.max_coefficient_rel_error = e;
      t.worst_coefficient = names[i];
    }
  }
  if (fitted.method == FitMethod::kDvfs) {
    for (int d = 0; d < fitted.layout.num_domains(); ++d) {
      for (size_t j = 0; j < fitted.freq_levels_mhz[d].size(); ++j) {
        double vt = 0.0;
        if (!truth.VoltageAt(d, fitted.freq_levels_mhz[d][j], &vt)) continue;
        const double e = std::abs(fitted.voltage_rel[d][j] - vt);
        if (e > t.max_voltage_abs_error) {
          t.max_voltage_abs_error = e;
          t.worst_voltage =
              fmt::format("{} {} MHz", fitted.layout.domains[d].name, fitted.freq_levels_mhz[d][j]);
        }
      }
    }
  }
  t.truth_rows = std::move(truth_rows);
  t.truth_metrics = ComputeErrorMetrics(t.truth_rows);
  return t;
}

namespace {

// One sentence on how close the calibration came to the truth (terminal and Markdown).
std::string DescribeTruth(const TruthComparison& t, double mape_pct) {
  return fmt::format(
      "component and idle-dynamic coefficients within {:.2f}% (worst: {}); total static power "
      "{:.2f} W against {:.2f} W true (its split between the domains is weakly identified); "
      "voltages within {:.4f} (worst: {}); the true model scores MAPE {:.3f}% on the same "
      "noisy measurements, so the calibrated model is at {:.3f}x the truth's error.",
      100.0 * t.max_coefficient_rel_error, t.worst_coefficient, t.static_total_w,
      t.true_static_total_w, t.max_voltage_abs_error,
      t.worst_voltage.empty() ? "-" : t.worst_voltage, t.truth_metrics.mape_pct,
      mape_pct / t.truth_metrics.mape_pct);
}

}  // namespace

ValidationReport SummariseValidation(const ValidationInputs& in, const MetricsOptions& options) {
  ValidationReport out;
  out.title =
      !in.title.empty()
          ? in.title
          : fmt::format("{} prediction{}", PredictModeName(in.mode),
                        in.fold_benchmarks.empty()
                            ? std::string()
                            : fmt::format(", {}-fold CV by benchmark", in.fold_benchmarks.size()));
  out.metrics = ComputeValidationMetrics(in.rows, options);
  out.json = MetricsToJson(out.metrics, options);
  out.json["mode"] = PredictModeName(in.mode);
  out.json["title"] = out.title;
  out.json["measurements"] = in.source;
  if (!in.model_path.empty()) out.json["model"] = in.model_path;
  if (!in.fold_benchmarks.empty()) {
    out.json["cv_folds"] = static_cast<int>(in.fold_benchmarks.size());
    out.json["cv_fold_benchmarks"] = in.fold_benchmarks;
  }
  out.table = FormatMetricsTable(out.metrics, options, out.title);
  if (in.truth.present) {
    const TruthComparison& t = in.truth;
    out.json["truth"] = {
        {"max_coefficient_rel_error", t.max_coefficient_rel_error},
        {"worst_coefficient", t.worst_coefficient},
        {"static_total_w", t.static_total_w},
        {"true_static_total_w", t.true_static_total_w},
        {"max_voltage_abs_error", t.max_voltage_abs_error},
        {"worst_voltage", t.worst_voltage},
        {"truth_mape_pct", t.truth_metrics.mape_pct},
        {"mape_ratio_to_truth", out.metrics.overall.mape_pct / t.truth_metrics.mape_pct}};
    out.table += "\nagainst the truth: " + DescribeTruth(t, out.metrics.overall.mape_pct);
  }
  return out;
}

namespace {
std::string Relative(const std::string& path, const std::string& from_file) {
  namespace fs = boost::filesystem;
  const fs::path base = fs::absolute(fs::path(from_file)).parent_path();
  return fs::absolute(fs::path(path)).lexically_relative(base).generic_string();
}
}  // namespace

std::string ValidationMarkdown(const ValidationInputs& in, const ValidationReport& o,
                               const std::string& predictions_path, const std::string& metrics_path,
                               const std::string& plot_path, const std::string& summary_path,
                               const std::string& workload_plot_path) {
  const ErrorMetrics& m = o.metrics.overall;
  std::string s = fmt::format("# {}\n\n", o.title);
  s += fmt::format("Measurements: `{}`", in.source);
  if (!in.model_path.empty()) s += fmt::format(" — model: `{}`", in.model_path);
  s += fmt::format(" — mode: {}\n\n", PredictModeName(in.mode));
  s += "| points | MAPE % | 95% CI % | max APE % | bias % | RMSE W | Pearson r | ≤1% | ≤5% | ≤10% "
       "|\n";
  s += "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|\n";
  s += fmt::format("| {} | {:.3f} | {:.3f}–{:.3f} | {:.2f} | {:+.3f} | {:.3f} | {:.4f} |", m.points,
                   m.mape_pct, m.mape_ci_low_pct, m.mape_ci_high_pct, m.max_ape_pct,
                   m.mean_error_pct, m.rmse_w, m.pearson_r);
  for (double f : m.within_frac) s += fmt::format(" {:.1f}% |", 100.0 * f);
  s += "\n\n";
  if (o.metrics.energy_points > 0) {
    s += fmt::format(
        "Energy over the windows as they ran (predicted W × `duration_s` against the measured "
        "`energy_j`, whole windows, no settle trim): MAPE {:.3f}% over {} points, max APE "
        "{:.2f}%, bias {:+.3f}%.\n\n",
        o.metrics.energy_mape_pct, o.metrics.energy_points, o.metrics.energy_max_ape_pct,
        o.metrics.energy_mean_error_pct);
  }
  if (o.metrics.has_capping) {
    // Workloads the board throttled at its power limit apart from those at full clock.
    s += "By capping (a workload is capped when its measured window hit the power cap):\n\n"
         "| workloads | points | MAPE % | max APE % | bias % |\n|---|---:|---:|---:|---:|\n";
    const std::pair<const char*, const ErrorMetrics*> groups[] = {
        {"all", &o.metrics.overall},
        {"at full clock", &o.metrics.full_clock},
        {"power-capped", &o.metrics.capped}};
    for (const auto& [name, g] : groups) {
      if (g->points == 0) {
        s += fmt::format("| {} | 0 | – | – | – |\n", name);
      } else {
        s += fmt::format("| {} | {} | {:.3f} | {:.2f} | {:+.3f} |\n", name, g->points, g->mape_pct,
                         g->max_ape_pct, g->mean_error_pct);
      }
    }
    s += "\n";
  }
  if (in.truth.present) {
    s += "**Against the known truth:** " + DescribeTruth(in.truth, m.mape_pct) + "\n\n";
  }
  if (!plot_path.empty()) {
    s += fmt::format("![measured vs predicted]({})\n\n", Relative(plot_path, summary_path));
  }
  s += "## Per-workload error, worst first\n\n";
  s += "Each held-out workload's mean measured and predicted power over its points, its signed "
       "error (predicted − measured, % of measured, the mean over its points; > 0 "
       "over-predicts) and the absolute value of that error, sorted by it; with several points "
       "per workload also its MAPE and largest absolute error.\n\n";
  if (!workload_plot_path.empty()) {
    s += fmt::format("![signed error per workload]({})\n\n",
                     Relative(workload_plot_path, summary_path));
  }
  s += WorkloadErrorsMarkdown(ComputeWorkloadErrors(in.rows));
  if (o.metrics.per_freq_pair.size() > 1) {
    s += "\n## Per V-F pair (MHz)\n\n| pair | points | MAPE % | bias % |\n|---|---:|---:|---:|\n";
    for (const GroupMetrics& g : o.metrics.per_freq_pair) {
      s += fmt::format("| {} | {} | {:.3f} | {:+.3f} |\n", g.key, g.metrics.points,
                       g.metrics.mape_pct, g.metrics.mean_error_pct);
    }
  }
  s += fmt::format("\nFiles: [predictions]({}), [metrics]({}).\n",
                   Relative(predictions_path, summary_path), Relative(metrics_path, summary_path));
  return s;
}

}  // namespace wattcal
