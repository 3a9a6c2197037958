// The run collector's corpora, applications, what-if, breakdown, constant-power and comparison
// inputs (report/internal/run_collector.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "io/csv_reader.h"
#include "model/model_io.h"
#include "report/gnuplot_figure.h"
#include "report/internal/run_collector.h"
#include "report/internal/run_report_internal.h"
#include "report/validation_plots.h"
#include "util/errors.h"
#include "util/json_file.h"
#include "util/logging.h"
#include "util/strings.h"
#include "validate/metrics.h"

namespace fs = std::filesystem;

namespace wattcal::report_internal {

CorpusReadOptions Collector::ReadOptionsFor(const PowerModel* model) const {
  CorpusReadOptions read = o_.corpus_read;
  if (model != nullptr) {
    const std::vector<double> defaults = model->DefaultFrequencies();
    if (read.default_core_mhz == 0.0 && !defaults.empty()) read.default_core_mhz = defaults[0];
    if (read.default_mem_mhz == 0.0 && defaults.size() > 1) read.default_mem_mhz = defaults[1];
  }
  return read;
}

void Collector::AddCorpus(const std::string& path, const PowerModel* model) {
  for (const ReportCorpus& c : r_.corpora) {
    if (SameFile(c.path, path)) return;
  }
  const Corpus corpus = ReadCorpus(path, ReadOptionsFor(model));
  UseInput(path);
  ReportCorpus c;
  c.path = path;
  c.collinearity = AnalyseCollinearity(corpus, o_.collinearity);
  c.measurement_note = MeasurementNote(corpus, path);
  for (const std::string& w : c.collinearity.warnings) {
    LogWarning("training utilisations of " + path + ": " + w);
  }
  LogInfo(
      fmt::format("{}: {} benchmarks x {} components, condition number {:.1f}, {} pair(s) "
                  "with |r| >= {:g}",
                  path, c.collinearity.benchmarks.size(), c.collinearity.components.size(),
                  c.collinearity.condition_number, c.collinearity.pairs.size(),
                  o_.collinearity.pair_threshold_abs_r));
  r_.corpora.push_back(std::move(c));
}

void Collector::CollectCorpora() {
  const PowerModel* primary =
      r_.primary_model >= 0 ? &r_.models[static_cast<size_t>(r_.primary_model)].model : nullptr;
  if (!o_.train.empty()) {
    for (const std::string& path : o_.train) AddCorpus(path, primary);
    return;
  }
  if (primary != nullptr) {
    const std::string named = primary->trained_on;
    std::string path = ResolveNamed(named, o_.run_dir, KnownFiles());
    // wattcal-port writes "<corpus> (ported from ...)".
    const size_t note = named.find(" (");
    if (path.empty() && note != std::string::npos) {
      path = ResolveNamed(named.substr(0, note), o_.run_dir, KnownFiles());
    }
    if (!path.empty()) {
      AddCorpus(path, primary);
    } else if (!named.empty()) {
      r_.notes.push_back(fmt::format(
          "the training corpus of {} ({}) was not found: no utilisation correlations (pass "
          "--train FILE)",
          r_.models[static_cast<size_t>(r_.primary_model)].path, named));
    }
    return;
  }
  for (const ReportValidation& v : r_.validations) {
    if (v.cross_validated && !v.extra && !v.measurements_path.empty()) {
      AddCorpus(v.measurements_path, nullptr);
      return;
    }
  }
}

void Collector::CollectWhatIf() {
  if (!r_.has_apps) return;
  for (const StageRun& run : run_files_.runs) {
    const RunOutput* what_if = run.Output("what_if");
    if (run.stage != "predict" || what_if == nullptr) continue;
    if (!r_.apps.what_if.path.empty()) {
      r_.notes.push_back(what_if->path + ": a second what-if table; only " + r_.apps.what_if.path +
                         " is shown");
      continue;
    }
    r_.apps.what_if = ReadReportWhatIf(what_if->path);
    UseInput(what_if->path);
  }
}

void Collector::CollectApps() {
  for (const StageRun& run : run_files_.runs) {
    const RunOutput* predictions = run.Output("apps_predictions");
    const RunOutput* breakdown = run.Output("apps_breakdown");
    if (run.stage != "predict" || predictions == nullptr || breakdown == nullptr) continue;
    if (!IsAppPredictionsCsv(predictions->path)) continue;
    if (r_.has_apps) {
      r_.notes.push_back(predictions->path +
                         ": a second prediction of applications with a breakdown; only " +
                         r_.apps.path + " is shown");
      continue;
    }
    r_.apps = ReadReportApps(predictions->path, breakdown->path);
    r_.has_apps = true;

    // The board limit of the run's model, drawn as a line over the bars.
    if (r_.primary_model >= 0) {
      r_.apps.chart.limit_w = r_.models[static_cast<size_t>(r_.primary_model)].model.power_limit_w;
    }
    UseInput(predictions->path);
    UseInput(breakdown->path);
  }
}

bool Collector::AreTheApplications(const Corpus& corpus) const {
  if (!r_.has_apps) return false;
  std::set<std::string> apps;
  for (const ReportApp& a : r_.apps.rows) apps.insert(a.workload);
  for (const std::string& b : corpus.benchmark) {
    if (!apps.count(b)) return false;
  }
  return !corpus.benchmark.empty();
}

void Collector::CollectBreakdown() {
  int model = r_.primary_model;
  if (!o_.breakdown_model.empty()) {
    AddModel("", o_.breakdown_model);
    model = -1;
    for (size_t i = 0; i < r_.models.size(); ++i) {
      if (r_.models[i].path == o_.breakdown_model ||
          SameFile(r_.models[i].path, o_.breakdown_model)) {
        model = static_cast<int>(i);
      }
    }
  }
  if (model < 0) {
    // An AccelWattch run shows its own breakdown.
    if (!r_.validations.empty() && r_.accelwattch_models.empty() &&
        r_.accelwattch_breakdowns.empty()) {
      r_.notes.push_back("no model: no power breakdown");
    }
    return;
  }
  const ReportModel& m = r_.models[static_cast<size_t>(model)];
  std::string activity = o_.activity;
  if (activity.empty()) {
    for (const ReportValidation& v : r_.validations) {
      if (!v.measurements_path.empty() && SameFile(v.model_path, m.path)) {
        activity = v.measurements_path;
        break;
      }
    }
  }
  if (activity.empty()) {
    r_.notes.push_back("no held-out measurements validated with " + m.path +
                       ": no power breakdown (pass --activity FILE)");
    return;
  }
  const Corpus corpus = ReadCorpus(activity, ReadOptionsFor(&m.model));
  if (o_.activity.empty() && AreTheApplications(corpus)) {
    r_.notes.push_back("the held-out measurements " + activity +
                       " are the applications: their breakdown is drawn once, under "
                       "Applications");
    return;
  }
  UseInput(activity);
  r_.breakdown = ComputeBreakdownChart(m.model, corpus);
  r_.breakdown.limit_w = m.model.power_limit_w;
  if (r_.breakdown.bars.size() > kMaxBreakdownBars) {
    r_.notes.push_back(
        fmt::format("breakdown: the {} of {} benchmarks with the largest predicted power are "
                    "drawn, the other {} as one bar of their mean",
                    kMaxBreakdownBars - 1, r_.breakdown.bars.size(),
                    r_.breakdown.bars.size() - kMaxBreakdownBars + 1));
    KeepLargestBars(&r_.breakdown, kMaxBreakdownBars);
  }
  r_.has_breakdown = !r_.breakdown.bars.empty();
  r_.breakdown_model = model;
  r_.breakdown_activity = activity;
}

void Collector::CollectConstant() {
  std::string path = o_.constant_path;
  if (path.empty()) {
    const std::vector<std::string> found = DiscoverJson({"p_const_w", "curves"});
    for (size_t i = 1; i < found.size(); ++i) {
      r_.notes.push_back(found[i] + ": a second constant-power result; only " + found[0] +
                         " is shown (or pass --constant FILE)");
    }
    if (found.empty()) return;
    path = found[0];
  }
  r_.constant = ReadConstantFitChart(path);
  UseInput(path);
  std::vector<std::string> sweep_files;
  if (AddSweepPoints(path, &r_.constant, &sweep_files)) {
    for (const std::string& f : sweep_files) UseInput(f);
    constant_inputs_ = sweep_files;
  } else {
    r_.notes.push_back(path +
                       ": the sweep it names was not found; fitted curves drawn without "
                       "their measured points");
  }
  r_.constant_path = path;
  r_.has_constant = !r_.constant.curves.empty();
  // Spread the drawn curves over the range of power at the highest clock.
  std::vector<ConstantFitCurve> curves = r_.constant.curves;
  auto top = [&](const ConstantFitCurve& c) {
    const double f = c.f_max_mhz;
    return c.beta_w_per_mhz3 * f * f * f + c.tau_w_per_mhz * f;
  };
  std::stable_sort(
      curves.begin(), curves.end(),
      [&](const ConstantFitCurve& a, const ConstantFitCurve& b) { return top(a) < top(b); });
  r_.constant_drawn = r_.constant;
  r_.constant_drawn.curves.clear();
  const size_t k = static_cast<size_t>(o_.max_constant_curves);
  if (curves.size() <= k) {
    r_.constant_drawn.curves = curves;
  } else {
    std::set<size_t> picked;
    for (size_t i = 0; i < k; ++i) {
      picked.insert(k == 1 ? curves.size() / 2 : (i * (curves.size() - 1) + (k - 1) / 2) / (k - 1));
    }
    for (size_t i : picked) r_.constant_drawn.curves.push_back(curves[i]);
  }
}

std::vector<std::string> Collector::DiscoverJson(const std::vector<std::string>& keys) const {
  std::vector<std::string> paths;
  for (const auto& [path, j] : json_files_) {
    bool all = j.is_object();
    for (const std::string& key : keys) all = all && j.contains(key);
    if (all) paths.push_back(path);
  }
  return paths;
}

void Collector::CollectCompare() {
  const std::vector<std::string> paths = o_.compare_paths.empty()
                                             ? DiscoverJson({"arch_a", "arch_b", "per_workload"})
                                             : o_.compare_paths;
  for (const std::string& path : paths) {
    RelativePowerChart chart = ReadRelativePowerChart(path);
    UseInput(path);
    if (chart.bars.empty()) {
      r_.notes.push_back(path + ": no workload to compare");
      continue;
    }
    r_.compare_paths.push_back(path);
    r_.comparisons.push_back(std::move(chart));
  }
}

}  // namespace wattcal::report_internal
