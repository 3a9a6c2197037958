// The breakdown figure (report/report_figures.h): the model's per-component power of each
// benchmark, averaged over the V-F pairs, as stacked bars.
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

}  // namespace wattcal
