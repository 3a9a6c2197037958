// Drawing a report's figures and staging its index (StageRunReport), and reading the
// predictions CSVs it shows (ReadPredictionsCsv).
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "io/csv_reader.h"
#include "report/gnuplot_figure.h"
#include "report/internal/run_report_internal.h"
#include "report/validation_plots.h"
#include "util/errors.h"
#include "util/logging.h"
#include "validate/metrics.h"

namespace wattcal {
namespace report_internal {
namespace {

// The metrics options a validation was computed with, as far as its JSON tells.
MetricsOptions MetricsOptionsOf(const ReportValidation& v) {
  MetricsOptions options;
  const double level = JsonNumber(v.metrics, "confidence_level");
  if (std::isfinite(level) && level > 0.0 && level < 1.0) options.confidence_level = level;
  return options;
}

void DrawFigure(const RunReport& r, const ReportFigure& f, const std::string& png,
                const std::string& svg) {
  switch (f.kind) {
    case FigureKind::kErrorCdf: {
      std::vector<std::pair<std::string, std::vector<double>>> series;
      for (const ReportValidation& v : r.validations) {
        std::vector<double> ape;
        for (const PredictionRow& row : v.rows) ape.push_back(std::abs(row.error_pct()));
        series.emplace_back(v.label, std::move(ape));
      }
      WriteErrorCdfPlot(series, f.title, png, svg);
      return;
    }
    case FigureKind::kScatter: {
      const ReportValidation& v = r.validations[static_cast<size_t>(f.index)];
      const MetricsOptions options = MetricsOptionsOf(v);
      ValidationMetrics m = ComputeValidationMetrics(v.rows, options);
      // The interval as the validation computed it (its method may differ from the default).
      const std::string ci = PercentKeyLabel(100.0 * options.confidence_level);
      const double low = JsonNumber(v.metrics, "mape_ci" + ci + "_low_pct");
      const double high = JsonNumber(v.metrics, "mape_ci" + ci + "_high_pct");
      if (std::isfinite(low) && std::isfinite(high)) {
        m.overall.mape_ci_low_pct = low;
        m.overall.mape_ci_high_pct = high;
      }
      WriteScatterPlot(v.rows, m, f.title, png, svg, options);
      return;
    }
    case FigureKind::kWorkloadErrors: {
      const ReportValidation& v = r.validations[static_cast<size_t>(f.index)];
      WriteWorkloadErrorPlot(ComputeWorkloadErrors(v.rows), f.title, png, svg);
      return;
    }
    case FigureKind::kBenchmarkVf: {
      std::vector<BenchmarkSeries> series;
      for (int i : VfValidationIndices(r.validations)) {
        const ReportValidation& v = r.validations[static_cast<size_t>(i)];
        BenchmarkSeries s;
        s.label = v.label;
        for (const PredictionRow& row : v.rows) {
          if (row.benchmark == f.name) s.rows.push_back(row);
        }
        if (s.rows.size() >= 2) series.push_back(std::move(s));
      }
      WriteBenchmarkVfPlot(f.name, series, f.title, png, svg);
      return;
    }
    case FigureKind::kVoltage: {
      std::vector<std::pair<std::string, PowerModel>> models;
      for (const ReportModel& m : r.models) models.emplace_back(m.label, m.model);
      WriteVoltagePlot(models, f.title, png, svg);
      return;
    }
    case FigureKind::kBreakdown: WriteBreakdownPlot(r.breakdown, f.title, png, svg); return;
    case FigureKind::kBenchmarkCorrelation:
      WriteBenchmarkCorrelationHeatmap(r.corpora[static_cast<size_t>(f.index)].collinearity,
                                       f.title, png, svg);
      return;
    case FigureKind::kComponentCorrelation: {
      const double threshold = r.options.value("collinearity_pair_threshold_abs_r", 0.95);
      WriteComponentCorrelationHeatmap(r.corpora[static_cast<size_t>(f.index)].collinearity,
                                       threshold, f.title, png, svg);
      return;
    }
    case FigureKind::kConstant: WriteConstantPowerPlot(r.constant_drawn, f.title, png, svg); return;
    case FigureKind::kRelative:
      WriteRelativePowerPlot(r.comparisons[static_cast<size_t>(f.index)], f.title, png, svg);
      return;
    case FigureKind::kAccelWattchClocks:
      WriteBreakdownPlot(r.accelwattch_breakdowns[static_cast<size_t>(f.index)].clock_chart,
                         f.title, png, svg);
      return;
    case FigureKind::kApps: WriteBreakdownPlot(r.apps.chart, f.title, png, svg); return;
    case FigureKind::kAppsEnergy: WriteAppsEnergyPlot(r.apps, f.title, png, svg); return;
    case FigureKind::kWhatIf: WriteWhatIfPlot(r.apps.what_if, f.name, f.title, png, svg); return;
    case FigureKind::kAccelWattchComponents:
      WriteBreakdownPlot(r.accelwattch_breakdowns[static_cast<size_t>(f.index)].component_chart,
                         f.title, png, svg);
      return;
  }
}

}  // namespace
}  // namespace report_internal

using report_internal::DrawFigure;
using report_internal::JoinPath;

std::vector<PredictionRow> ReadPredictionsCsv(const std::string& path) {
  CsvReader reader(path);
  std::vector<std::string> fields;
  if (!reader.Next(&fields)) reader.Fail("", "empty file: expected a predictions header");
  std::map<std::string, size_t> column;
  for (size_t i = 0; i < fields.size(); ++i) column.emplace(fields[i], i);
  auto find = [&](const std::string& name, bool required) -> long {
    auto it = column.find(name);
    if (it == column.end()) {
      if (required) {
        reader.Fail(name,
                    "missing column (expected benchmark,f_core_mhz,f_mem_mhz,measured_w,"
                    "predicted_w as wattcal-validate writes)");
      }
      return -1;
    }
    return static_cast<long>(it->second);
  };
  const long benchmark = find("benchmark", true);
  const long f_core = find("f_core_mhz", true);
  const long f_mem = find("f_mem_mhz", false);
  const long measured = find("measured_w", true);
  const long predicted = find("predicted_w", true);
  const long fold = find("fold", false);
  // The capping columns, when the predictions have them (a power limit was known).
  const long uncapped = find("uncapped_w", false);
  const long capped = find("capped", false);
  const long measured_capped = find("measured_capped", false);
  const long flags = find("flags", false);  // capped;util_beyond_training:<component>;...
  std::vector<PredictionRow> rows;
  while (reader.Next(&fields)) {
    if (fields.size() != column.size()) {
      reader.Fail("", fmt::format("{} fields, the header has {}", fields.size(), column.size()));
    }
    PredictionRow row;
    row.line = reader.line();
    row.benchmark = fields[static_cast<size_t>(benchmark)];
    if (row.benchmark.empty()) reader.Fail("benchmark", "empty benchmark name");
    row.f_core_mhz = reader.ParseNumber(fields[static_cast<size_t>(f_core)], "f_core_mhz");
    if (f_mem >= 0)
      row.f_mem_mhz = reader.ParseNumber(fields[static_cast<size_t>(f_mem)], "f_mem_mhz");
    row.measured_w = reader.ParseNumber(fields[static_cast<size_t>(measured)], "measured_w");
    if (!(row.measured_w > 0.0)) {
      reader.Fail("measured_w", fmt::format("{} must be > 0 (errors are relative to it)",
                                            fields[static_cast<size_t>(measured)]));
    }
    row.predicted_w = reader.ParseNumber(fields[static_cast<size_t>(predicted)], "predicted_w");
    if (fold >= 0) {
      row.fold = static_cast<int>(reader.ParseNumber(fields[static_cast<size_t>(fold)], "fold"));
    }
    row.uncapped_w = uncapped >= 0
                         ? reader.ParseNumber(fields[static_cast<size_t>(uncapped)], "uncapped_w")
                         : row.predicted_w;
    auto flag = [&](long at, const char* name) {
      if (at < 0) return false;
      const std::string& v = fields[static_cast<size_t>(at)];
      if (v != "0" && v != "1") reader.Fail(name, fmt::format("'{}': expected 0 or 1", v));
      return v == "1";
    };
    row.capped = flag(capped, "capped");
    row.measured_capped = flag(measured_capped, "measured_capped");
    if (flags >= 0) row.flags = fields[static_cast<size_t>(flags)];
    rows.push_back(std::move(row));
  }
  if (rows.empty()) throw InputError(path, reader.line(), "", "no prediction rows");
  return rows;
}

void StageRunReport(const RunReport& report, const ReportOptions& options, OutputSet* outputs) {
  const std::string out_dir = options.EffectiveOutDir();
  if (options.figures) {
    Progress progress("drawing figures", static_cast<int64_t>(report.figures.size()));
    for (const ReportFigure& f : report.figures) {
      const std::string png = JoinPath(out_dir, "figures/" + f.stem + ".png");
      const std::string svg = JoinPath(out_dir, "figures/" + f.stem + ".svg");
      DrawFigure(report, f, outputs->Stage(png), outputs->Stage(svg));
      nlohmann::json figure_options = report.options;
      figure_options["figure"] = f.stem;
      outputs->StageProvenance(png, "report", f.inputs, figure_options, "figure");
      outputs->StageProvenance(svg, "report", f.inputs, figure_options, "figure");
      progress.Tick();
    }
    progress.Finish();
  }
  const std::string html = JoinPath(out_dir, "index.html");
  const std::string md = JoinPath(out_dir, "index.md");
  outputs->StageText(html, RunReportHtml(report, options));
  outputs->StageProvenance(html, "report", report.inputs, report.options, "index");
  outputs->StageText(md, RunReportMarkdown(report, options));
  outputs->StageProvenance(md, "report", report.inputs, report.options, "index");
}

}  // namespace wattcal
