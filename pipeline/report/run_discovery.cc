// The run collector's discovery of AccelWattch models and validations (report/internal/run_collector.h).
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

void Collector::DiscoverAccelWattch() {
  std::vector<std::pair<std::string, std::map<std::string, double>>> truths;
  for (const std::string& path : DiscoverJson({"expected_scaling_factors"})) {
    for (const auto& [p, j] : json_files_) {
      if (p != path) continue;
      std::map<std::string, double> x = ExpectedScalingFactors(path, j);
      if (!x.empty()) truths.emplace_back(path, std::move(x));
    }
  }
  for (const auto& [path, j] : json_files_) {
    if (JsonString(j, "format") != kAccelWattchModelFormat) continue;
    ReportAccelWattchModel m;
    m.path = path;
    try {
      m.model = ReadAccelWattchModel(path);
    } catch (const InputError& e) {
      r_.notes.push_back(fmt::format("{}: a {} file that does not read ({}); not shown", path,
                                     kAccelWattchModelFormat, e.what()));
      continue;
    }
    m.label = RunRelative(path);
    if (m.model.has_terms && j.contains("fixed_terms")) {
      m.voltage_model = JsonString(j["fixed_terms"], "voltage_model");
    }
    m.trained_on_path = ResolveNamed(m.model.trained_on, o_.run_dir, KnownFiles());
    // The truth of the training table's data (data/raw/SET/ for data/tidy/SET/, or beside it),
    // else the run's first.
    for (const auto& [truth, x] : truths) {
      if (!m.trained_on_path.empty() && fs::path(truth).parent_path().filename() ==
                                            fs::path(m.trained_on_path).parent_path().filename()) {
        m.truth_path = truth;
        m.true_x = x;
        break;
      }
    }
    if (m.truth_path.empty() && !truths.empty()) {
      m.truth_path = truths.front().first;
      m.true_x = truths.front().second;
    }
    UseInput(path);
    if (!m.truth_path.empty()) UseInput(m.truth_path);
    r_.accelwattch_models.push_back(std::move(m));
  }
  double reference_mhz = std::numeric_limits<double>::quiet_NaN();
  for (const ReportAccelWattchModel& m : r_.accelwattch_models) {
    if (m.model.has_terms && !std::isfinite(reference_mhz)) {
      reference_mhz = m.model.energies.reference_f_core_mhz;
    }
  }
  for (const std::string& path : files_) {
    if (!EndsWith(ToLower(path), ".csv")) continue;
    if (!LooksLikeAccelWattchBreakdownCsv(path)) continue;
    ReportAccelWattchBreakdown b;
    b.path = path;
    b.table = ReadAccelWattchBreakdownCsv(path);
    UseInput(path);
    b.clocks = SplitByCoreClock(b.table);
    b.clock_chart = ClockSplitChart(b.clocks, kMaxAccelWattchClockBars);
    if (b.clocks.size() > kMaxAccelWattchClockBars) {
      r_.notes.push_back(fmt::format("{}: {} of its {} core clocks are drawn", path,
                                     kMaxAccelWattchClockBars, b.clocks.size()));
    }
    b.reference_f_core_mhz = ChooseReferenceClock(b.table, reference_mhz, &b.reference_why);
    b.component_chart = DynamicByBenchmarkChart(
        b.table, b.reference_f_core_mhz, kMaxAccelWattchBenchmarkBars, &b.benchmarks_at_reference);
    r_.accelwattch_breakdowns.push_back(std::move(b));
  }
}

std::string Collector::ValidationName(const std::string& run_path) {
  const fs::path p(run_path);
  std::string dir = p.parent_path().generic_string();
  if (StartsWith(dir, "validation/")) dir = dir.substr(11);
  if (!dir.empty() && dir != "validation") return dir;
  std::string stem = p.stem().string();
  if (StartsWith(stem, "predictions_")) stem = stem.substr(12);
  return stem == "predictions" ? "" : stem;
}

void Collector::AddValidation(const FoundValidation& f, const std::string& given_label,
                              bool extra) {
  ReportValidation v;
  v.extra = extra;
  v.name = f.name;
  v.mode = f.name;
  v.predictions_path = f.predictions;
  v.metrics_path = f.metrics;
  v.summary_path = f.summary;
  v.rows = ReadPredictionsCsv(f.predictions);
  UseInput(f.predictions);
  if (!f.metrics.empty()) {
    v.metrics = ReadJsonFile(f.metrics, "file for reading");
    UseInput(f.metrics);
  } else {
    v.metrics = MetricsToJson(ComputeValidationMetrics(v.rows), MetricsOptions());
  }
  v.title = JsonString(v.metrics, "title");
  if (!JsonString(v.metrics, "mode").empty()) v.mode = JsonString(v.metrics, "mode");
  if (v.name.empty()) v.name = v.mode;
  v.cross_validated = v.metrics.is_object() && v.metrics.contains("cv_folds");
  v.model_path = ResolveNamed(JsonString(v.metrics, "model"), o_.run_dir, KnownFiles());
  v.measurements_path =
      ResolveNamed(JsonString(v.metrics, "measurements"), o_.run_dir, KnownFiles());
  if (!JsonString(v.metrics, "measurements").empty() && v.measurements_path.empty()) {
    r_.notes.push_back(fmt::format("{}: the measurements it names ({}) were not found", f.metrics,
                                   JsonString(v.metrics, "measurements")));
  }
  const ReportModel* primary =
      r_.primary_model >= 0 ? &r_.models[static_cast<size_t>(r_.primary_model)] : nullptr;
  v.primary = !extra &&
              (v.cross_validated || (primary != nullptr && SameFile(primary->path, v.model_path)));
  v.label = given_label;
  if (v.label.empty()) {
    std::string how;
    if (v.cross_validated) {
      how = fmt::format("{:g}-fold CV", JsonNumber(v.metrics, "cv_folds"));
    } else {
      for (const ReportModel& m : r_.models) {
        if (SameFile(m.path, v.model_path)) how = ModelKind(m.model);
      }
    }
    v.label = how.empty() || how == v.name ? v.name : v.name + ", " + how;
  }
  for (const ReportValidation& other : r_.validations) {
    if (other.label == v.label) v.label += fmt::format(" #{}", r_.validations.size() + 1);
  }
  r_.validations.push_back(std::move(v));
}

void Collector::DiscoverValidations() {
  for (const StageRun& run : run_files_.runs) {
    if (run.stage != "validate") continue;
    const RunOutput* predictions = run.Output("predictions");
    const RunOutput* metrics = run.Output("metrics");
    if (predictions == nullptr || metrics == nullptr) {
      r_.notes.push_back(run.provenance +
                         ": a validate run without its predictions and metrics; not shown");
      continue;
    }
    const RunOutput* summary = run.Output("summary");
    const std::string relative =
        !predictions->run_path.empty()
            ? predictions->run_path
            : fs::path(predictions->path).lexically_relative(o_.run_dir).generic_string();
    AddValidation({predictions->path, metrics->path, summary != nullptr ? summary->path : "",
                   ValidationName(relative)},
                  "", false);
  }
  std::stable_sort(r_.validations.begin(), r_.validations.end(),
                   [](const ReportValidation& a, const ReportValidation& b) {
                     if (a.primary != b.primary) return a.primary;
                     if ((a.name == a.mode) != (b.name == b.mode)) return a.name == a.mode;
                     return ModeRank(a.mode) < ModeRank(b.mode);
                   });
  for (const std::string& text : o_.predictions) {
    const LabelledPath lp = ParseLabelledPath(text);
    FoundValidation f{lp.path, "", "", ValidationName(fs::path(lp.path).filename().string())};
    StageRun run;
    if (FindStageRunOf(lp.path, &run) && run.stage == "validate") {
      if (const RunOutput* metrics = run.Output("metrics")) f.metrics = metrics->path;
      if (const RunOutput* summary = run.Output("summary")) f.summary = summary->path;
    }
    std::string label = lp.label;
    if (label.empty()) {
      const std::string parent = fs::path(lp.path).parent_path().filename().string();
      const std::string mode = f.name.empty() ? "predictions" : f.name;
      label = parent.empty() ? mode : parent + ": " + mode;
    }
    AddValidation(f, label, true);
  }
}

}  // namespace wattcal::report_internal
