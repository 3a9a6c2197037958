// Which figures a report draws, with their names, titles, captions and inputs (run_report.h's
// ReportFigure), decided from what CollectRunReport found.
#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "report/internal/run_report_internal.h"

namespace fs = std::filesystem;

namespace wattcal {
namespace report_internal {
namespace {

class FigurePlanner {
 public:
  FigurePlanner(const ReportOptions& options, const std::string& vf_ranking_label,
                const std::vector<std::string>& constant_inputs, RunReport* report)
      : o_(options),
        r_(*report),
        vf_ranking_label_(vf_ranking_label),
        constant_inputs_(constant_inputs) {}

  std::string UniqueStem(const std::string& stem) {
    std::string candidate = stem;
    for (int k = 2; !stems_.insert(candidate).second; ++k)
      candidate = fmt::format("{}_{}", stem, k);
    return candidate;
  }

  void DecideFigures() {
    const std::string prefix = TitlePrefix(r_);
    DecideValidationFigures(prefix);
    DecideBenchmarkFigures(prefix);
    DecideModelFigures(prefix);
    DecideCorpusFigures(prefix);
    DecideCompareFigures(prefix);
    DecideAccelWattchFigures(prefix);
  }

 private:
  // The error CDF, and a scatter and a per-workload error chart per validation.
  void DecideValidationFigures(const std::string& prefix) {
    if (!r_.validations.empty()) {
      ReportFigure f;
      f.kind = FigureKind::kErrorCdf;
      f.stem = UniqueStem("error_cdf");
      f.section = "validation";
      f.title = prefix + "cumulative distribution of the absolute error";
      f.caption =
          "Fraction of held-out points whose absolute percentage error is at most x, one "
          "curve per validation (TPDS'19 Figs. 8b, 10C-D); the key gives each one's n "
          "and MAPE.";
      for (const ReportValidation& v : r_.validations) f.inputs.push_back(v.predictions_path);
      r_.figures.push_back(f);
    }
    for (size_t i = 0; i < r_.validations.size(); ++i) {
      const ReportValidation& v = r_.validations[i];
      ReportFigure f;
      f.kind = FigureKind::kScatter;
      f.index = static_cast<int>(i);
      // scatter_<name> after the validation's folder (validation/<name>/), or after its label.
      const std::string stem =
          "scatter_" + SafeStem(!v.extra && !v.name.empty() ? v.name : v.label);
      f.stem = UniqueStem(stem);
      f.section = "validation";
      f.title = v.title.empty() ? prefix + v.label : v.title;
      f.caption = fmt::format(
          "Measured against predicted power, {} ({}), with y = x and the "
          "±10% band; MAPE with its confidence interval and Pearson r in the "
          "key.",
          v.label, v.predictions_path);
      f.inputs = {v.predictions_path};
      if (!v.metrics_path.empty()) f.inputs.push_back(v.metrics_path);
      r_.figures.push_back(f);
      // Its per-workload error, beside the table of the same numbers in the index.
      ReportFigure w = f;
      w.kind = FigureKind::kWorkloadErrors;
      w.stem = UniqueStem("workload_errors" + stem.substr(std::string("scatter").size()));
      w.section = "workload_errors";
      w.title = f.title + ": error per workload";
      w.caption = fmt::format(
          "Signed error of the prediction per held-out workload, {} ({}): (predicted − "
          "measured) / measured in %, averaged over the workload's points, the largest in "
          "absolute value at the top; the table below gives the same numbers.",
          v.label, v.predictions_path);
      w.inputs = {v.predictions_path};
      r_.figures.push_back(w);
    }
  }

  // Benchmarks over the V-F pairs.
  void DecideBenchmarkFigures(const std::string& prefix) {
    for (size_t i = 0; i < r_.vf_benchmarks.size(); ++i) {
      const std::string& b = r_.vf_benchmarks[i];
      ReportFigure f;
      f.kind = FigureKind::kBenchmarkVf;
      f.name = b;
      f.stem = UniqueStem("vf_" + SafeStem(b));
      f.section = "benchmarks";
      f.title = prefix + b + " over the V-F pairs";
      std::string why;
      if (o_.benchmarks.empty() && !vf_ranking_label_.empty()) {
        const size_t n = r_.vf_benchmarks.size();
        why = i == 0 && n > 1       ? " (lowest MAPE"
              : i + 1 == n && n > 1 ? " (highest MAPE"
              : n == 3 || n == 1    ? " (median MAPE"
                                    : " (intermediate MAPE";
        why += " of " + vf_ranking_label_ + ")";
      }
      f.caption = fmt::format(
          "{}{}: measured power (points) and predicted power (lines, one dash per validation) "
          "against the core frequency, one colour per memory frequency (TPDS'19 Figs. 9, 10A-B).",
          b, why);
      for (int v : VfValidations())
        f.inputs.push_back(r_.validations[static_cast<size_t>(v)].predictions_path);
      r_.figures.push_back(f);
    }
  }

  // The voltage curves, the breakdown at the default pair and the applications' breakdown.
  void DecideModelFigures(const std::string& prefix) {
    bool any_levels = false;
    for (const ReportModel& m : r_.models) {
      for (const auto& levels : m.model.freq_levels_mhz)
        any_levels = any_levels || levels.size() >= 2;
    }
    if (any_levels) {
      ReportFigure f;
      f.kind = FigureKind::kVoltage;
      f.stem = UniqueStem("voltage_vs_frequency");
      f.section = "models";
      f.title = prefix + "estimated voltage against frequency";
      f.caption =
          "Voltage of each domain, relative to its voltage at the default frequency "
          "(dotted line), as each model estimated it together with its coefficients "
          "(TPDS'19 Eqs. 4-6): the joint solution beside gpmTOOL's alternating one when "
          "both are present. Fixed-frequency models have one level and draw nothing.";
      for (const ReportModel& m : r_.models) f.inputs.push_back(m.path);
      r_.figures.push_back(f);
    } else if (!r_.models.empty()) {
      r_.notes.push_back("no model has two or more frequency levels: no voltage figure");
    }
    if (r_.has_breakdown) {
      const ReportModel& m = r_.models[static_cast<size_t>(r_.breakdown_model)];
      ReportFigure f;
      f.kind = FigureKind::kBreakdown;
      f.stem = UniqueStem("breakdown_default_pair");
      f.section = "breakdown";
      f.title = prefix + "predicted power by component at " + r_.breakdown.pair_label;
      f.caption = fmt::format(
          "Predicted power of each benchmark of {} at the default pair ({}) split into the "
          "model's terms (TPDS'19 Fig. 11, AccelWattch Figs. 8-9), with {} model {}; the last "
          "bar is the average over the benchmarks; diamonds mark the measured power.",
          r_.breakdown_activity, r_.breakdown.pair_label, m.label, m.path);
      f.inputs = {m.path, r_.breakdown_activity};
      r_.figures.push_back(f);
    }
    if (r_.has_apps && !r_.apps.chart.bars.empty()) {
      ReportFigure f;
      f.kind = FigureKind::kApps;
      f.stem = UniqueStem("apps_breakdown");
      f.section = "apps";
      f.title =
          prefix + "applications: predicted power by component at " + r_.apps.chart.pair_label;
      f.caption = fmt::format(
          "Each application's power predicted from its counters alone (wattcal-predict --capture), "
          "split "
          "into the model's terms (TPDS'19 §4.5); the last bar is their mean{}.",
          r_.apps.measured() > 0
              ? "; diamonds mark the measured power where the capture had a power log"
              : "");
      f.inputs = {r_.apps.path, r_.apps.breakdown_path};
      r_.figures.push_back(f);
    }
    if (r_.has_apps && AppsEnergyDrawable(r_.apps)) {
      ReportFigure f;
      f.kind = FigureKind::kAppsEnergy;
      f.stem = UniqueStem("apps_energy");
      f.section = "apps";
      f.title = prefix + "applications: energy of each run";
      f.caption =
          "Each application's energy over its recorded windows: predicted (the model's power x the "
          "windows' duration; the whisker is its 95% interval where the model has one) and "
          "measured over the same windows (diamonds, where the capture had a power log).";
      f.inputs = {r_.apps.path};
      r_.figures.push_back(f);
    }
    for (const char* setting : {"clock", "power_limit"}) {
      if (!r_.has_apps || !WhatIfDrawable(r_.apps.what_if, setting)) continue;
      const bool clock = std::string(setting) == "clock";
      ReportFigure f;
      f.kind = FigureKind::kWhatIf;
      f.name = setting;
      f.stem = UniqueStem(clock ? "what_if_clock" : "what_if_power_limit");
      f.section = "what_if";
      f.title = prefix + (clock ? "what if: energy at another core clock"
                                : "what if: energy under another power limit");
      f.caption = fmt::format(
          "Each application's predicted energy at each {} against its run as recorded (0%), from "
          "its one profiled run: power along the voltage-frequency curve ({}), run time from the "
          "time model named in the table.",
          clock ? "core clock" : "power limit", r_.apps.what_if.vf_source);
      f.inputs = {r_.apps.what_if.path};
      r_.figures.push_back(f);
    }
  }

  // Training utilisations.
  void DecideCorpusFigures(const std::string& prefix) {
    for (size_t i = 0; i < r_.corpora.size(); ++i) {
      const ReportCorpus& c = r_.corpora[i];
      const std::string corpus_stem = SafeStem(fs::path(c.path).stem().string());
      ReportFigure bench;
      bench.kind = FigureKind::kBenchmarkCorrelation;
      bench.index = static_cast<int>(i);
      bench.stem = UniqueStem("util_corr_benchmarks_" + corpus_stem);
      bench.section = "collinearity";
      bench.title = prefix + "correlation of the benchmarks' utilisations";
      bench.caption = fmt::format(
          "Pearson r between the utilisation vectors of every pair of the {} benchmarks of {} "
          "(TPDS'19 Fig. 3b); median |r| between distinct benchmarks {:.2f}.",
          c.collinearity.benchmarks.size(), c.path, c.collinearity.median_abs_benchmark_r);
      int shortened = 0;
      HeatmapBenchmarkLabels(c.collinearity.benchmarks, &shortened);
      if (shortened > 0) {
        bench.caption += fmt::format(
            " Every benchmark is named on both axes in corpus order; the {} names longer than "
            "{} characters are shortened in the middle (…).",
            shortened, kHeatmapLabelChars);
      }
      bench.inputs = {c.path};
      if (o_.benchmark_heatmap) r_.figures.push_back(bench);
      ReportFigure comp = bench;
      comp.kind = FigureKind::kComponentCorrelation;
      comp.stem = UniqueStem("util_corr_components_" + corpus_stem);
      comp.title = prefix + "correlation of the components' utilisations";
      comp.caption = fmt::format(
          "Pearson r between the utilisations of every pair of components across the benchmarks "
          "of {} (TPDS'19 Fig. 13a); outlined cells reach |r| >= {:g}.",
          c.path, o_.collinearity.pair_threshold_abs_r);
      r_.figures.push_back(comp);
    }
    if (r_.has_constant) {
      ReportFigure f;
      f.kind = FigureKind::kConstant;
      f.stem = UniqueStem("constant_power_fits");
      f.section = "constant";
      f.title = prefix + "constant power from the V-F sweeps";
      f.caption = fmt::format(
          "P = beta f^3 + tau f + P_const fitted to each microbenchmark's sweep with one shared "
          "P_const (AccelWattch Eq. 3, Fig. 2), from {}; {} of {} curves drawn, solid over the "
          "measured clocks and dotted down to f = 0, where every curve meets P_const.",
          r_.constant_path, r_.constant_drawn.curves.size(), r_.constant.curves.size());
      f.inputs = {r_.constant_path};
      f.inputs.insert(f.inputs.end(), constant_inputs_.begin(), constant_inputs_.end());
      r_.figures.push_back(f);
    }
  }

  // The AccelWattch figures' titles carry the run's title only when both fit across the figure.
  static std::string ShortTitle(const std::string& prefix, const std::string& title) {
    constexpr size_t kMaxTitleChars = 66;
    return prefix.size() + title.size() <= kMaxTitleChars ? prefix + title : title;
  }

  void DecideAccelWattchFigures(const std::string& prefix) {
    for (size_t i = 0; i < r_.accelwattch_breakdowns.size(); ++i) {
      const ReportAccelWattchBreakdown& b = r_.accelwattch_breakdowns[i];
      std::set<std::string> benchmarks, kernels;
      for (const AccelWattchBreakdownRow& row : b.table.rows) {
        benchmarks.insert(row.benchmark);
        kernels.insert(row.kernel);
      }
      ReportFigure clocks;
      clocks.kind = FigureKind::kAccelWattchClocks;
      clocks.index = static_cast<int>(i);
      clocks.stem = UniqueStem("accelwattch_power_vs_clock");
      clocks.section = "accelwattch_breakdown";
      clocks.title = ShortTitle(prefix, "Eq. 12's power split against the core clock");
      clocks.caption = fmt::format(
          "Predicted power of the {} kernels ({} benchmarks) of {}, averaged at each core clock "
          "they were evaluated at, split into Eq. 12's terms (AccelWattch MICRO'21): constant "
          "power (Eq. 3), static power of the active SMs (Eqs. 4-5, 9) and of the idle SMs "
          "(Eqs. 6-8) in greys, and the dynamic power of every component (x_i times its "
          "energy per event times its event rate) on top. With V ~ f, static and idle power "
          "grow as f and voltage-scaled dynamic power as f^3.",
          kernels.size(), benchmarks.size(), b.path);
      clocks.inputs = {b.path};
      r_.figures.push_back(clocks);
      ReportFigure components = clocks;
      components.kind = FigureKind::kAccelWattchComponents;
      components.stem = UniqueStem("accelwattch_dynamic_by_component");
      components.title = ShortTitle(
          prefix, fmt::format("Dynamic power by component at {:g} MHz", b.reference_f_core_mhz));
      const size_t drawn = b.component_chart.bars.size();
      components.caption = fmt::format(
          "Dynamic power of each component at {:g} MHz ({}), the mean over each benchmark's "
          "kernels, {} (in increasing dynamic power); the last bar is the mean over every kernel "
          "evaluated at that clock. Components without dynamic power there are left out. From {}.",
          b.reference_f_core_mhz, b.reference_why,
          drawn == b.benchmarks_at_reference
              ? fmt::format("for all {} benchmarks", drawn)
              : fmt::format("for {} of the {} benchmarks, spread over the range of dynamic power",
                            drawn, b.benchmarks_at_reference),
          b.path);
      r_.figures.push_back(components);
    }
  }

  void DecideCompareFigures(const std::string& prefix) {
    for (size_t i = 0; i < r_.comparisons.size(); ++i) {
      const RelativePowerChart& c = r_.comparisons[i];
      ReportFigure f;
      f.kind = FigureKind::kRelative;
      f.index = static_cast<int>(i);
      f.stem = UniqueStem("relative_power_" + SafeStem(c.gpu_b + "_vs_" + c.gpu_a));
      f.section = "compare";
      f.title = prefix + c.gpu_b + " relative to " + c.gpu_a;
      f.caption = fmt::format(
          "Power of {} relative to {} per workload, (P_B - P_A) / P_A, as estimated and as "
          "measured, and the averages (AccelWattch Fig. 12), from {}.",
          c.gpu_b, c.gpu_a, r_.compare_paths[i]);
      f.inputs = {r_.compare_paths[i]};
      r_.figures.push_back(f);
    }
  }

  std::vector<int> VfValidations() const { return VfValidationIndices(r_.validations); }

  const ReportOptions& o_;
  RunReport& r_;
  const std::string& vf_ranking_label_;
  const std::vector<std::string>& constant_inputs_;
  std::set<std::string> stems_;
};

}  // namespace

void DecideFigures(const ReportOptions& options, const std::string& vf_ranking_label,
                   const std::vector<std::string>& constant_inputs, RunReport* report) {
  FigurePlanner(options, vf_ranking_label, constant_inputs, report).DecideFigures();
}

}  // namespace report_internal
}  // namespace wattcal
