#include "report/report_figures.h"

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <gnuplot-iostream.h>
#include <nlohmann/json.hpp>

#include "accelwattch/constant_power.h"
#include "io/sweep.h"
#include "report/gnuplot_figure.h"
#include "util/errors.h"
#include "report/internal/report_figures_internal.h"

namespace wattcal {

using namespace figures_internal;  // NOLINT: the figures' own helpers

// ---- Voltage ---------------------------------------------------------------------------------

void WriteVoltagePlot(const std::vector<std::pair<std::string, PowerModel>>& labelled_models,
                      const std::string& title, const std::string& png_path,
                      const std::string& svg_path) {
  std::vector<std::string> domains;
  std::map<std::string, double> default_mhz;
  for (const auto& [label, model] : labelled_models) {
    for (const FrequencyDomain& d : model.layout.domains) {
      if (std::find(domains.begin(), domains.end(), d.name) == domains.end()) {
        domains.push_back(d.name);
        default_mhz[d.name] = d.default_freq_mhz;
      }
    }
  }
  // Per domain, per model: the curve (empty when the model has one level there).
  std::vector<std::vector<std::vector<std::pair<double, double>>>> curves(domains.size());
  bool any = false;
  for (size_t d = 0; d < domains.size(); ++d) {
    for (const auto& [label, model] : labelled_models) {
      std::vector<std::pair<double, double>> curve;
      for (int k = 0; k < model.layout.num_domains(); ++k) {
        if (model.layout.domains[static_cast<size_t>(k)].name != domains[d]) continue;
        const std::vector<double>& f = model.freq_levels_mhz[static_cast<size_t>(k)];
        const std::vector<double>& v = model.voltage_rel[static_cast<size_t>(k)];
        if (f.size() < 2) continue;
        for (size_t i = 0; i < f.size() && i < v.size(); ++i) {
          CheckFinite(v[i], "voltage of '" + label + "'");
          curve.emplace_back(f[i], v[i]);
        }
      }
      any = any || !curve.empty();
      curves[d].push_back(std::move(curve));
    }
  }
  if (!any) {
    throw std::invalid_argument(
        "voltage figure: no model has two or more frequency levels in any domain");
  }

  // The key goes below the panels (panels are too narrow to hold it): one row per model.
  int keyed = 0;
  for (size_t m = 0; m < labelled_models.size(); ++m) {
    bool drawn = false;
    for (size_t d = 0; d < domains.size(); ++d) drawn = drawn || !curves[d][m].empty();
    keyed += drawn ? 1 : 0;
  }
  const double bottom = std::min(0.45, 0.17 + 0.045 * keyed);
  auto body = [&](Gnuplot* gp) {
    *gp << "reset\n";
    // The title wrapped to the canvas; the panels move down one line per extra line.
    const std::string wrapped = GnuplotTitle(title, 84);
    const int extra_lines = static_cast<int>(std::count(wrapped.begin(), wrapped.end(), '\\'));
    *gp << "set multiplot layout 1," << domains.size() << " title " << wrapped
        << " margins 0.14, 0.97, " << Num(bottom) << ", " << Num(0.85 - 0.04 * extra_lines)
        << " spacing 0.1, 0.1\n";
    for (size_t d = 0; d < domains.size(); ++d) {
      *gp << "set title " << GnuplotTitle(DomainTitle(domains[d])) << "\n";
      *gp << "set xlabel " << GnuplotString(FrequencyAxisLabel(domains[d])) << "\n";
      if (d == 0) {
        *gp << "set ylabel 'Voltage / voltage at default frequency' offset 1,0\n";
      } else {
        *gp << "unset ylabel\n";
      }
      *gp << "set border 31\nset ytics autofreq\nset autoscale y\n";
      *gp << AxisStyle();
      *gp << "set xtics " << Num(NiceStep(curves[d])) << "\n";
      *gp << "set offsets graph 0.04, graph 0.04, graph 0.06, graph 0.06\n";
      // A domain whose voltage never changes (every level at 1): a range around it, not the
      // empty [1:1] gnuplot would widen with a warning.
      double v_low = 0.0, v_high = 0.0;
      bool any_v = false;
      for (const auto& curve : curves[d]) {
        for (const auto& [f, v] : curve) {
          v_low = any_v ? std::min(v_low, v) : v;
          v_high = any_v ? std::max(v_high, v) : v;
          any_v = true;
        }
      }
      if (any_v && !(v_high - v_low > 1e-9)) {
        *gp << "set yrange [" << Num(v_low - 0.1) << ":" << Num(v_high + 0.1) << "]\n";
      }
      *gp << "set arrow 1 from " << Num(default_mhz[domains[d]]) << ", graph 0 to "
          << Num(default_mhz[domains[d]]) << ", graph 1 nohead dt 3 lw 1 lc rgb '#808080'\n";
      if (d == 0) {
        *gp << "set key at screen 0.5, screen " << Num(bottom - 0.14)
            << " center top vertical Left reverse noautotitle samplen 3 spacing 1.1 maxcols 1\n";
      } else {
        *gp << "unset key\n";
      }
      std::vector<size_t> drawn;
      for (size_t m = 0; m < curves[d].size(); ++m) {
        if (!curves[d][m].empty()) drawn.push_back(m);
      }
      if (drawn.empty()) {
        // Keep the panel (and its axes) for a domain only fixed models describe.
        // No axes: a panel without data has no range to show.
        *gp << "unset border\nunset xtics\nunset ytics\nunset grid\nunset arrow 1\nunset xlabel\n";
        *gp << "set xrange [0:1]\nset yrange [0:1]\n";
        *gp << "set label 1 'single level only' at graph 0.5, graph 0.5 center\n";
        *gp << "plot 2 with lines lc rgb '#ffffff' notitle\n";
        *gp << "unset label 1\nset autoscale x\n";
        continue;
      }
      *gp << "plot ";
      for (size_t j = 0; j < drawn.size(); ++j) {
        const int m = static_cast<int>(drawn[j]);
        if (j > 0) *gp << ", \\\n  ";
        *gp << "'-' using 1:2 with linespoints lw 2 pt " << 5 + 2 * m << " ps 1.1 lc rgb '"
            << SeriesColour(m) << "' dt " << SeriesDashType(m) << " title "
            << GnuplotString(d == 0 ? labelled_models[static_cast<size_t>(m)].first : "");
      }
      *gp << "\n";
      for (size_t m : drawn) gp->send1d(curves[d][m]);
    }
    *gp << "unset multiplot\n";
  };
  RenderFigure("voltage figure", png_path, svg_path, body);
}

// ---- One benchmark over the V-F pairs ----------------------------------------------------------

void WriteBenchmarkVfPlot(const std::string& benchmark, const std::vector<BenchmarkSeries>& series,
                          const std::string& title, const std::string& png_path,
                          const std::string& svg_path) {
  std::set<double, std::greater<double>> mem_levels;
  std::map<std::pair<double, double>, double> measured;  // (mem, core) -> W
  for (const BenchmarkSeries& s : series) {
    for (const PredictionRow& row : s.rows) {
      CheckFinite(row.measured_w, "measured power of '" + benchmark + "'");
      CheckFinite(row.predicted_w, "predicted power of '" + benchmark + "' (" + s.label + ")");
      mem_levels.insert(row.f_mem_mhz);
      measured.emplace(std::make_pair(row.f_mem_mhz, row.f_core_mhz), row.measured_w);
    }
  }
  if (measured.empty()) {
    throw std::invalid_argument("V-F figure: benchmark '" + benchmark + "' has no rows");
  }
  const std::vector<double> mems(mem_levels.begin(), mem_levels.end());
  const bool one_domain = mems.size() == 1 && mems.front() == 0.0;

  // Per series, per memory level: (core, predicted), ascending core.
  std::vector<std::vector<std::vector<std::pair<double, double>>>> lines(series.size());
  std::vector<std::string> series_titles;
  for (size_t s = 0; s < series.size(); ++s) {
    lines[s].resize(mems.size());
    double sum_ape = 0.0;
    for (const PredictionRow& row : series[s].rows) {
      const size_t m =
          static_cast<size_t>(std::find(mems.begin(), mems.end(), row.f_mem_mhz) - mems.begin());
      lines[s][m].emplace_back(row.f_core_mhz, row.predicted_w);
      sum_ape += std::abs(row.error_pct());
    }
    for (auto& line : lines[s]) std::sort(line.begin(), line.end());
    series_titles.push_back(
        series[s].rows.empty() ? series[s].label + " (no rows)"
                               : fmt::format("{} (MAPE {:.2f}%)", series[s].label,
                                             sum_ape / static_cast<double>(series[s].rows.size())));
  }
  std::vector<std::vector<std::pair<double, double>>> points(mems.size());
  for (const auto& [key, watts] : measured) {
    const size_t m =
        static_cast<size_t>(std::find(mems.begin(), mems.end(), key.first) - mems.begin());
    points[m].emplace_back(key.second, watts);
  }

  const int key_rows =
      static_cast<int>(one_domain ? 1 + series.size() : std::max(mems.size(), 1 + series.size()));
  auto body = [&](Gnuplot* gp) {
    *gp << "reset\n";
    *gp << "set title " << GnuplotTitle(title) << "\n";
    *gp << "set xlabel 'Core frequency (MHz)'\n";
    *gp << "set ylabel 'Power (W)'\n";
    *gp << AxisStyle();
    *gp << "set offsets graph 0.03, graph 0.03, graph 0.05, graph 0.05\n";
    *gp << "set xtics " << Num(NiceStep(points)) << "\n";
    // Below the axes in two columns: the memory frequencies' colours, then what the points
    // and each dash mean.
    *gp << "set key outside below center vertical Left reverse nobox maxrows " << key_rows
        << " samplen 3 spacing 1.1 width 1 font ',12'\n";
    *gp << "set bmargin " << 4 + static_cast<int>(std::ceil(1.1 * key_rows)) << "\n";
    *gp << "plot ";
    bool first = true;
    auto next = [&]() {
      if (!first) *gp << ", \\\n  ";
      first = false;
    };
    for (size_t s = 0; s < series.size(); ++s) {
      for (size_t m = 0; m < mems.size(); ++m) {
        if (lines[s][m].empty()) continue;
        next();
        *gp << "'-' using 1:2 with lines lw 2 dt " << SeriesDashType(static_cast<int>(s))
            << " lc rgb '" << SeriesColour(static_cast<int>(m)) << "' notitle";
      }
    }
    for (size_t m = 0; m < mems.size(); ++m) {
      next();
      *gp << "'-' using 1:2 with points pt 7 ps 1.0 lc rgb '" << SeriesColour(static_cast<int>(m))
          << "' notitle";
    }
    // The key: one colour per memory frequency, then what points and each dash mean.
    if (!one_domain) {
      for (size_t m = 0; m < mems.size(); ++m) {
        next();
        *gp << "keyentry with linespoints lw 2 pt 7 lc rgb '" << SeriesColour(static_cast<int>(m))
            << "' title " << GnuplotString(fmt::format("memory {:g} MHz", mems[m]));
      }
    }
    next();
    *gp << "keyentry with points pt 7 lc rgb '#303030' title 'measured'";
    for (size_t s = 0; s < series.size(); ++s) {
      next();
      *gp << "keyentry with lines lw 2 dt " << SeriesDashType(static_cast<int>(s))
          << " lc rgb '#303030' title " << GnuplotString(series_titles[s]);
    }
    *gp << "\n";
    for (size_t s = 0; s < series.size(); ++s) {
      for (size_t m = 0; m < mems.size(); ++m) {
        if (!lines[s][m].empty()) gp->send1d(lines[s][m]);
      }
    }
    for (size_t m = 0; m < mems.size(); ++m) gp->send1d(points[m]);
  };
  RenderFigure("V-F figure of " + benchmark, png_path, svg_path, body);
}

// ---- Correlation heat-maps -------------------------------------------------------------------

namespace {

// The matrix as rows of numbers (NaN written as 0) and the NaN cells as "x y" lines.
void MatrixBlocks(const Eigen::MatrixXd& m, std::string* matrix, std::string* missing) {
  for (int i = 0; i < m.rows(); ++i) {
    for (int j = 0; j < m.cols(); ++j) {
      const double value = m(i, j);
      *matrix += (j > 0 ? " " : "") + (std::isfinite(value) ? Num(value) : std::string("0"));
      if (!std::isfinite(value)) *missing += fmt::format("{} {}\n", j, i);
    }
    *matrix += "\n";
  }
}

// Tics naming every index along both axes.
void HeatmapTics(Gnuplot* gp, const std::vector<std::string>& names, int font_pt) {
  std::string tics;
  for (size_t i = 0; i < names.size(); ++i) {
    tics += fmt::format("{}{} {}", i > 0 ? ", " : "", GnuplotString(names[i]), i);
  }
  *gp << "set xtics (" << tics << ") rotate by 90 right scale 0 font '," << font_pt << "'\n";
  *gp << "set ytics (" << tics << ") scale 0 font '," << font_pt << "'\n";
}

}  // namespace

std::vector<std::string> HeatmapBenchmarkLabels(const std::vector<std::string>& names,
                                                int* shortened) {
  std::vector<std::string> labels;
  int count = 0;
  for (const std::string& name : names) {
    if (name.size() <= kHeatmapLabelChars) {
      labels.push_back(name);
      continue;
    }
    // Both ends: prefixes tell the families apart, suffixes the variants within one.
    const size_t tail = kHeatmapLabelChars / 3;
    labels.push_back(name.substr(0, kHeatmapLabelChars - 1 - tail) + "…" +
                     name.substr(name.size() - tail));
    ++count;
  }
  if (shortened != nullptr) *shortened = count;
  return labels;
}

FigureSize BenchmarkHeatmapSize(size_t benchmarks) {
  FigureSize size;
  if (benchmarks <= static_cast<size_t>(kMaxNamedBenchmarks)) return size;
  // Square cells of kHeatmapCellPx, the names beside them, the colour box and the title.
  const int side_px = kHeatmapCellPx * static_cast<int>(benchmarks);
  size.width_px = side_px + 380;
  size.height_px = side_px + 200;
  return size;
}

void WriteBenchmarkCorrelationHeatmap(const CollinearityReport& report, const std::string& title,
                                      const std::string& png_path, const std::string& svg_path) {
  const int n = static_cast<int>(report.benchmarks.size());
  if (n < 2 || report.benchmark_r.rows() != n || report.benchmark_r.cols() != n) {
    throw std::invalid_argument("benchmark correlation heat-map: needs an n x n matrix, n >= 2");
  }
  std::string matrix, missing;
  MatrixBlocks(report.benchmark_r, &matrix, &missing);
  // Every benchmark is named: up to kMaxNamedBenchmarks on the usual canvas, beyond on one
  // that grows with their number; long names shortened in the middle.
  const std::vector<std::string> labels = HeatmapBenchmarkLabels(report.benchmarks, nullptr);
  const FigureSize size = BenchmarkHeatmapSize(report.benchmarks.size());
  const int font_pt = n <= kMaxNamedBenchmarks ? TicFontPt(n, 430, 11) : kHeatmapLargeFontPt;
  auto body = [&](Gnuplot* gp) {
    *gp << "reset\n";
    *gp << "$r << EOD\n" << matrix << "EOD\n";
    if (!missing.empty()) *gp << "$undefined << EOD\n" << missing << "EOD\n";
    *gp << "set title " << GnuplotTitle(title, static_cast<size_t>(size.width_px / 12)) << "\n";
    *gp << "set size square\n";
    *gp << kCorrelationPalette << "set cbrange [-1:1]\nset cbtics 0.5\n";
    *gp << "set cblabel 'Pearson r of the utilisation vectors'\n";
    *gp << "set xrange [-0.5:" << n - 0.5 << "]\n";
    *gp << "set yrange [" << n - 0.5 << ":-0.5]\n";
    HeatmapTics(gp, labels, font_pt);
    *gp << "unset key\n";
    *gp << "plot $r matrix with image pixels";
    if (!missing.empty()) {
      *gp << ", \\\n  $undefined using 1:2:(0.5):(0.5) with boxxyerror fs solid 1.0 noborder "
             "fc rgb '"
          << kMissingColour << "'";
    }
    *gp << "\n";
  };
  RenderFigure("benchmark correlation heat-map", png_path, svg_path, body, size);
}

void WriteComponentCorrelationHeatmap(const CollinearityReport& report, double pair_threshold_abs_r,
                                      const std::string& title, const std::string& png_path,
                                      const std::string& svg_path) {
  const int p = static_cast<int>(report.components.size());
  if (p < 1 || report.component_r.rows() != p || report.component_r.cols() != p) {
    throw std::invalid_argument("component correlation heat-map: needs a p x p matrix, p >= 1");
  }
  std::string matrix, missing;
  MatrixBlocks(report.component_r, &matrix, &missing);
  std::string dark_labels, light_labels, outlines;
  int outline = 0;
  const int label_pt = p <= 8 ? 12 : p <= 12 ? 10 : p <= 20 ? 8 : 0;
  for (int i = 0; i < p; ++i) {
    for (int j = 0; j < p; ++j) {
      const double r = report.component_r(i, j);
      // |r| < 0.005 prints as 0.00, not -0.00.
      const std::string text =
          std::isfinite(r) ? fmt::format("{:.2f}", std::abs(r) < 0.005 ? 0.0 : r) : "n/a";
      std::string& block =
          std::isfinite(r) && std::abs(r) > kWhiteTextAbsR ? light_labels : dark_labels;
      block += fmt::format("{} {} {}\n", j, i, DataString(text));
      if (i != j && std::isfinite(r) && std::abs(r) >= pair_threshold_abs_r) {
        outlines += fmt::format(
            "set object {} rect from {}, {} to {}, {} fs empty border lc rgb '#000000' lw 2.5 "
            "front\n",
            ++outline, j - 0.5, i - 0.5, j + 0.5, i + 0.5);
      }
    }
  }
  auto body = [&](Gnuplot* gp) {
    *gp << "reset\n";
    *gp << "$r << EOD\n" << matrix << "EOD\n";
    if (!missing.empty()) *gp << "$undefined << EOD\n" << missing << "EOD\n";
    if (label_pt > 0 && !dark_labels.empty()) *gp << "$dark << EOD\n" << dark_labels << "EOD\n";
    if (label_pt > 0 && !light_labels.empty()) *gp << "$light << EOD\n" << light_labels << "EOD\n";
    *gp << "set title " << GnuplotTitle(title) << "\n";
    *gp << "set size square\n";
    *gp << kCorrelationPalette << "set cbrange [-1:1]\nset cbtics 0.5\n";
    *gp << "set cblabel 'Pearson r across benchmarks'\n";
    *gp << "set xrange [-0.5:" << p - 0.5 << "]\n";
    *gp << "set yrange [" << p - 0.5 << ":-0.5]\n";
    HeatmapTics(gp, report.components, 12);
    *gp << outlines;
    *gp << "unset key\n";
    *gp << "plot $r matrix with image pixels";
    if (!missing.empty()) {
      *gp << ", \\\n  $undefined using 1:2:(0.5):(0.5) with boxxyerror fs solid 1.0 noborder "
             "fc rgb '"
          << kMissingColour << "'";
    }
    if (label_pt > 0 && !dark_labels.empty()) {
      *gp << ", \\\n  $dark using 1:2:3 with labels font '," << label_pt << "' tc rgb '#000000'";
    }
    if (label_pt > 0 && !light_labels.empty()) {
      *gp << ", \\\n  $light using 1:2:3 with labels font '," << label_pt << "' tc rgb '#ffffff'";
    }
    *gp << "\n";
  };
  RenderFigure("component correlation heat-map", png_path, svg_path, body);
}

}  // namespace wattcal
