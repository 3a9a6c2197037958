#include "report/perf_plots.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <gnuplot-iostream.h>

#include "report/gnuplot_figure.h"

namespace wattcal {
namespace {

// Smallest MAPE drawn on the logarithmic axis (an exact model would otherwise vanish).
constexpr double kMapeFloorPct = 0.01;

void CommonStyle(Gnuplot* gp) { *gp << AxisStyle(); }

}  // namespace

void WritePerfMapePlot(const PerfValidationReport& v, const std::string& title,
                       const std::string& png_path, const std::string& svg_path) {
  std::vector<std::vector<std::pair<double, double>>> curves;
  std::vector<std::string> titles;
  for (const ModelValidation& m : v.models) {
    if (m.per_target.empty()) continue;
    std::vector<std::pair<double, double>> curve;
    for (const auto& [f, s] : m.per_target)
      curve.emplace_back(f, std::max(kMapeFloorPct, s.mape_pct));
    curves.push_back(std::move(curve));
    titles.push_back(fmt::format("{} ({:.2f}%)", m.model, m.overall.mape_pct));
  }
  if (curves.empty()) throw std::invalid_argument("MAPE plot: no model has a validated point");
  auto body = [&](Gnuplot* gp) {
    *gp << "set title " << GnuplotString(title) << "\n";
    *gp << "set xlabel 'Target core frequency (MHz)'\n";
    *gp << "set ylabel 'Run-time MAPE (%, log scale)'\n";
    *gp << "set logscale y\n";
    *gp << "set key outside right top Left reverse box samplen 2 spacing 1.2\n";
    CommonStyle(gp);
    *gp << "plot ";
    for (size_t s = 0; s < curves.size(); ++s) {
      if (s > 0) *gp << ", \\\n  ";
      const int i = static_cast<int>(s);
      *gp << "'-' using 1:2 with linespoints lw 2 pt " << 5 + i << " lc rgb '" << SeriesColour(i)
          << "' dt " << SeriesDashType(i) << " title " << GnuplotString(titles[s]);
    }
    *gp << "\n";
    for (const auto& c : curves) gp->send1d(c);
  };
  RenderFigure("run-time MAPE figure", png_path, svg_path, body);
}

void WritePerfTimesPlot(const PerfValidationReport& v, const std::string& kernel,
                        double base_time_s, const std::string& png_path,
                        const std::string& svg_path) {
  if (!(base_time_s > 0.0)) {
    throw std::invalid_argument(fmt::format("times plot: base time {} must be > 0", base_time_s));
  }
  std::vector<std::string> models;
  std::vector<std::vector<std::pair<double, double>>> curves;
  std::vector<std::pair<double, double>> actual;
  for (const TimeErrorPoint& p : v.points) {
    if (p.kernel != kernel) continue;
    auto it = std::find(models.begin(), models.end(), p.model);
    if (it == models.end()) {
      models.push_back(p.model);
      curves.emplace_back();
      it = models.end() - 1;
    }
    curves[static_cast<size_t>(it - models.begin())].emplace_back(p.target_mhz,
                                                                  p.predicted_time_s / base_time_s);
    if (it == models.begin()) actual.emplace_back(p.target_mhz, p.actual_time_s / base_time_s);
  }
  if (models.empty())
    throw std::invalid_argument("times plot: no points of kernel '" + kernel + "'");
  for (auto& c : curves) std::sort(c.begin(), c.end());
  std::sort(actual.begin(), actual.end());
  auto body = [&](Gnuplot* gp) {
    *gp << "set title " << GnuplotString("Run time of " + kernel + " against core frequency")
        << "\n";
    *gp << "set xlabel 'Core frequency (MHz)'\n";
    *gp << "set ylabel 'Run time / run time at the base frequency'\n";
    *gp << "set key outside right top Left reverse box samplen 2 spacing 1.2\n";
    CommonStyle(gp);
    *gp << "plot '-' using 1:2 with points pt 7 ps 1.6 lc rgb '#000000' title 'actual'";
    for (size_t s = 0; s < curves.size(); ++s) {
      const int i = static_cast<int>(s);
      *gp << ", \\\n  '-' using 1:2 with lines lw 2 lc rgb '" << SeriesColour(i) << "' dt "
          << SeriesDashType(i) << " title " << GnuplotString(models[s]);
    }
    *gp << "\n";
    gp->send1d(actual);
    for (const auto& c : curves) gp->send1d(c);
  };
  RenderFigure("run-time figure of " + kernel, png_path, svg_path, body);
}

void WriteDvfsPlot(const DvfsChoice& c, DvfsObjective objective, const std::string& png_path,
                   const std::string& svg_path) {
  if (c.predicted.empty() || c.chosen < 0) {
    throw std::invalid_argument("DVFS plot: kernel '" + c.kernel + "' has no candidate pairs");
  }
  std::vector<std::pair<double, double>> energy, time, chosen, true_energy, true_time, optimum;
  for (const DvfsPoint& p : c.predicted) {
    energy.emplace_back(p.f_core_mhz, p.energy_j);
    time.emplace_back(p.f_core_mhz, p.time_s);
  }
  chosen.emplace_back(c.choice().f_core_mhz, c.choice().energy_j);
  if (c.has_truth) {
    for (const DvfsPoint& p : c.truth) {
      true_energy.emplace_back(p.f_core_mhz, p.energy_j);
      true_time.emplace_back(p.f_core_mhz, p.time_s);
    }
    const DvfsPoint& o = c.truth[static_cast<size_t>(c.optimum)];
    optimum.emplace_back(o.f_core_mhz, o.energy_j);
  }
  auto body = [&](Gnuplot* gp) {
    *gp << "set title "
        << GnuplotString(fmt::format("{}: energy and time by core frequency ({}, "
                                     "minimising {})",
                                     c.kernel, c.perf_model, DvfsObjectiveName(objective)))
        << "\n";
    *gp << "set xlabel 'Core frequency (MHz)'\n";
    *gp << "set ylabel 'Energy (J)'\n";
    *gp << "set y2label 'Run time (s)'\n";
    *gp << "set ytics nomirror\n";
    *gp << "set y2tics\n";
    *gp << "set format y '%g'\n";
    *gp << "set format y2 '%g'\n";
    *gp << "set key outside below center Left reverse nobox maxcols 2 samplen 3 spacing 1.1\n";
    *gp << "set bmargin 8\n";
    CommonStyle(gp);
    *gp << "plot '-' using 1:2 axes x1y1 with linespoints lw 2 pt 7 lc rgb '" << SeriesColour(0)
        << "' title 'energy (predicted)', \\\n"
        << "  '-' using 1:2 axes x1y2 with linespoints lw 2 pt 5 lc rgb '" << SeriesColour(1)
        << "' title 'time (predicted)', \\\n"
        << "  '-' using 1:2 axes x1y1 with points pt 6 ps 3 lw 2 lc rgb '#000000' title "
        << GnuplotString(fmt::format("chosen: {:g} MHz", c.choice().f_core_mhz));
    if (c.has_truth) {
      *gp << ", \\\n  '-' using 1:2 axes x1y1 with linespoints lw 1.5 dt 2 pt 7 ps 0.6 lc rgb '"
          << SeriesColour(0) << "' title 'energy (true)', \\\n"
          << "  '-' using 1:2 axes x1y2 with linespoints lw 1.5 dt 2 pt 5 ps 0.6 lc rgb '"
          << SeriesColour(1) << "' title 'time (true)', \\\n"
          << "  '-' using 1:2 axes x1y1 with points pt 3 ps 3 lw 2 lc rgb '" << SeriesColour(2)
          << "' title "
          << GnuplotString(fmt::format("true optimum: {:g} MHz",
                                       c.truth[static_cast<size_t>(c.optimum)].f_core_mhz));
    }
    *gp << "\n";
    gp->send1d(energy);
    gp->send1d(time);
    gp->send1d(chosen);
    if (c.has_truth) {
      gp->send1d(true_energy);
      gp->send1d(true_time);
      gp->send1d(optimum);
    }
  };
  RenderFigure("DVFS figure of " + c.kernel, png_path, svg_path, body);
}

}  // namespace wattcal
