#include "report/validation_plots.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <gnuplot-iostream.h>

#include "report/gnuplot_figure.h"

namespace wattcal {
namespace {

// Half-width of the band drawn around y = x in the scatter plot.
constexpr double kBandFrac = 0.10;
// Margin added around the data range of the scatter axes, as a fraction of the range.
constexpr double kAxisPadFrac = 0.05;

}  // namespace

void WriteScatterPlot(const std::vector<PredictionRow>& rows, const ValidationMetrics& m,
                      const std::string& title, const std::string& png_path,
                      const std::string& svg_path, const MetricsOptions& options) {
  if (rows.empty()) throw std::invalid_argument("scatter plot: no prediction rows to draw");
  std::vector<std::pair<double, double>> points;  // (measured_w, predicted_w)
  points.reserve(rows.size());
  double low_w = rows.front().measured_w;
  double high_w = low_w;
  for (const PredictionRow& row : rows) {
    if (!std::isfinite(row.measured_w) || !std::isfinite(row.predicted_w)) {
      throw std::invalid_argument(fmt::format(
          "scatter plot: benchmark '{}' (line {}) has measured_w = {}, predicted_w = {}",
          row.benchmark, row.line, row.measured_w, row.predicted_w));
    }
    points.emplace_back(row.measured_w, row.predicted_w);
    low_w = std::min({low_w, row.measured_w, row.predicted_w});
    high_w = std::max({high_w, row.measured_w, row.predicted_w});
  }
  const double pad_w = high_w > low_w ? kAxisPadFrac * (high_w - low_w)
                                      : std::max(1.0, kAxisPadFrac * std::abs(high_w));
  const double axis_low_w = low_w >= 0.0 ? std::max(0.0, low_w - pad_w) : low_w - pad_w;
  const double axis_high_w = high_w + pad_w;

  const ErrorMetrics& e = m.overall;
  const std::string points_title = fmt::format("points (n = {})", e.points);
  const std::string band_title = fmt::format("±{:g}%", 100.0 * kBandFrac);
  // The statistics, one short line each, as key entries without a sample after a gap.
  const std::vector<std::string> stat_lines = {
      " ",  // an empty title would drop the entry
      fmt::format("MAPE {:.2f}%", e.mape_pct),
      fmt::format("{:g}% CI {:.2f}–{:.2f}%", 100.0 * options.confidence_level,
                  e.mape_ci_low_pct, e.mape_ci_high_pct),
      std::isfinite(e.pearson_r) ? fmt::format("Pearson r {:.4f}", e.pearson_r)
                                 : std::string("Pearson r undefined"),
  };

  auto body = [&](Gnuplot* gp) {
    *gp << "set title " << GnuplotTitle(title) << "\n";
    *gp << "set xlabel 'Measured power (W)'\n";
    *gp << "set ylabel 'Predicted power (W)'\n";
    *gp << "set size ratio -1\n";
    *gp << "set xrange [" << axis_low_w << ":" << axis_high_w << "]\n";
    *gp << "set yrange [" << axis_low_w << ":" << axis_high_w << "]\n";
    *gp << "set tics out nomirror\n";
    *gp << "set grid lc rgb '#d9d9d9' lw 0.5\n";
    // Outside, in the margin the square axes leave free: inside, any corner can hide points.
    *gp << "set key outside right top Left reverse box samplen 2 spacing 1.2 width 1\n";
    *gp << "set samples 2\n";  // every curve here is a straight line
    *gp << "plot '+' using 1:(" << 1.0 - kBandFrac << "*$1):(" << 1.0 + kBandFrac
        << "*$1) with filledcurves fc rgb '#dde8f3' fs solid 1.0 noborder title "
        << GnuplotString(band_title) << ", \\\n"
        << "  " << 1.0 - kBandFrac << "*x with lines dt 2 lw 1 lc rgb '#5b84b1' notitle, \\\n"
        << "  " << 1.0 + kBandFrac << "*x with lines dt 2 lw 1 lc rgb '#5b84b1' notitle, \\\n"
        << "  x with lines lw 1.5 lc rgb '#303030' title 'y = x', \\\n"
        << "  '-' using 1:2 with points pt 7 ps 0.8 lc rgb '#40C0392B' title "
        << GnuplotString(points_title);
    for (const std::string& line : stat_lines) {
      *gp << ", \\\n  keyentry with points ps 0 lc rgb '#ffffff' title " << GnuplotString(line);
    }
    *gp << "\n";
    gp->send1d(points);
  };
  RenderFigure("measured-vs-predicted scatter", png_path, svg_path, body);
}

void WriteErrorCdfPlot(const std::vector<std::pair<std::string, std::vector<double>>>& series_ape_pct,
                       const std::string& title, const std::string& png_path,
                       const std::string& svg_path) {
  if (series_ape_pct.empty()) throw std::invalid_argument("error CDF plot: no series to draw");
  double max_ape_pct = 0.0;
  for (const auto& [name, ape_pct] : series_ape_pct) {
    if (ape_pct.empty()) {
      throw std::invalid_argument("error CDF plot: series '" + name + "' has no points");
    }
    for (double ape : ape_pct) {
      if (!std::isfinite(ape) || ape < 0.0) {
        throw std::invalid_argument(fmt::format(
            "error CDF plot: series '{}' has APE {}; values must be finite and >= 0", name, ape));
      }
      max_ape_pct = std::max(max_ape_pct, ape);
    }
  }

  // Per series: the empirical CDF as step vertices (0, 0), (a_1, 1/n), ..., (a_n, 1),
  // extended flat to the largest APE of all series, where the x axis ends (rounded up to
  // the next tic by gnuplot's autoscale).
  std::vector<std::vector<std::pair<double, double>>> curves;
  std::vector<std::string> titles;
  for (const auto& [name, ape_pct] : series_ape_pct) {
    std::vector<double> sorted = ape_pct;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::pair<double, double>> curve = {{0.0, 0.0}};
    const double n = static_cast<double>(sorted.size());
    double mean_pct = 0.0;
    for (size_t i = 0; i < sorted.size(); ++i) {
      curve.emplace_back(sorted[i], static_cast<double>(i + 1) / n);
      mean_pct += sorted[i];
    }
    mean_pct /= n;
    curve.emplace_back(max_ape_pct, 1.0);
    curves.push_back(std::move(curve));
    titles.push_back(fmt::format("{} (n = {}, MAPE {:.2f}%)", name, sorted.size(), mean_pct));
  }

  auto body = [&](Gnuplot* gp) {
    *gp << "set title " << GnuplotTitle(title) << "\n";
    *gp << "set xlabel 'Absolute percentage error (%)'\n";
    *gp << "set ylabel 'Fraction of points'\n";
    *gp << "set xrange [0:" << (max_ape_pct > 0.0 ? "*" : "1") << "]\n";
    *gp << "set yrange [0:1.02]\n";
    *gp << "set ytics 0, 0.2, 1\n";
    *gp << "set tics out nomirror\n";
    *gp << "set grid lc rgb '#d9d9d9' lw 0.5\n";
    // Below the axes, one entry per line: inside, a series with large errors runs through
    // any corner, and long series names would not fit. gnuplot's own bottom margin lets
    // the key overlap the x label, so the margin is set to tics + label + key lines.
    *gp << "set key outside below center Left reverse nobox maxcols 1 samplen 3 spacing 1.1\n";
    *gp << "set bmargin " << 4 + static_cast<int>(std::ceil(1.1 * curves.size())) << "\n";
    *gp << "plot ";
    for (size_t s = 0; s < curves.size(); ++s) {
      if (s > 0) *gp << ", \\\n  ";
      *gp << "'-' using 1:2 with steps lw 2 lc rgb '" << SeriesColour(static_cast<int>(s))
          << "' dt " << SeriesDashType(static_cast<int>(s)) << " title "
          << GnuplotString(titles[s]);
    }
    *gp << "\n";
    for (const auto& curve : curves) gp->send1d(curve);
  };
  RenderFigure("error CDF", png_path, svg_path, body);
}

}  // namespace wattcal
