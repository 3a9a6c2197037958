#include "fleet/fleet_figures.h"

#include <fmt/format.h>
#include <gnuplot-iostream.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "report/gnuplot_figure.h"

namespace wattcal {

void WriteTermSpreadFigure(const std::vector<FleetTerm>& terms, const std::string& title,
                           const std::string& png_path, const std::string& svg_path) {
  std::string normal, outlying, tics;
  // The range the values span (not the intervals: a badly determined component's can be a
  // million W wide): intervals beyond it are cut at its edge.
  double limit_w = 5.0;
  for (const FleetTerm& term : terms)
    for (const TermEstimate& e : term.values)
      if (std::isfinite(e.w)) limit_w = std::max(limit_w, 1.5 * std::abs(e.w - term.median_w));
  for (size_t t = 0; t < terms.size(); ++t) {
    const FleetTerm& term = terms[t];
    std::vector<size_t> order;
    for (size_t i = 0; i < term.values.size(); ++i)
      if (std::isfinite(term.values[i].w)) order.push_back(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return term.values[a].w < term.values[b].w; });
    const double n = static_cast<double>(order.size());
    for (size_t k = 0; k < order.size(); ++k) {
      const TermEstimate& e = term.values[order[k]];
      const double x = static_cast<double>(t) + (n > 1 ? -0.25 + 0.5 * k / (n - 1) : 0.0);
      const double lo = std::isfinite(e.lo_w) ? e.lo_w : e.w;
      const double hi = std::isfinite(e.hi_w) ? e.hi_w : e.w;
      (term.outlier[order[k]] ? outlying : normal) +=
          fmt::format("{:.6g} {:.6g} {:.6g} {:.6g}\n", x, e.w - term.median_w, lo - term.median_w,
                      hi - term.median_w);
    }
    tics += fmt::format("{}{} {}", t ? ", " : "", GnuplotString(term.name), t);
  }
  const int width = std::max(800, static_cast<int>(60 * terms.size()));
  // Past a few dozen GPUs a term's error bars merge into one block: the intervals are then drawn
  // as thin light lines, the estimates as small dark dots over them, so a fleet of 1,000 shows
  // each term's sorted curve inside its interval band, and its outliers on top.
  size_t most = 0;
  for (const FleetTerm& term : terms) most = std::max(most, term.values.size());
  const bool dense = most > 40;
  const std::string colour = SeriesColour(0), outlier_colour = SeriesColour(1);
  const char* band = "#a6cee3";  // a light shade of the series colour, under its dark dots
  auto body = [&](gnuplotio::Gnuplot* gp) {
    *gp << "reset\n";
    if (!normal.empty()) *gp << "$normal << EOD\n" << normal << "EOD\n";
    if (!outlying.empty()) *gp << "$outlying << EOD\n" << outlying << "EOD\n";
    *gp << "set title " << GnuplotTitle(title, 90) << "\n";
    *gp << "set ylabel 'W off the fleet median of the term'\n";
    *gp << fmt::format("set yrange [{:.6g}:{:.6g}]\n", -limit_w, limit_w);
    *gp << "set label 1 'intervals beyond the range are cut at its edge' at graph 0.99, graph 0.04 "
           "right font ',10' tc rgb '#606060' front\n";
    *gp << "set xtics (" << tics << ") rotate by 45 right font ',11'\n";
    *gp << fmt::format("set xrange [-0.6:{}]\n", terms.size() - 0.4);
    *gp << AxisStyle("y") << "set xzeroaxis lt -1 lw 1\n";
    *gp << "set key top left Left reverse nobox samplen 1.5 font ',11'\n";
    *gp << "set bmargin 7\n";
    *gp << "plot NaN notitle";
    if (dense) {
      if (!normal.empty()) {
        *gp << ", $normal using 1:3:(0):($4-$3) with vectors nohead lw 1 lc rgb '" << band
            << "' title '95% interval', $normal using 1:2 with points pt 7 ps 0.25 lc rgb '#08306b'"
            << " title 'GPU'";
      }
      if (!outlying.empty()) {
        *gp << ", $outlying using 1:3:(0):($4-$3) with vectors nohead lw 1 lc rgb '"
            << outlier_colour << "' notitle, $outlying using 1:2 with points pt 5 ps 0.6 lc rgb '"
            << outlier_colour << "' title 'outlier'";
      }
    } else {
      if (!normal.empty()) {
        *gp << ", $normal using 1:2:3:4 with yerrorbars pt 7 ps 0.5 lc rgb '" << colour
            << "' title 'GPU (95% interval)'";
      }
      if (!outlying.empty()) {
        *gp << ", $outlying using 1:2:3:4 with yerrorbars pt 5 ps 0.8 lc rgb '" << outlier_colour
            << "' title 'outlier'";
      }
    }
    *gp << "\n";
  };
  RenderFigure("fleet term spread", png_path, svg_path, body, {width, 600});
}

void WriteCrossPredictionFigure(const Eigen::MatrixXd& mape_pct, const std::string& title,
                                const std::string& png_path, const std::string& svg_path) {
  std::string data;
  for (int a = 0; a < mape_pct.rows(); ++a) {
    for (int b = 0; b < mape_pct.cols(); ++b) {
      data += std::isfinite(mape_pct(a, b)) ? fmt::format("{} {} {:.4g}\n", b, a, mape_pct(a, b))
                                            : fmt::format("{} {} NaN\n", b, a);
    }
    data += "\n";
  }
  const int n = static_cast<int>(mape_pct.rows());
  auto body = [&](gnuplotio::Gnuplot* gp) {
    *gp << "reset\n$m << EOD\n" << data << "EOD\n";
    *gp << "set title " << GnuplotTitle(title, 60) << "\n";
    *gp << "set xlabel 'GPU predicted (rank in UUID order)'\n";
    *gp << "set ylabel 'GPU whose model predicts'\n";
    *gp << fmt::format("set xrange [-0.5:{}]\nset yrange [{}:-0.5]\n", n - 0.5, n - 0.5);
    *gp << "set size ratio -1\nset cblabel 'MAPE (%)'\n";
    *gp << "set palette defined (0 '#f7fbff', 1 '#6baed6', 2 '#08306b')\n";
    if (n > 20)
      *gp << "set xtics out nomirror\nset ytics out nomirror\n";
    else
      *gp << "set xtics 1 out nomirror\nset ytics 1 out nomirror\n";
    *gp << "plot $m using 1:2:3 with image notitle\n";
  };
  RenderFigure("fleet cross-prediction", png_path, svg_path, body, {760, 700});
}

void WritePooledFigure(const std::vector<double>& own_pct, const std::vector<double>& pooled_pct,
                       const std::string& title, const std::string& png_path,
                       const std::string& svg_path) {
  std::string data;
  double high = 1.0;
  for (size_t i = 0; i < own_pct.size() && i < pooled_pct.size(); ++i) {
    if (!std::isfinite(own_pct[i]) || !std::isfinite(pooled_pct[i])) continue;
    data += fmt::format("{:.6g} {:.6g}\n", own_pct[i], pooled_pct[i]);
    high = std::max({high, own_pct[i], pooled_pct[i]});
  }
  high *= 1.1;
  auto body = [&](gnuplotio::Gnuplot* gp) {
    *gp << "reset\n";
    if (!data.empty()) *gp << "$p << EOD\n" << data << "EOD\n";
    *gp << "set title " << GnuplotTitle(title, 60) << "\n";
    *gp << "set xlabel 'Own model, 5-fold CV MAPE (%)'\n";
    *gp << "set ylabel 'Pooled model of the GPU model, CV MAPE (%)'\n";
    *gp << fmt::format("set xrange [0:{:.6g}]\nset yrange [0:{:.6g}]\n", high, high);
    *gp << "set size ratio -1\n" << AxisStyle();
    *gp << "set key top left Left reverse nobox samplen 1.5 font ',11'\n";
    *gp << "plot x with lines lw 1.5 lc rgb '#303030' title 'y = x'";
    if (!data.empty()) {
      *gp << ", $p using 1:2 with points pt 7 ps 0.8 lc rgb '" << SeriesColour(0)
          << "' title 'GPU'";
    }
    *gp << "\n";
  };
  RenderFigure("fleet pooled against own", png_path, svg_path, body, {700, 700});
}

}  // namespace wattcal
