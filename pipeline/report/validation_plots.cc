#include "report/validation_plots.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include <gnuplot-iostream.h>

#include "report/gnuplot_figure.h"

namespace wattcal {
namespace {

// Half-width of the band drawn around y = x in the scatter plot.
constexpr double kBandFrac = 0.10;
// The scatter names the points of this many largest relative errors.
constexpr size_t kScatterNamed = 5;
// Margin added around the data range of the scatter axes, as a fraction of the range.
constexpr double kAxisPadFrac = 0.05;
// Workload error bars: pixels per workload, the margins around them, the tic font.
constexpr int kWorkloadRowPx = 15;
constexpr int kWorkloadMarginsPx = 190;
constexpr int kWorkloadTicPt = 10;
// More workloads than this: the % axis is labelled at the top as well.
constexpr size_t kWorkloadTopAxisFrom = 40;
// At most this many workloads as bars (the largest |errors|); with more, a histogram of all of
// them below, this many pixels high.
constexpr size_t kWorkloadBarsMax = 25;
constexpr int kWorkloadHistogramPx = 300;

}  // namespace

FigureSize ScatterFigureSize() { return {720, 760}; }

namespace {

// The scatter's points by series, and its axes' range (the same on both: y = x is diagonal).
struct ScatterPoints {
  std::vector<std::pair<double, double>> points;  // (measured_w, predicted_w)
  std::vector<std::pair<double, double>> capped;  // the same, power-capped (measured or predicted)
  // The same, whose utilisation or power lies beyond the model's training (util_beyond_training,
  // power_beyond_training): ringed, as extrapolations.
  std::vector<std::pair<double, double>> beyond;
  double axis_low_w = 0.0;
  double axis_high_w = 0.0;
};

// Sorts `rows` into the scatter's series; throws std::invalid_argument when there are none or
// a power is not finite.
ScatterPoints ScatterSeries(const std::vector<PredictionRow>& rows) {
  if (rows.empty()) throw std::invalid_argument("scatter plot: no prediction rows to draw");
  ScatterPoints out;
  std::vector<std::pair<double, double>>& points = out.points;
  std::vector<std::pair<double, double>>& capped = out.capped;
  std::vector<std::pair<double, double>>& beyond = out.beyond;
  points.reserve(rows.size());
  double low_w = rows.front().measured_w;
  double high_w = low_w;
  for (const PredictionRow& row : rows) {
    if (!std::isfinite(row.measured_w) || !std::isfinite(row.predicted_w)) {
      throw std::invalid_argument(fmt::format(
          "scatter plot: benchmark '{}' (line {}) has measured_w = {}, predicted_w = {}",
          row.benchmark, row.line, row.measured_w, row.predicted_w));
    }
    (row.capped || row.measured_capped ? capped : points)
        .emplace_back(row.measured_w, row.predicted_w);
    if (row.flags.find("beyond_training") != std::string::npos)
      beyond.emplace_back(row.measured_w, row.predicted_w);
    low_w = std::min({low_w, row.measured_w, row.predicted_w});
    high_w = std::max({high_w, row.measured_w, row.predicted_w});
  }
  const double pad_w = high_w > low_w ? kAxisPadFrac * (high_w - low_w)
                                      : std::max(1.0, kAxisPadFrac * std::abs(high_w));
  out.axis_low_w = low_w >= 0.0 ? std::max(0.0, low_w - pad_w) : low_w - pad_w;
  out.axis_high_w = high_w + pad_w;

  return out;
}

// The kScatterNamed rows of largest relative error, largest first: named beside their points.
std::vector<const PredictionRow*> WorstRows(const std::vector<PredictionRow>& rows) {
  std::vector<const PredictionRow*> worst;
  for (const PredictionRow& row : rows) worst.push_back(&row);
  auto relative = [](const PredictionRow* r) {
    return r->measured_w != 0.0 ? std::abs(r->predicted_w - r->measured_w) / std::abs(r->measured_w)
                                : 0.0;
  };
  std::stable_sort(worst.begin(), worst.end(), [&](const PredictionRow* a, const PredictionRow* b) {
    return relative(a) > relative(b);
  });
  worst.resize(std::min(worst.size(), kScatterNamed));
  return worst;
}

// The labels naming the `worst` points between `axis_low_w` and `axis_high_w`.
void WriteWorstLabels(Gnuplot* gp, const std::vector<const PredictionRow*>& worst,
                      double axis_low_w, double axis_high_w) {
  // A name whose point lies close to an earlier named point's goes one line lower for each
  // (close: within 15% of the axis across and 4% up or down), so that no two names overprint.
  const double span_w = axis_high_w - axis_low_w;
  for (size_t k = 0; k < worst.size(); ++k) {
    int below = 0;
    for (size_t j = 0; j < k; ++j) {
      if (std::abs(worst[j]->measured_w - worst[k]->measured_w) < 0.15 * span_w &&
          std::abs(worst[j]->predicted_w - worst[k]->predicted_w) < 0.04 * span_w) {
        ++below;
      }
    }
    *gp << "set label " << k + 10 << " " << GnuplotString(worst[k]->benchmark) << " at "
        << fmt::format("{:.10g}, {:.10g}", worst[k]->measured_w, worst[k]->predicted_w)
        << fmt::format(" offset 0.6, {:.2f}", 0.4 - 1.1 * below)
        << " font ',9' tc rgb '#404040' front\n";
  }
}

}  // namespace

void WriteScatterPlot(const std::vector<PredictionRow>& rows, const ValidationMetrics& m,
                      const std::string& title, const std::string& png_path,
                      const std::string& svg_path, const MetricsOptions& options) {
  const ScatterPoints series = ScatterSeries(rows);
  const std::vector<std::pair<double, double>>& points = series.points;
  const std::vector<std::pair<double, double>>& capped = series.capped;
  const std::vector<std::pair<double, double>>& beyond = series.beyond;
  const double axis_low_w = series.axis_low_w, axis_high_w = series.axis_high_w;

  // The kScatterNamed largest relative errors are named beside their points.
  const std::vector<const PredictionRow*> worst = WorstRows(rows);

  const ErrorMetrics& e = m.overall;
  const std::string points_title = fmt::format("points (n = {})", e.points);
  const std::string band_title = fmt::format("±{:g}%", 100.0 * kBandFrac);
  // The statistics as key entries without a sample, in the key's second row (gnuplot fills
  // the key column by column: the entries alternate between the two rows).
  const std::string stat_lines[] = {
      fmt::format("MAPE {:.2f}%", e.mape_pct),
      fmt::format("{:g}% CI {:.2f}–{:.2f}%", 100.0 * options.confidence_level, e.mape_ci_low_pct,
                  e.mape_ci_high_pct),
      std::isfinite(e.pearson_r) ? fmt::format("Pearson r {:.4f}", e.pearson_r)
                                 : std::string("Pearson r undefined"),
  };
  auto stat_entry = [&](int i) {
    return ", \\\n  keyentry with points ps 0 lc rgb '#ffffff' title " +
           GnuplotString(stat_lines[i]);
  };

  auto body = [&](Gnuplot* gp) {
    *gp << "set title " << GnuplotTitle(title, 56) << "\n";
    *gp << "set xlabel 'Measured power (W)'\n";
    *gp << "set ylabel 'Predicted power (W)'\n";
    *gp << "set size ratio -1\n";
    *gp << "set xrange [" << axis_low_w << ":" << axis_high_w << "]\n";
    *gp << "set yrange [" << axis_low_w << ":" << axis_high_w << "]\n";
    *gp << AxisStyle();
    // Below the axes, in two compact rows (the series, then the statistics): inside, any
    // corner can hide points, and beside the square axes the key took a third of the width.
    *gp << "set key outside below center horizontal Left reverse nobox maxcols 3 samplen 1.5 "
           "spacing 1.1 font ',12'\n";
    if (!capped.empty()) {
      // Named in a corner, not in the key: a seventh entry would break the key's two rows.
      *gp << "set label 9 "
          << GnuplotString(fmt::format("▲ power-capped: {} of the points", capped.size()))
          << " at graph 0.03, graph 0.96 left font ',11' tc rgb '#303030' front\n";
    }
    if (!beyond.empty()) {
      *gp << "set label 8 "
          << GnuplotString(
                 fmt::format("○ beyond the training range: {} of the points", beyond.size()))
          << " at graph 0.03, graph " << (capped.empty() ? "0.96" : "0.91")
          << " left font ',11' tc rgb '#1f4e79' front\n";
    }
    WriteWorstLabels(gp, worst, axis_low_w, axis_high_w);
    // gnuplot's own bottom margin lets the key touch the x label: tics, label, two key rows.
    *gp << "set bmargin 7\n";
    // The band's edges are clamped to the axes here: gnuplot clips a filled polygon by moving
    // its corners onto the border, which tilts an edge that leaves the plot (the band's upper
    // edge then ran to the top-right corner). 101 samples put a corner near where it leaves.
    *gp << "set samples 101\n";
    *gp << "plot '+' using 1:((" << 1.0 - kBandFrac << "*$1) < " << axis_low_w << " ? "
        << axis_low_w << " : " << 1.0 - kBandFrac << "*$1):((" << 1.0 + kBandFrac << "*$1) > "
        << axis_high_w << " ? " << axis_high_w << " : " << 1.0 + kBandFrac
        << "*$1) with filledcurves fc rgb '#dde8f3' fs solid 1.0 noborder title "
        << GnuplotString(band_title) << stat_entry(0) << ", \\\n"
        << "  " << 1.0 - kBandFrac << "*x with lines dt 2 lw 1 lc rgb '#5b84b1' notitle, \\\n"
        << "  " << 1.0 + kBandFrac << "*x with lines dt 2 lw 1 lc rgb '#5b84b1' notitle, \\\n"
        << "  x with lines lw 1.5 lc rgb '#303030' title 'y = x'" << stat_entry(1) << ", \\\n"
        << "  '-' using 1:2 with points pt 7 ps 0.8 lc rgb '#40C0392B' title "
        << GnuplotString(points_title) << stat_entry(2);
    if (!capped.empty()) {
      *gp << ", \\\n  '-' using 1:2 with points pt 9 ps 1.1 lc rgb '#303030' notitle";
    }
    if (!beyond.empty()) {
      *gp << ", \\\n  '-' using 1:2 with points pt 6 ps 2.0 lw 1.2 lc rgb '#1f4e79' notitle";
    }
    *gp << "\n";
    gp->send1d(points.empty() ? std::vector<std::pair<double, double>>{{std::nan(""), std::nan("")}}
                              : points);
    if (!capped.empty()) gp->send1d(capped);
    if (!beyond.empty()) gp->send1d(beyond);
  };
  RenderFigure("measured-vs-predicted scatter", png_path, svg_path, body, ScatterFigureSize());
}

void WriteErrorCdfPlot(
    const std::vector<std::pair<std::string, std::vector<double>>>& series_ape_pct,
    const std::string& title, const std::string& png_path, const std::string& svg_path) {
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
    *gp << AxisStyle();
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

std::string WorkloadErrorPlotPath(const std::string& scatter_png_path) {
  const size_t dot = scatter_png_path.rfind('.');
  const size_t slash = scatter_png_path.rfind('/');
  const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash);
  return (has_ext ? scatter_png_path.substr(0, dot) : scatter_png_path) + "_workloads.png";
}

std::string StageValidationFigures(const std::vector<PredictionRow>& rows,
                                   const ValidationMetrics& m, const std::string& title,
                                   const std::string& plot_path,
                                   const std::vector<std::string>& inputs,
                                   const nlohmann::json& options, OutputSet* outputs,
                                   const ValidationFigureOptions& figures,
                                   const MetricsOptions& metrics_options) {
  auto svg_of = [](const std::string& png) { return png.substr(0, png.size() - 4) + ".svg"; };
  if (plot_path.size() < 4 || plot_path.compare(plot_path.size() - 4, 4, ".png") != 0) {
    throw std::invalid_argument("validation figures: " + plot_path + " is not a .png path");
  }
  WriteScatterPlot(rows, m, title, outputs->Stage(plot_path), outputs->Stage(svg_of(plot_path)),
                   metrics_options);
  outputs->StageProvenance(plot_path, "validate", inputs, options, "figure");
  outputs->StageProvenance(svg_of(plot_path), "validate", inputs, options, "figure");
  if (!figures.workload_errors) return "";
  const std::string chart = WorkloadErrorPlotPath(plot_path);
  WriteWorkloadErrorPlot(ComputeWorkloadErrors(rows), title + ": error per workload",
                         outputs->Stage(chart), outputs->Stage(svg_of(chart)));
  outputs->StageProvenance(chart, "validate", inputs, options, "figure");
  outputs->StageProvenance(svg_of(chart), "validate", inputs, options, "figure");
  return chart;
}

FigureSize WorkloadErrorFigureSize(const std::vector<WorkloadError>& errors) {
  const size_t shown = std::min(errors.size(), kWorkloadBarsMax);
  size_t longest = 0;
  for (size_t i = 0; i < shown; ++i) longest = std::max(longest, errors[i].workload.size());
  FigureSize size;
  size.width_px = longest > 20 ? 900 : 800;
  size.height_px = std::max(600, kWorkloadMarginsPx + kWorkloadRowPx * static_cast<int>(shown)) +
                   (errors.size() > kWorkloadBarsMax ? kWorkloadHistogramPx : 0);
  return size;
}

namespace {

// A round bin width (1, 2 or 5 x 10^k) giving about `bins` bins over `span`.
double RoundBinWidth(double span, int bins) {
  if (!(span > 0.0)) return 1.0;
  const double raw = span / bins;
  const double decade = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (raw <= m * decade) return m * decade;
  }
  return 10.0 * decade;
}

// "x count width" rows of the histogram of every workload's signed error.
std::string ErrorHistogram(const std::vector<WorkloadError>& errors, double* width_pct) {
  double low = 0.0, high = 0.0;
  for (const WorkloadError& e : errors) {
    low = std::min(low, e.error_pct);
    high = std::max(high, e.error_pct);
  }
  const double w = RoundBinWidth(high - low, 24);
  std::map<long, int> counts;  // bin index -> workloads
  for (const WorkloadError& e : errors) ++counts[static_cast<long>(std::floor(e.error_pct / w))];
  std::string rows;
  for (const auto& [bin, n] : counts)
    rows += fmt::format("{:.10g} {} {:.10g}\n", (bin + 0.5) * w, n, w);
  *width_pct = w;
  return rows;
}

}  // namespace

void WriteWorkloadErrorPlot(const std::vector<WorkloadError>& all, const std::string& title,
                            const std::string& png_path, const std::string& svg_path) {
  if (all.empty()) throw std::invalid_argument("per-workload error chart: no workloads");
  for (const WorkloadError& e : all) {
    if (!std::isfinite(e.error_pct)) {
      throw std::invalid_argument(fmt::format(
          "per-workload error chart: workload '{}' has error {}%", e.workload, e.error_pct));
    }
  }
  // Past kWorkloadBarsMax workloads: the largest |errors| as bars (all is sorted that way), and
  // every workload in a histogram below them.
  const bool histogram = all.size() > kWorkloadBarsMax;
  const std::vector<WorkloadError> errors(
      all.begin(),
      all.begin() + static_cast<std::ptrdiff_t>(std::min(all.size(), kWorkloadBarsMax)));
  double low_pct = 0.0, high_pct = 0.0;
  std::string over, under, tics;
  for (size_t i = 0; i < errors.size(); ++i) {
    const WorkloadError& e = errors[i];
    low_pct = std::min(low_pct, e.error_pct);
    high_pct = std::max(high_pct, e.error_pct);
    // x y xlow xhigh ylow yhigh: a bar from 0 to the error, 0.7 of a row high.
    (e.error_pct > 0.0 ? over : under) +=
        fmt::format("{:.10g} {} {:.10g} {:.10g} {} {}\n", e.error_pct, i,
                    std::min(0.0, e.error_pct), std::max(0.0, e.error_pct), i - 0.35, i + 0.35);
    tics += fmt::format("{}{} {}", i > 0 ? ", " : "", GnuplotString(e.workload), i);
  }
  // Zero and every bar inside, with a margin; never an empty range (all errors zero: -1..1).
  const double span_pct = high_pct - low_pct;
  const double pad_pct = span_pct > 0.0 ? kAxisPadFrac * span_pct : 1.0;
  const double axis_low_pct = low_pct < 0.0 || !(span_pct > 0.0) ? low_pct - pad_pct : 0.0;
  const double axis_high_pct = high_pct > 0.0 || !(span_pct > 0.0) ? high_pct + pad_pct : 0.0;
  const size_t n = errors.size();
  const bool top_axis = n > kWorkloadTopAxisFrom;
  const FigureSize size = WorkloadErrorFigureSize(all);
  const std::string full_title =
      histogram ? fmt::format("{}: the {} largest of {} workloads", title, n, all.size()) : title;
  // The title is centred on the canvas, wrapped to its width: the long names push the plot
  // area to the right, and a title centred over the plot area would run off the canvas.
  const std::string wrapped_title =
      GnuplotTitle(full_title, static_cast<size_t>(size.width_px / 11));
  int title_lines = 1;
  for (size_t at = wrapped_title.find("\\n"); at != std::string::npos;
       at = wrapped_title.find("\\n", at + 2)) {
    ++title_lines;
  }
  const double line_px = 22.0;  // one line of the 14 pt text
  auto from_top = [&](double px) { return fmt::format("{:.6f}", 1.0 - px / size.height_px); };
  const double histogram_frac =
      histogram ? static_cast<double>(kWorkloadHistogramPx) / size.height_px : 0.0;
  double bin_pct = 1.0;
  const std::string bins = histogram ? ErrorHistogram(all, &bin_pct) : std::string();
  auto body = [&](Gnuplot* gp) {
    *gp << "reset\n";
    if (!over.empty()) *gp << "$over << EOD\n" << over << "EOD\n";
    if (!under.empty()) *gp << "$under << EOD\n" << under << "EOD\n";
    if (histogram) *gp << "$bins << EOD\n" << bins << "EOD\n";
    if (histogram) *gp << "set multiplot\n";
    *gp << "set label 1 " << wrapped_title << " at screen 0.5, screen " << from_top(0.9 * line_px)
        << " center front\n";
    if (histogram) {
      *gp << fmt::format("set origin 0, {:.6f}\nset size 1, {:.6f}\n", histogram_frac,
                         1.0 - histogram_frac);
    }
    // Title, key and (tall charts) the top axis' tic labels above the plot area.
    *gp << "set tmargin " << title_lines + 2 + (top_axis ? 2 : 0) << "\n";
    *gp << "set key at screen 0.5, screen " << from_top((title_lines + 0.8) * line_px)
        << " center top horizontal Left reverse nobox samplen 1.5 font ',12'\n";
    *gp << "set xlabel 'Prediction error (%)'\n";
    *gp << "set xrange [" << fmt::format("{:.10g}:{:.10g}", axis_low_pct, axis_high_pct) << "]\n";
    *gp << "set yrange [" << n - 0.5 << ":-0.5]\n";  // the first (worst) workload at the top
    *gp << "set ytics (" << tics << ") scale 0 font '," << kWorkloadTicPt << "'\n";
    *gp << TicsStyle("x");
    if (top_axis) *gp << "set x2tics out\nset link x2\n";
    *gp << GridStyle("x");
    *gp << "set arrow 1 from first 0, graph 0 to first 0, graph 1 nohead lw 1.5 lc rgb '#303030' "
           "front\n";
    *gp << "set style fill solid 1.0 noborder\n";
    *gp << "plot ";
    if (!over.empty()) {
      *gp << "$over using 1:2:3:4:5:6 with boxxyerror fc rgb '" << SeriesColour(1)
          << "' title 'over-predicted (> 0)'";
    }
    if (!under.empty()) {
      *gp << (over.empty() ? "" : ", \\\n  ") << "$under using 1:2:3:4:5:6 with boxxyerror fc rgb '"
          << SeriesColour(0) << "' title 'under-predicted (≤ 0)'";
    }
    *gp << "\n";
    if (!histogram) return;
    // Every workload: how many fall in each bin of the signed error.
    *gp << "unset label 1\nunset key\nunset x2tics\nunset arrow 1\n";
    *gp << fmt::format("set origin 0, 0\nset size 1, {:.6f}\n", histogram_frac);
    *gp << "set tmargin 2\nset bmargin 3.5\n";
    *gp << "set title "
        << GnuplotString(fmt::format("all {} workloads ({:g}% bins)", all.size(), bin_pct))
        << " font ',12'\n";
    *gp << "set xlabel 'Prediction error (%)'\nset ylabel 'workloads'\n";
    *gp << "set autoscale x\nset yrange [0:*]\nset ytics auto font ',10'\n"
        << TicsStyle("x") << GridStyle("y");
    *gp << "set style fill solid 0.8 border rgb '#404040'\n";
    *gp << "plot $bins using 1:2:3 with boxes lc rgb '#7f7f7f' notitle\n";
    *gp << "unset multiplot\n";
  };
  RenderFigure("per-workload error chart", png_path, svg_path, body, size);
}

}  // namespace wattcal
