// The relative power of two GPUs over many workloads as a scatter (report/report_figures.h):
// past a few dozen workloads, clustered bars (AccelWattch Fig. 12's layout) leave a few pixels
// per pair. Here each workload is a point, measured change against estimated change, with the
// y = x line, the quadrants where the estimate points the wrong way shaded, and the largest
// disagreements named.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gnuplot-iostream.h>

#include "report/gnuplot_figure.h"
#include "report/report_figures.h"

namespace wattcal {

namespace {

constexpr size_t kNamedOutliers = 6;

}  // namespace

bool SameDirection(const RelativePowerBar& bar) {
  if (bar.same_direction >= 0) return bar.same_direction == 1;
  return (bar.estimated_pct > 0.0) - (bar.estimated_pct < 0.0) ==
         (bar.measured_pct > 0.0) - (bar.measured_pct < 0.0);
}

FigureSize RelativePowerScatterSize() { return {760, 760}; }

void WriteRelativePowerScatter(const RelativePowerChart& chart, const std::string& title,
                               const std::string& png_path, const std::string& svg_path) {
  const std::vector<RelativePowerBar>& bars = chart.bars;
  if (bars.empty()) throw std::invalid_argument("relative-power figure: no workloads");
  std::string same, opposite;
  double low = 0.0, high = 0.0, estimated_sum = 0.0, measured_sum = 0.0;
  int same_count = 0;
  for (const RelativePowerBar& bar : bars) {
    if (!std::isfinite(bar.estimated_pct) || !std::isfinite(bar.measured_pct)) {
      throw std::invalid_argument(
          fmt::format("relative-power figure: workload '{}' is not finite", bar.workload));
    }
    const bool s = SameDirection(bar);
    same_count += s ? 1 : 0;
    (s ? same : opposite) += fmt::format("{:.10g} {:.10g}\n", bar.measured_pct, bar.estimated_pct);
    low = std::min({low, bar.measured_pct, bar.estimated_pct});
    high = std::max({high, bar.measured_pct, bar.estimated_pct});
    estimated_sum += bar.estimated_pct;
    measured_sum += bar.measured_pct;
  }
  const double pad = std::max(1.0, 0.06 * (high - low));
  low -= pad;
  high += pad;
  // The workloads whose estimate is furthest from the measurement.
  std::vector<const RelativePowerBar*> worst;
  for (const RelativePowerBar& bar : bars) worst.push_back(&bar);
  std::stable_sort(worst.begin(), worst.end(),
                   [](const RelativePowerBar* a, const RelativePowerBar* b) {
                     return std::abs(a->estimated_pct - a->measured_pct) >
                            std::abs(b->estimated_pct - b->measured_pct);
                   });
  worst.resize(std::min(worst.size(), kNamedOutliers));
  const double n = static_cast<double>(bars.size());
  const std::string summary =
      fmt::format("{} workloads: averages {:+.1f}% estimated, {:+.1f}% measured", bars.size(),
                  estimated_sum / n, measured_sum / n);
  const std::string direction = fmt::format("the same direction in {} of {} ({:.0f}%)", same_count,
                                            bars.size(), 100.0 * same_count / n);
  auto body = [&](gnuplotio::Gnuplot* gp) {
    *gp << "reset\n";
    if (!same.empty()) *gp << "$same << EOD\n" << same << "EOD\n";
    if (!opposite.empty()) *gp << "$opposite << EOD\n" << opposite << "EOD\n";
    *gp << "set title " << GnuplotTitle(title, 60) << "\n";
    *gp << "set xlabel "
        << GnuplotString(
               fmt::format("Measured power of {} relative to {} (%)", chart.gpu_b, chart.gpu_a))
        << "\n";
    *gp << "set ylabel 'Estimated relative power (%)'\n";
    *gp << "set size ratio -1\n";
    *gp << fmt::format("set xrange [{:.10g}:{:.10g}]\nset yrange [{:.10g}:{:.10g}]\n", low, high,
                       low, high);
    *gp << TicsStyle() << "set grid lc rgb '#e0e0e0' lw 0.5\n";
    // The quadrants where the estimate points the other way than the measurement.
    *gp << fmt::format(
        "set object 1 rect from 0, {:.10g} to {:.10g}, 0 fc rgb '#f6e3e3' fs solid 1.0 noborder "
        "back\n",
        low, high);
    *gp << fmt::format(
        "set object 2 rect from {:.10g}, 0 to 0, {:.10g} fc rgb '#f6e3e3' fs solid 1.0 noborder "
        "back\n",
        low, high);
    *gp << "set xzeroaxis lt -1 lw 1\nset yzeroaxis lt -1 lw 1\n";
    for (size_t k = 0; k < worst.size(); ++k) {
      *gp << "set label " << k + 10 << " " << GnuplotString(worst[k]->workload) << " at "
          << fmt::format("{:.10g}, {:.10g}", worst[k]->measured_pct, worst[k]->estimated_pct)
          << " offset 0.6, 0.4 font ',9' tc rgb '#404040' front\n";
    }
    // In the top-left quadrant (the estimate up, the measurement down), rarely populated.
    *gp << "set label 1 " << GnuplotString(summary)
        << " at graph 0.02, graph 0.96 left font ',10' front\n";
    *gp << "set label 2 " << GnuplotString(direction)
        << " at graph 0.02, graph 0.92 left font ',10' front\n";
    *gp << "set key outside below center horizontal Left reverse nobox samplen 1.5 font ',12'\n";
    *gp << "set bmargin 6\n";
    *gp << "plot x with lines lw 1.5 lc rgb '#303030' title 'y = x'";
    if (!same.empty()) {
      *gp << ", \\\n  $same using 1:2 with points pt 7 ps 0.8 lc rgb '" << SeriesColour(0)
          << "' title 'same direction'";
    }
    if (!opposite.empty()) {
      *gp << ", \\\n  $opposite using 1:2 with points pt 5 ps 0.9 lc rgb '" << SeriesColour(1)
          << "' title 'opposite direction'";
    }
    *gp << "\n";
  };
  RenderFigure("relative-power scatter", png_path, svg_path, body, RelativePowerScatterSize());
}

}  // namespace wattcal
