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
#include "report/report_figures_internal.h"

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

// ---- Breakdown -------------------------------------------------------------------------------

BreakdownChart ComputeBreakdownChart(const PowerModel& model, const Corpus& given) {
  // An optional component the model has no term for is left out (its power is not drawn).
  const Corpus activity = WithoutOptionalComponentsNotIn(given, model.layout, nullptr);
  const std::string mismatch = model.layout.Mismatch(activity.layout);
  if (!mismatch.empty()) {
    throw InputError(activity.path, activity.components_line, "components",
                     model.LayoutMismatchMessage(mismatch));
  }
  BreakdownChart chart;
  const int domains = model.layout.num_domains();
  for (int d = 0; d < domains; ++d) {
    chart.terms.push_back("static (" + model.layout.domains[static_cast<size_t>(d)].name + ")");
  }
  for (int d = 0; d < domains; ++d) {
    chart.terms.push_back("idle dynamic (" + model.layout.domains[static_cast<size_t>(d)].name +
                          ")");
  }
  chart.grey_terms = 2 * domains;
  for (const std::string& c : model.layout.ComponentNames()) chart.terms.push_back(c);
  const std::vector<double> defaults = model.DefaultFrequencies();
  std::vector<std::string> pair;
  for (double f : defaults) pair.push_back(fmt::format("{:g}", f));
  chart.pair_label = fmt::format("{} MHz", fmt::join(pair, "/"));

  std::vector<bool> at_default(static_cast<size_t>(activity.rows()), false);
  if (activity.has_freq()) {
    for (int row : activity.RowsAtDefault()) at_default[static_cast<size_t>(row)] = true;
  }
  std::vector<std::string> names;
  std::vector<int> chosen;
  for (int row = 0; row < activity.rows(); ++row) {
    const std::string& name = activity.benchmark[static_cast<size_t>(row)];
    auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) {
      names.push_back(name);
      chosen.push_back(row);
    } else if (at_default[static_cast<size_t>(row)] &&
               !at_default[static_cast<size_t>(chosen[static_cast<size_t>(it - names.begin())])]) {
      chosen[static_cast<size_t>(it - names.begin())] = row;
    }
  }
  for (size_t i = 0; i < names.size(); ++i) {
    const int row = chosen[i];
    const Eigen::VectorXd u = activity.util_frac.row(row).transpose();
    PowerBreakdown b;
    model.PredictAtDefault(u.data(), &b);
    BreakdownBar bar;
    bar.label = names[i];
    bar.term_w.insert(bar.term_w.end(), b.static_w.begin(), b.static_w.end());
    bar.term_w.insert(bar.term_w.end(), b.idle_dyn_w.begin(), b.idle_dyn_w.end());
    bar.term_w.insert(bar.term_w.end(), b.component_w.begin(), b.component_w.end());
    if (activity.has_power() && at_default[static_cast<size_t>(row)]) {
      bar.measured_w = activity.power_w(row);
    }
    chart.bars.push_back(std::move(bar));
  }
  return chart;
}

std::vector<double> AverageBreakdown(const BreakdownChart& chart) {
  std::vector<double> mean(chart.terms.size(), 0.0);
  if (chart.bars.empty()) return mean;
  for (const BreakdownBar& bar : chart.bars) {
    for (size_t t = 0; t < mean.size() && t < bar.term_w.size(); ++t) mean[t] += bar.term_w[t];
  }
  for (double& m : mean) m /= static_cast<double>(chart.bars.size());
  return mean;
}

void KeepLargestBars(BreakdownChart* chart, size_t max_bars) {
  if (chart->bars.size() <= max_bars || max_bars < 2) return;
  if (chart->average_term_w.empty()) chart->average_term_w = AverageBreakdown(*chart);
  auto total = [](const BreakdownBar& b) {
    double w = 0.0;
    for (double t : b.term_w) w += std::max(0.0, t);
    return w;
  };
  std::vector<size_t> order(chart->bars.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return total(chart->bars[a]) > total(chart->bars[b]);
  });
  std::vector<bool> kept(chart->bars.size(), false);
  for (size_t k = 0; k + 1 < max_bars; ++k) kept[order[k]] = true;
  std::vector<BreakdownBar> bars;
  BreakdownBar rest;
  rest.term_w.assign(chart->terms.size(), 0.0);
  double measured_sum = 0.0;
  size_t others = 0, measured = 0;
  for (size_t i = 0; i < chart->bars.size(); ++i) {
    const BreakdownBar& b = chart->bars[i];
    if (kept[i]) {
      bars.push_back(b);
      continue;
    }
    ++others;
    for (size_t t = 0; t < b.term_w.size(); ++t) rest.term_w[t] += b.term_w[t];
    if (std::isfinite(b.measured_w)) {
      measured_sum += b.measured_w;
      ++measured;
    }
  }
  for (double& w : rest.term_w) w /= static_cast<double>(others);
  rest.measured_w = measured == others ? measured_sum / static_cast<double>(others)
                                       : std::numeric_limits<double>::quiet_NaN();
  rest.label = fmt::format("the other {} (mean)", others);
  bars.push_back(rest);
  chart->bars = std::move(bars);
}

namespace {

// Throws std::invalid_argument unless every bar has one finite value per term; returns the
// average bar's terms (given, or averaged over the bars).
std::vector<double> CheckedBreakdownAverage(const BreakdownChart& chart) {
  if (chart.bars.empty() || chart.terms.empty()) {
    throw std::invalid_argument("breakdown figure: no bars or no terms to draw");
  }
  for (const BreakdownBar& bar : chart.bars) {
    if (bar.term_w.size() != chart.terms.size()) {
      throw std::invalid_argument(fmt::format("breakdown figure: bar '{}' has {} terms, not {}",
                                              bar.label, bar.term_w.size(), chart.terms.size()));
    }
    for (double w : bar.term_w) CheckFinite(w, "a term of bar '" + bar.label + "'");
  }
  std::vector<double> average =
      chart.average_term_w.empty() ? AverageBreakdown(chart) : chart.average_term_w;
  if (average.size() != chart.terms.size()) {
    throw std::invalid_argument(
        fmt::format("breakdown figure: the average bar has {} terms, not {}", average.size(),
                    chart.terms.size()));
  }
  for (double w : average) CheckFinite(w, "a term of the average bar");
  return average;
}

// The gnuplot data blocks: `table` one row per bar (a gap row and the average bar after them
// when drawn), `measured` one "index power" line per measured bar (and the average's).
void BreakdownData(const BreakdownChart& chart, const std::vector<double>& average,
                   std::string* table, std::string* measured) {
  double measured_sum = 0.0;
  bool all_measured = true;
  for (const BreakdownBar& bar : chart.bars) {
    all_measured = all_measured && std::isfinite(bar.measured_w);
    if (std::isfinite(bar.measured_w)) measured_sum += bar.measured_w;
  }

  // Rows: every bar, an empty row (the gap), the average.
  auto row = [&](const std::string& label, const std::vector<double>& terms) {
    *table += DataString(label);
    for (double w : terms) *table += " " + Num(std::max(0.0, w));
    *table += "\n";
  };
  for (const BreakdownBar& bar : chart.bars) row(bar.label, bar.term_w);
  if (chart.average_bar) {
    row("", std::vector<double>(chart.terms.size(), 0.0));
    row(chart.average_label, average);
  }
  for (size_t i = 0; i < chart.bars.size(); ++i) {
    if (std::isfinite(chart.bars[i].measured_w)) {
      *measured += fmt::format("{} {}\n", i, Num(chart.bars[i].measured_w));
    }
  }
  if (all_measured && chart.average_bar) {
    *measured += fmt::format("{} {}\n", chart.bars.size() + 1,
                             Num(measured_sum / static_cast<double>(chart.bars.size())));
  }
}

// The y axis's top: it covers every bar, every measured point and the board limit.
double BreakdownTopW(const BreakdownChart& chart, const std::vector<double>& average) {
  double top_w = 0.0;
  auto stack = [](const std::vector<double>& terms) {
    double w = 0.0;
    for (double t : terms) w += std::max(0.0, t);
    return w;
  };
  for (const BreakdownBar& bar : chart.bars) {
    top_w = std::max(top_w, stack(bar.term_w));
    if (std::isfinite(bar.measured_w)) top_w = std::max(top_w, bar.measured_w);
  }
  if (chart.average_bar) top_w = std::max(top_w, stack(average));
  if (chart.limit_w) top_w = std::max(top_w, *chart.limit_w);
  return top_w > 0.0 ? 1.06 * top_w : 1.0;
}

}  // namespace

void WriteBreakdownPlot(const BreakdownChart& chart, const std::string& title,
                        const std::string& png_path, const std::string& svg_path) {
  const std::vector<double> average = CheckedBreakdownAverage(chart);
  std::string table, measured;
  BreakdownData(chart, average, &table, &measured);
  const double y_high_w = BreakdownTopW(chart, average);
  const int bar_count = static_cast<int>(chart.bars.size()) + (chart.average_bar ? 2 : 0);
  // Many bars with long names: a larger canvas, so the bars stay wide and the names whole.
  const FigureSize size = bar_count > 20 ? BreakdownFigureSize(bar_count) : FigureSize();
  size_t longest_label = chart.average_bar ? chart.average_label.size() : 0;
  for (const BreakdownBar& bar : chart.bars)
    longest_label = std::max(longest_label, bar.label.size());
  // Long rotated names (the H100 capture's mixes run to 34 characters) in at most 10 pt, with
  // two lines more than the estimate (12 pt names of 34 characters were clipped at the bottom).
  const int tic_pt = TicFontPt(bar_count, size.width_px - 280, longest_label > 20 ? 10 : 12);
  // Horizontal labels take one line of tics and one of the axis label.
  const int bottom_chars = chart.horizontal_labels ? (chart.x_label.empty() ? 2 : 4)
                                                   : BottomMarginChars(longest_label, tic_pt) +
                                                         (longest_label > 20 ? 2 : 0);
  auto colour = [&](size_t t) -> std::string {
    if (static_cast<int>(t) < chart.grey_terms) {
      return kGreyColours[std::min<size_t>(t, sizeof(kGreyColours) / sizeof(kGreyColours[0]) - 1)];
    }
    const size_t c = t - static_cast<size_t>(chart.grey_terms);
    return kComponentColours[c % (sizeof(kComponentColours) / sizeof(kComponentColours[0]))];
  };

  auto body = [&](Gnuplot* gp) {
    *gp << "reset\n";
    *gp << "$bars << EOD\n" << table << "EOD\n";
    if (!measured.empty()) *gp << "$measured << EOD\n" << measured << "EOD\n";
    // Centred on the figure, not over the plot area the key narrows.
    // Wrapped to the canvas (a long title is never clipped), one more line of margin per line.
    const std::string wrapped = GnuplotTitle(title, 78);
    const int title_lines = 1 + static_cast<int>(std::count(wrapped.begin(), wrapped.end(), '\\'));
    *gp << "set label 1 " << wrapped << " at screen 0.5, screen 0.965 center\n";
    *gp << "set tmargin " << 2 + title_lines << "\n";
    *gp << "set ylabel 'Power (W)'\n";
    *gp << "set style data histograms\n";
    *gp << "set style histogram rowstacked\n";
    *gp << "set style fill solid 1.0 border rgb '#ffffff'\n";
    *gp << "set boxwidth 0.8\n";
    if (chart.horizontal_labels) {
      *gp << "set xtics scale 0 font '," << tic_pt << "'\n";
    } else {
      *gp << "set xtics rotate by 90 right scale 0 font '," << tic_pt << "'\n";
    }
    if (!chart.x_label.empty()) *gp << "set xlabel " << GnuplotString(chart.x_label) << "\n";
    if (!chart.note.empty()) {
      // Below the key, right of the plot, where the rotated workload names never reach; a line
      // per '\n' of the note.
      std::vector<std::string> lines;
      std::stringstream text(chart.note);
      for (std::string line; std::getline(text, line);) lines.push_back(line);
      for (size_t i = 0; i < lines.size(); ++i) {
        *gp << "set label " << 3 + i << " " << GnuplotString(lines[i])
            << " at screen 0.775, screen " << 0.2 - 0.035 * static_cast<double>(i)
            << " left font ',10' front\n";
      }
    }
    *gp << AxisStyle("y");
    *gp << "set yrange [0:" << Num(y_high_w) << "]\n";
    *gp << "set xrange [-0.7:" << bar_count - 1 << ".7]\n";
    if (chart.limit_w) {
      const double limit_w = *chart.limit_w;
      *gp << "set arrow 2 from graph 0, first " << Num(limit_w) << " to graph 1, first "
          << Num(limit_w) << " nohead dt 2 lw 1.5 lc rgb '#b2182b' front\n";
      *gp << "set label 2 " << GnuplotString(fmt::format("board limit {:g} W", limit_w))
          << " at graph 0.01, first " << Num(limit_w)
          << " offset 0, 0.6 left font ',10' tc rgb '#b2182b' front\n";
    }
    *gp << "set bmargin " << bottom_chars << "\n";
    *gp << "set key outside right top Left reverse invert noautotitle samplen 1.5 spacing 1.0 "
           "maxcols 1 font ',11'\n";
    *gp << "plot ";
    for (size_t t = 0; t < chart.terms.size(); ++t) {
      if (t > 0) *gp << ", \\\n  ";
      *gp << "$bars using " << t + 2 << (t == 0 ? ":xtic(1)" : "") << " lc rgb '" << colour(t)
          << "' title " << GnuplotString(chart.terms[t]);
    }
    if (!measured.empty()) {
      *gp << ", \\\n  $measured using 1:2 with points pt 13 ps 1.3 lc rgb '#000000' title "
             "'measured'";
    }
    *gp << "\n";
  };
  RenderFigure("breakdown figure", png_path, svg_path, body, size);
}

FigureSize BreakdownFigureSize(int bars) {
  FigureSize size;
  if (bars > 20) {
    size.width_px = std::min(1400, 300 + 24 * bars);
    size.height_px = 800;
  }
  return size;
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
