// The applications' energy figure (report/apps_report.h): per application, the energy of its run
// as predicted (the bar, with its 95% interval as a whisker where the table has one) and as
// measured over the same windows (a diamond).
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gnuplot-iostream.h>

#include "report/apps_report.h"
#include "report/gnuplot_figure.h"
#include "report/internal/report_figures_internal.h"

namespace wattcal {

using figures_internal::BottomMarginChars;
using figures_internal::Num;
using figures_internal::TicFontPt;

bool AppsEnergyDrawable(const ReportApps& apps) {
  for (const ReportApp& a : apps.rows) {
    if (std::isfinite(a.kernel_time_s) && std::isfinite(a.energy_j)) return true;
  }
  return false;
}

void WriteAppsEnergyPlot(const ReportApps& apps, const std::string& title,
                         const std::string& png_path, const std::string& svg_path) {
  // x, label, predicted, lo, hi (the predicted energy when no interval), measured ("NaN": none).
  std::string table;
  double top_j = 0.0;
  size_t longest = 0;
  bool any_measured = false, any_interval = false;
  for (size_t i = 0; i < apps.rows.size(); ++i) {
    const ReportApp& a = apps.rows[i];
    const double e = std::isfinite(a.kernel_time_s) ? a.energy_j : NAN;
    const bool interval = std::isfinite(a.energy_j_lo) && std::isfinite(a.energy_j_hi);
    any_interval = any_interval || interval;
    any_measured = any_measured || std::isfinite(a.measured_energy_j);
    // A double-quoted label (a datablock keeps single quotes as part of the text).
    std::string label = a.workload;
    std::replace(label.begin(), label.end(), '"', '\'');
    table +=
        fmt::format("{} \"{}\" {} {} {} {}\n", i, label, Num(e), Num(interval ? a.energy_j_lo : e),
                    Num(interval ? a.energy_j_hi : e), Num(a.measured_energy_j));
    for (double v : {e, a.energy_j_hi, a.measured_energy_j})
      if (std::isfinite(v)) top_j = std::max(top_j, v);
    longest = std::max(longest, a.workload.size());
  }
  const int bars = static_cast<int>(apps.rows.size());
  const FigureSize size;
  const int tic_pt = TicFontPt(bars, size.width_px - 200, longest > 20 ? 10 : 12);
  auto body = [&](gnuplotio::Gnuplot* gp) {
    *gp << "reset\n";
    *gp << "$apps << EOD\n" << table << "EOD\n";
    *gp << "set title " << GnuplotTitle(title, 70) << "\n";
    *gp << "set ylabel 'Energy of the run (J)'\n";
    *gp << "set style fill solid 1.0 border rgb '#ffffff'\n";
    *gp << "set boxwidth 0.7\n";
    *gp << "set xtics rotate by 90 right scale 0 font '," << tic_pt << "'\n";
    *gp << AxisStyle("y");
    *gp << "set yrange [0:" << Num(1.12 * std::max(top_j, 1e-9)) << "]\n";
    *gp << "set xrange [-0.7:" << bars - 1 << ".7]\n";
    *gp << "set bmargin " << BottomMarginChars(longest, tic_pt) << "\n";
    *gp << "set key top right noautotitle font ',11'\n";
    *gp << "plot $apps using 1:3:xtic(2) with boxes lc rgb '#56b4e9' title 'predicted'";
    if (any_interval) {
      *gp << ", \\\n  $apps using 1:3:4:5 with yerrorbars pt -1 lw 1.5 lc rgb '#000000' "
             "title '95% interval'";
    }
    if (any_measured) {
      *gp << ", \\\n  $apps using 1:6 with points pt 13 ps 1.4 lc rgb '#d55e00' title 'measured'";
    }
    *gp << "\n";
  };
  RenderFigure("applications' energy figure", png_path, svg_path, body, size);
}

bool WhatIfDrawable(const ReportWhatIf& what_if, const std::string& setting) {
  for (const ReportWhatIfRow& r : what_if.rows) {
    if (r.setting == setting && std::isfinite(r.energy_change_pct)) return true;
  }
  return false;
}

void WriteWhatIfPlot(const ReportWhatIf& what_if, const std::string& setting,
                     const std::string& title, const std::string& png_path,
                     const std::string& svg_path) {
  // One block per workload (in order of first appearance): setting value, energy change; the
  // recorded run is 0 at no setting, so each line starts where the settings start.
  std::vector<std::string> workloads;
  std::map<std::string, std::string> blocks;
  for (const ReportWhatIfRow& r : what_if.rows) {
    if (r.setting != setting || !std::isfinite(r.energy_change_pct)) continue;
    if (!blocks.count(r.workload)) workloads.push_back(r.workload);
    blocks[r.workload] += fmt::format("{} {} {}\n", Num(r.setting_value), Num(r.energy_change_pct),
                                      Num(r.time_change_pct));
  }
  const bool clock = setting == "clock";
  auto body = [&](gnuplotio::Gnuplot* gp) {
    *gp << "reset\n";
    for (size_t i = 0; i < workloads.size(); ++i)
      *gp << "$w" << i << " << EOD\n" << blocks[workloads[i]] << "EOD\n";
    *gp << "set title " << GnuplotTitle(title, 70) << "\n";
    *gp << "set xlabel " << GnuplotString(clock ? "Core clock (MHz)" : "Power limit (W)") << "\n";
    *gp << "set ylabel 'Energy change against the run as recorded (%)'\n";
    *gp << AxisStyle();
    *gp << "set xzeroaxis lt 1 lc rgb '#808080'\n";
    *gp << "set key outside right top font ',10' samplen 2\n";
    *gp << "plot ";
    for (size_t i = 0; i < workloads.size(); ++i) {
      if (i > 0) *gp << ", \\\n  ";
      const int k = static_cast<int>(i);
      *gp << "$w" << i << " using 1:2 with linespoints lw 2 pt " << 5 + k % 8 << " dt "
          << SeriesDashType(k) << " lc rgb '" << SeriesColour(k) << "' title "
          << GnuplotString(workloads[i]);
    }
    *gp << "\n";
  };
  RenderFigure("what-if figure", png_path, svg_path, body);
}

}  // namespace wattcal
