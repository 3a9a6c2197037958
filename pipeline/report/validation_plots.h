// Validation figures drawn by gnuplot (through gnuplot-iostream, report/gnuplot_figure.h):
// measured-vs-predicted scatter (TPDS'19 Figs. 8a/9 style) and the cumulative distribution of
// the absolute percentage error. Each figure is written as PNG (pngcairo, 800x600) and SVG
// (800x600) with its data inline in the script, so the same inputs give byte-identical files.
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

#include "report/gnuplot_figure.h"  // GnuplotAvailable()
#include "validate/metrics.h"
#include "validate/prediction.h"

namespace wattcal {

// Measured (x) vs. predicted (y) power, W, on equal square axes, with the line y = x and
// the band of +/-10% around it; the key states n, the MAPE with its confidence interval
// and Pearson r, taken from `m.overall`. `options` must be those `m` was computed with
// (the key names the interval's confidence level).
void WriteScatterPlot(const std::vector<PredictionRow>& rows, const ValidationMetrics& m,
                      const std::string& title, const std::string& png_path,
                      const std::string& svg_path, const MetricsOptions& options = {});

// Empirical CDF of the absolute percentage error, %, one step curve per named series
// (values in any order); the key gives each series' n and MAPE.
void WriteErrorCdfPlot(const std::vector<std::pair<std::string, std::vector<double>>>& series_ape_pct,
                       const std::string& title, const std::string& png_path,
                       const std::string& svg_path);

}  // namespace wattcal
