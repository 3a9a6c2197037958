// Validation figures drawn by gnuplot (through gnuplot-iostream, report/gnuplot_figure.h):
// measured-vs-predicted scatter (TPDS'19 Figs. 8a/9 style) and the cumulative distribution of
// the absolute percentage error, and the per-workload error bars. Each figure is written as PNG
// (pngcairo) and SVG of the same size (800x600 unless said below) with its data inline in the
// script, so the same inputs give byte-identical files.
//
// Each function writes exactly to the paths it is given (callers pass the temporary paths
// from OutputSet::Stage) and returns only after gnuplot has finished and closed both files.
// It throws std::runtime_error when gnuplot is not available or reports an error (the
// message carries gnuplot's own output; neither file is left behind), and
// std::invalid_argument for inputs that cannot be drawn (no points, non-finite values).
// gnuplot's warnings on a successful run are logged with LogWarning.
//
// Bytes are identical across runs on one machine (no timestamps in either format); they
// depend on the installed gnuplot, cairo and fonts ("Sans" through fontconfig).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/gnuplot_figure.h"  // GnuplotAvailable()
#include "util/output.h"
#include "validate/metrics.h"
#include "validate/prediction.h"
#include "validate/workload_errors.h"

namespace wattcal {

// Measured (x) vs. predicted (y) power, W, on equal square axes, with the line y = x and
// the band of +/-10% around it; the key, below the axes in two rows, states n, the MAPE with
// its confidence interval and Pearson r, taken from `m.overall`. `options` must be those `m` was computed with
// (the key names the interval's confidence level).
void WriteScatterPlot(const std::vector<PredictionRow>& rows, const ValidationMetrics& m,
                      const std::string& title, const std::string& png_path,
                      const std::string& svg_path, const MetricsOptions& options = {});

// The scatter's canvas: 720 x 760, the square axes with the title above and the key below.
FigureSize ScatterFigureSize();

// Empirical CDF of the absolute percentage error, %, one step curve per named series
// (values in any order); the key gives each series' n and MAPE.
void WriteErrorCdfPlot(
    const std::vector<std::pair<std::string, std::vector<double>>>& series_ape_pct,
    const std::string& title, const std::string& png_path, const std::string& svg_path);

// The per-workload error (validate/workload_errors.h) as horizontal bars, one per workload in
// the given order from the top (ComputeWorkloadErrors: the largest |error| first): the signed
// error in %, over-predictions and under-predictions in two colours, with the zero line, each
// workload named on the y axis with its full name. Past 25 workloads only the first 25 are
// bars (the title says "the 25 largest of N workloads") and a histogram of every workload's
// error sits below them, so that hundreds of workloads stay legible.
void WriteWorkloadErrorPlot(const std::vector<WorkloadError>& errors, const std::string& title,
                            const std::string& png_path, const std::string& svg_path);

// Where a validation's per-workload chart goes beside its scatter PLOT.png:
// PLOT_workloads.png (its SVG twin PLOT_workloads.svg). wattcal-validate draws it whenever it
// draws the scatter (ValidationFigureOptions::workload_errors).
std::string WorkloadErrorPlotPath(const std::string& scatter_png_path);

// What wattcal-validate draws beside the scatter; the defaults turn every figure on.
struct ValidationFigureOptions {
  // The per-workload error chart at WorkloadErrorPlotPath(--plot), linked from --summary-md.
  bool workload_errors = true;
};

// wattcal-validate's figures for `plot_path` (a .png): the scatter there and its SVG twin, and
// (figures.workload_errors) the per-workload error chart at WorkloadErrorPlotPath(plot_path)
// with its SVG twin, titled "TITLE: error per workload"; each staged in `outputs` with a
// manifest (stage "validate", `inputs`, `options`). Returns the chart's path, "" when not drawn
// (pass it to ValidationMarkdown).
std::string StageValidationFigures(const std::vector<PredictionRow>& rows,
                                   const ValidationMetrics& m, const std::string& title,
                                   const std::string& plot_path,
                                   const std::vector<std::string>& inputs,
                                   const nlohmann::json& options, OutputSet* outputs,
                                   const ValidationFigureOptions& figures = {},
                                   const MetricsOptions& metrics_options = {});

// The canvas of WriteWorkloadErrorPlot: 800 px wide (900 with names over 20 characters among
// the bars), at least 600 px high and 15 px per bar beyond the margins, and 300 px more for the
// histogram past 25 workloads.
FigureSize WorkloadErrorFigureSize(const std::vector<WorkloadError>& errors);

}  // namespace wattcal
