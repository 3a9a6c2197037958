#include "report/clocks_report.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <gnuplot-iostream.h>

#include "report/clocks_document.h"
#include "report/document.h"
#include "report/gnuplot_figure.h"

namespace wattcal {
namespace {

using Series = std::vector<std::pair<double, double>>;

// A double-quoted gnuplot string of two lines (quotes and backslashes of the text escaped).
std::string TwoLines(const std::string& first, const std::string& second) {
  auto escape = [](const std::string& t) {
    std::string out;
    for (char c : t) {
      if (c == '"' || c == '\\') out += '\\';
      out += c == '\n' ? ' ' : c;
    }
    return out;
  };
  return "\"" + escape(first) + "\\n" + escape(second) + "\"";
}

void Style(Gnuplot* gp) { *gp << AxisStyle(); }

// Up to `n` of `sorted` (best first): the best, the worst and evenly spaced ones between.
std::vector<std::string> Spread(const std::vector<ClockWorkloadError>& sorted, size_t n) {
  std::vector<std::string> out;
  if (sorted.size() <= n) {
    for (const ClockWorkloadError& e : sorted) out.push_back(e.workload);
    return out;
  }
  std::set<size_t> picked;
  for (size_t i = 0; i < n; ++i) picked.insert((i * (sorted.size() - 1) + (n - 1) / 2) / (n - 1));
  for (size_t i : picked) out.push_back(sorted[i].workload);
  return out;
}

std::map<std::string, std::string> ShortNameMap(const ClockRunTable& table) {
  const std::vector<std::string> names = table.Workloads();
  const std::vector<std::string> shorts = ShortWorkloadNames(names);
  std::map<std::string, std::string> m;
  for (size_t i = 0; i < names.size(); ++i) m[names[i]] = shorts[i];
  return m;
}

void DrawVfCurve(const ClocksReportInput& in, const std::string& png, const std::string& svg) {
  const VfModel& m = in.fit->model;
  Series fitted, measured;
  for (size_t i = 0; i < m.clocks_mhz.size(); ++i) fitted.emplace_back(m.clocks_mhz[i], m.v_rel[i]);
  if (in.measured_voltages != nullptr && !in.measured_voltages->empty()) {
    // Relative to the reading nearest the reference clock.
    const VoltageReading* ref = &in.measured_voltages->front();
    for (const VoltageReading& r : *in.measured_voltages) {
      if (std::abs(r.f_core_mhz - m.reference_mhz) < std::abs(ref->f_core_mhz - m.reference_mhz))
        ref = &r;
    }
    for (const VoltageReading& r : *in.measured_voltages)
      measured.emplace_back(r.f_core_mhz, r.voltage_mv / ref->voltage_mv);
  }
  auto body = [&](Gnuplot* gp) {
    *gp << "set title " << GnuplotTitle(in.title + ": the core voltage estimated from power alone")
        << "\n";
    *gp << "set xlabel 'Core clock (MHz)'\nset ylabel "
        << GnuplotString(fmt::format("Voltage relative to {:g} MHz", m.reference_mhz)) << "\n";
    *gp << "set key inside left top Left reverse box samplen 2\n";
    Style(gp);
    *gp << "plot ";
    for (size_t k = 0; k < in.cv->fold_models.size(); ++k) {
      *gp << "'-' using 1:2 with lines lw 1 lc rgb '#bbbbbb' "
          << (k == 0 ? "title 'each CV fold'" : "notitle") << ", \\\n  ";
    }
    *gp << "'-' using 1:2 with linespoints lw 2.5 pt 7 ps 1.2 lc rgb '" << SeriesColour(0)
        << "' title 'estimated (all workloads)'";
    if (!measured.empty()) {
      *gp << ", \\\n  '-' using 1:2 with points pt 5 ps 1.4 lc rgb '" << SeriesColour(1)
          << "' title " << GnuplotString("measured (" + in.measured_voltage_path + ")");
    }
    *gp << "\n";
    for (const VfModel& f : in.cv->fold_models) {
      Series s;
      for (size_t i = 0; i < f.clocks_mhz.size(); ++i) s.emplace_back(f.clocks_mhz[i], f.v_rel[i]);
      gp->send1d(s);
    }
    gp->send1d(fitted);
    if (!measured.empty()) gp->send1d(measured);
  };
  RenderFigure("voltage-frequency figure", png, svg, body);
}

// A 3 x 3 grid, one panel per workload, with the shared axis labels.
void Panels(Gnuplot* gp, const std::string& title, size_t n) {
  const size_t cols = n <= 4 ? 2 : 3;
  const size_t rows = (n + cols - 1) / cols;
  *gp << "set multiplot layout " << rows << "," << cols << " title " << GnuplotTitle(title, 90)
      << "\n";
  *gp << "set key inside left top Left reverse nobox samplen 1.5 font ',10'\nset tics font ',10'\n";
  Style(gp);
}

void DrawPowerPanels(const ClocksReportInput& in, const std::vector<std::string>& shown,
                     const std::string& png, const std::string& svg) {
  const std::map<std::string, std::string> names = ShortNameMap(*in.table);
  const std::vector<double> clocks = in.table->RequestedClocks();
  const double pad = 0.03 * (clocks.back() - clocks.front());
  const double x_lo = clocks.front() - pad, x_hi = clocks.back() + pad;
  const std::optional<double> limit = in.fit->model.power_limit_w;
  auto body = [&](Gnuplot* gp) {
    Panels(gp,
           fmt::format("{}: power across clocks, predicted from {:g} MHz alone (CV by workload)",
                       in.title, in.cv->anchor_mhz),
           shown.size());
    for (const std::string& w : shown) {
      Series measured, predicted, proportional, anchor;
      for (const ClockRun& r : in.table->runs) {
        if (r.workload != w) continue;
        measured.emplace_back(r.f_core_mhz, r.power_w);
        if (std::abs(r.f_requested_mhz - in.cv->anchor_mhz) < 1e-6)
          anchor.emplace_back(r.f_core_mhz, r.power_w);
      }
      for (const ClockCvPoint& p : in.cv->points) {
        if (p.workload != w) continue;
        predicted.emplace_back(p.f_core_mhz, p.predicted_w);
        proportional.emplace_back(p.f_core_mhz, p.proportional_w);
      }
      predicted.insert(predicted.end(), anchor.begin(), anchor.end());
      proportional.insert(proportional.end(), anchor.begin(), anchor.end());
      std::sort(predicted.begin(), predicted.end());
      std::sort(proportional.begin(), proportional.end());
      *gp << "set title " << GnuplotString(names.at(w)) << " font ',11'\n";
      *gp << "set xlabel 'MHz' font ',10'\nset ylabel 'W' font ',10'\nset xtics 200\n";
      *gp << "set xrange [" << x_lo << ":" << x_hi << "]\n";
      *gp << "unset arrow\nset yrange [*:*]\n";
      // The limit is drawn where the panel's power comes near it, with the range to hold it.
      double top = 0.0;
      for (const auto& series : {measured, predicted, proportional}) {
        for (const auto& point : series) top = std::max(top, point.second);
      }
      if (limit && top >= 0.85 * *limit) {
        *gp << "set yrange [*:" << 1.04 * std::max(top, *limit) << "]\n";
        *gp << "set arrow from graph 0, first " << *limit << " to graph 1, first " << *limit
            << " nohead dt 3 lw 1.5 lc rgb '#cc0000'\n";
      }
      *gp << "plot '-' using 1:2 with points pt 7 ps 0.8 lc rgb '#000000' title 'measured', "
          << "'-' using 1:2 with lines lw 2 lc rgb '" << SeriesColour(0) << "' title 'model', "
          << "'-' using 1:2 with lines lw 1.5 dt 2 lc rgb '" << SeriesColour(1)
          << "' title 'P ~ f', "
          << "'-' using 1:2 with points pt 6 ps 2 lw 2 lc rgb '" << SeriesColour(2)
          << "' title 'anchor'\n";
      gp->send1d(measured);
      gp->send1d(predicted);
      gp->send1d(proportional);
      gp->send1d(anchor);
    }
    *gp << "unset multiplot\n";
  };
  RenderFigure("power-across-clocks figure", png, svg, body, FigureSize{1200, 1000});
}

void DrawErrorByClock(const ClocksReportInput& in, const std::string& png, const std::string& svg) {
  std::map<double, std::array<double, 3>> by;  // requested clock -> model, P ~ f, n
  for (const ClockCvPoint& p : in.cv->points) {
    auto& a = by[p.f_requested_mhz];
    a[0] += 100.0 * std::abs(p.predicted_w - p.measured_w) / p.measured_w;
    a[1] += 100.0 * std::abs(p.proportional_w - p.measured_w) / p.measured_w;
    a[2] += 1.0;
  }
  Series model, proportional;
  for (const auto& [f, a] : by) {
    model.emplace_back(f, a[0] / a[2]);
    proportional.emplace_back(f, a[1] / a[2]);
  }
  auto body = [&](Gnuplot* gp) {
    *gp << "set title "
        << GnuplotTitle(fmt::format("{}: CV error at each clock, predicted from {:g} MHz", in.title,
                                    in.cv->anchor_mhz))
        << "\n";
    *gp << "set xlabel 'Requested core clock (MHz)'\nset ylabel 'Mean absolute error (%)'\nset "
           "yrange [0:*]\n";
    *gp << "set key inside center top Left reverse box samplen 2\n";
    Style(gp);
    *gp << "set arrow from " << in.cv->anchor_mhz << ", graph 0 to " << in.cv->anchor_mhz
        << ", graph 1 nohead dt 3 lc rgb '#666666'\n";
    *gp << "plot '-' using 1:2 with linespoints lw 2 pt 7 lc rgb '" << SeriesColour(0) << "' title "
        << GnuplotString(fmt::format("model ({:.2f}% overall)", in.cv->mape_pct))
        << ", \\\n  '-' using 1:2 with linespoints lw 2 dt 2 pt 5 lc rgb '" << SeriesColour(1)
        << "' title "
        << GnuplotString(fmt::format("P ~ f ({:.2f}% overall)", in.cv->proportional_mape_pct))
        << "\n";
    gp->send1d(model);
    gp->send1d(proportional);
  };
  RenderFigure("CV error by clock figure", png, svg, body);
}

void DrawEnergyErrorByClock(const ClocksReportInput& in, const std::string& png,
                            const std::string& svg) {
  const ClockCvResult& cv = *in.cv;
  Series timed, anchor_only, power;
  for (const EnergyAtClock& e : cv.energy_by_clock) {
    timed.emplace_back(e.f_requested_mhz, e.energy_mape_pct);
    anchor_only.emplace_back(e.f_requested_mhz, e.energy_anchor_time_mape_pct);
  }
  std::map<double, std::pair<double, int>> by;  // requested clock -> power error sum, n
  for (const ClockCvPoint& p : cv.points) {
    by[p.f_requested_mhz].first += 100.0 * std::abs(p.predicted_w - p.measured_w) / p.measured_w;
    ++by[p.f_requested_mhz].second;
  }
  for (const auto& [f, a] : by) power.emplace_back(f, a.first / a.second);
  double top = 1.0;  // room above the lines for the key
  for (const Series* series : {&timed, &anchor_only, &power}) {
    for (const auto& point : *series) top = std::max(top, point.second);
  }
  auto body = [&](Gnuplot* gp) {
    *gp << "set title "
        << GnuplotTitle(fmt::format("{}: energy per run at each clock, predicted from {:g} MHz",
                                    in.title, cv.anchor_mhz))
        << "\n";
    *gp << "set xlabel 'Requested core clock (MHz)'\nset ylabel 'Mean absolute error (%)'\n";
    *gp << "set yrange [0:" << 1.45 * top << "]\n";
    *gp << "set key inside center top Left reverse box samplen 2\n";
    Style(gp);
    *gp << "set arrow from " << cv.anchor_mhz << ", graph 0 to " << cv.anchor_mhz
        << ", graph 1 nohead dt 3 lc rgb '#666666'\n";
    *gp << "plot '-' using 1:2 with linespoints lw 2.5 pt 7 lc rgb '" << SeriesColour(0)
        << "' title "
        << GnuplotString(fmt::format("energy, run time through the two timed clocks ({:.2f}%)",
                                     cv.energy_overall.energy_mape_pct))
        << ", \\\n  '-' using 1:2 with linespoints lw 2 dt 2 pt 5 lc rgb '" << SeriesColour(1)
        << "' title "
        << GnuplotString(fmt::format("energy, run time from the anchor alone ({:.2f}%)",
                                     cv.energy_overall.energy_anchor_time_mape_pct))
        << ", \\\n  '-' using 1:2 with linespoints lw 1.5 dt 3 pt 6 lc rgb '" << SeriesColour(2)
        << "' title " << GnuplotString(fmt::format("power alone ({:.2f}%)", cv.mape_pct)) << "\n";
    gp->send1d(timed);
    gp->send1d(anchor_only);
    gp->send1d(power);
  };
  RenderFigure("energy error by clock figure", png, svg, body);
}

void DrawEnergyPanels(const ClocksReportInput& in, const std::vector<std::string>& shown,
                      const std::string& png, const std::string& svg) {
  const std::map<std::string, std::string> names = ShortNameMap(*in.table);
  auto body = [&](Gnuplot* gp) {
    Panels(gp, in.title + ": energy per run across clocks; chosen (model) and true optimum",
           shown.size());
    for (const std::string& w : shown) {
      const auto it = std::find_if(in.cv->choices.begin(), in.cv->choices.end(),
                                   [&](const ClockChoice& c) { return c.workload == w; });
      if (it == in.cv->choices.end()) continue;
      Series measured, predicted, anchor_only, chosen, optimum;
      for (const ClockCandidate& k : it->candidates) {
        measured.emplace_back(k.f_requested_mhz, k.measured_energy_j);
        predicted.emplace_back(k.f_requested_mhz, k.predicted_energy_j);
        anchor_only.emplace_back(k.f_requested_mhz, k.predicted_energy_anchor_j);
        if (k.f_requested_mhz == it->chosen_mhz)
          chosen.emplace_back(k.f_requested_mhz, k.measured_energy_j);
        if (k.f_requested_mhz == it->optimum_mhz)
          optimum.emplace_back(k.f_requested_mhz, k.measured_energy_j);
      }
      *gp << "set title "
          << TwoLines(names.at(w), fmt::format("chosen {:g} MHz: {:.1f}% more than the optimum",
                                               it->chosen_mhz, it->energy_loss_pct))
          << " font ',10'\n";
      *gp << "set key inside center top Left reverse nobox samplen 1.5 font ',9'\n";
      *gp << "set xlabel 'requested MHz' font ',10'\nset ylabel 'J per run' font ',10'\nset xtics "
             "200\n";
      *gp << "plot '-' using 1:2 with linespoints pt 7 ps 0.8 lc rgb '#000000' title 'measured', "
          << "'-' using 1:2 with lines lw 2 lc rgb '" << SeriesColour(0) << "' title 'predicted', "
          << "'-' using 1:2 with lines lw 1.5 dt 2 lc rgb '" << SeriesColour(3)
          << "' title 'T from anchor alone', "
          << "'-' using 1:2 with points pt 8 ps 2.5 lw 2 lc rgb '" << SeriesColour(2)
          << "' title 'chosen', "
          << "'-' using 1:2 with points pt 6 ps 3 lw 2 lc rgb '" << SeriesColour(1)
          << "' title 'optimum'\n";
      gp->send1d(measured);
      gp->send1d(predicted);
      gp->send1d(anchor_only);
      gp->send1d(chosen);
      gp->send1d(optimum);
    }
    *gp << "unset multiplot\n";
  };
  RenderFigure("energy-across-clocks figure", png, svg, body, FigureSize{1200, 1000});
}

void DrawIdle(const ClocksReportInput& in, const std::string& png, const std::string& svg) {
  const IdleConstantFit& f = *in.idle;
  const VfModel& m = in.fit->model;
  Series points, with_v, cubic;
  for (size_t i = 0; i < in.idle_curve->f_core_mhz.size(); ++i) {
    points.emplace_back(in.idle_curve->f_core_mhz[i], in.idle_curve->power_w[i]);
  }
  for (double x = f.f_min_mhz; x <= f.f_max_mhz + 1e-9; x += (f.f_max_mhz - f.f_min_mhz) / 100.0) {
    const double v = m.VoltageAt(x);
    with_v.emplace_back(x, f.static_w * v + f.dynamic_w_per_mhz * v * v * x + f.p_const_w);
    cubic.emplace_back(
        x, f.cubic.beta_w_per_mhz3 * x * x * x + f.cubic.tau_w_per_mhz * x + f.cubic.p_const_w);
  }
  auto body = [&](Gnuplot* gp) {
    *gp << "set title " << GnuplotTitle(in.title + ": idle power and the constant power under it")
        << "\n";
    *gp << "set xlabel 'Core clock (MHz)'\nset ylabel 'Idle power (W)'\n";
    *gp << "set key inside left top Left reverse box samplen 2\n";
    Style(gp);
    *gp << "plot '-' using 1:2 with points pt 7 ps 0.9 lc rgb '#000000' title 'measured idle', \\\n"
        << "  '-' using 1:2 with lines lw 2 lc rgb '" << SeriesColour(0) << "' title "
        << GnuplotString(
               fmt::format("with the estimated voltages: P_const = {:.1f} W", f.p_const_w))
        << ", \\\n"
        << "  '-' using 1:2 with lines lw 2 dt 2 lc rgb '" << SeriesColour(1) << "' title "
        << GnuplotString(
               fmt::format("AccelWattch Eq. 3 (cubic): P_const = {:.1f} W", f.cubic.p_const_w))
        << "\n";
    gp->send1d(points);
    gp->send1d(with_v);
    gp->send1d(cubic);
  };
  RenderFigure("idle constant-power figure", png, svg, body);
}

}  // namespace

std::vector<std::string> ShortWorkloadNames(const std::vector<std::string>& names) {
  if (names.size() < 2) return names;
  size_t common = 0;  // length of the shared suffix
  const std::string& first = names.front();
  while (common < first.size()) {
    const char c = first[first.size() - 1 - common];
    bool all = true;
    for (const std::string& n : names)
      all = all && common < n.size() && n[n.size() - 1 - common] == c;
    if (!all) break;
    ++common;
  }
  // Cut at the first '_' inside the shared suffix, keeping every name non-empty.
  const size_t cut_in_first = first.find('_', first.size() - common);
  if (common == 0 || cut_in_first == std::string::npos) return names;
  const size_t drop = first.size() - cut_in_first;
  std::vector<std::string> out;
  for (const std::string& n : names) {
    if (n.size() <= drop) return names;
    out.push_back(n.substr(0, n.size() - drop));
  }
  return out;
}

std::vector<std::string> StageClocksReport(const ClocksReportInput& in, OutputSet* outputs) {
  std::vector<ClocksFigure> figures;
  std::vector<std::string> written;
  auto draw = [&](const ClocksFigure& f, auto&& fn) {
    const std::string png = in.out_dir + "/figures/" + f.stem + ".png";
    const std::string svg = in.out_dir + "/figures/" + f.stem + ".svg";
    fn(outputs->Stage(png), outputs->Stage(svg));
    written.push_back(png);
    written.push_back(svg);
    figures.push_back(f);
  };
  const std::vector<ClockWorkloadError> errors = ClockErrorsByWorkload(*in.cv);
  const std::vector<std::string> shown = Spread(errors, 9);
  if (in.figures) {
    draw(ClocksFigure{"vf_curve", "The estimated voltage-frequency curve"},
         [&](const std::string& p, const std::string& s) { DrawVfCurve(in, p, s); });
    draw(ClocksFigure{"power_vs_clock", "Power across clocks from one clock"},
         [&](const std::string& p, const std::string& s) { DrawPowerPanels(in, shown, p, s); });
    draw(ClocksFigure{"cv_error_by_clock", "CV error at each clock"},
         [&](const std::string& p, const std::string& s) { DrawErrorByClock(in, p, s); });
    if (!in.cv->choices.empty()) {
      std::vector<std::string> with_choice;
      for (const std::string& w : shown) {
        for (const ClockChoice& c : in.cv->choices) {
          if (c.workload == w) with_choice.push_back(w);
        }
      }
      draw(ClocksFigure{"energy_error_by_clock", "Energy error at each clock"},
           [&](const std::string& p, const std::string& s) { DrawEnergyErrorByClock(in, p, s); });
      draw(ClocksFigure{"energy_vs_clock", "Energy across clocks"},
           [&](const std::string& p, const std::string& s) {
             DrawEnergyPanels(in, with_choice, p, s);
           });
    }
    if (in.idle != nullptr) {
      draw(ClocksFigure{"idle_constant", "Constant power from the idle curve"},
           [&](const std::string& p, const std::string& s) { DrawIdle(in, p, s); });
    }
  }
  const Document doc = ClocksDocument(in, errors, figures);
  const std::string html = in.out_dir + "/index.html", md = in.out_dir + "/index.md";
  outputs->StageText(html, RenderHtml(doc, in.title));
  outputs->StageText(md, RenderMarkdown(doc));
  written.push_back(html);
  written.push_back(md);
  return written;
}

}  // namespace wattcal
