// The constant-power figure (AccelWattch Eq. 3 over a sweep) and the relative power of two
// architectures (AccelWattch Fig. 12), with the readers of their JSON.
#include "report/report_figures.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
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

// ---- Constant power --------------------------------------------------------------------------

void WriteConstantPowerPlot(const ConstantFitChart& chart, const std::string& title,
                            const std::string& png_path, const std::string& svg_path) {
  if (chart.curves.empty()) throw std::invalid_argument("constant-power figure: no curves");
  CheckFinite(chart.p_const_w, "P_const");
  double f_max = 0.0;
  for (const ConstantFitCurve& c : chart.curves) {
    CheckFinite(c.beta_w_per_mhz3, "beta of '" + c.label + "'");
    CheckFinite(c.tau_w_per_mhz, "tau of '" + c.label + "'");
    if (!(c.f_max_mhz > 0.0) || !(c.f_min_mhz <= c.f_max_mhz)) {
      throw std::invalid_argument(fmt::format("constant-power figure: curve '{}' spans {}-{} MHz",
                                              c.label, c.f_min_mhz, c.f_max_mhz));
    }
    f_max = std::max(f_max, c.f_max_mhz);
    for (const auto& [f, w] : c.measured) f_max = std::max(f_max, f);
  }
  auto eq3 = [&](const ConstantFitCurve& c, double f) {
    return c.beta_w_per_mhz3 * f * f * f + c.tau_w_per_mhz * f + chart.p_const_w;
  };
  std::vector<std::vector<std::pair<double, double>>> extrapolated, fitted;
  for (const ConstantFitCurve& c : chart.curves) {
    std::vector<std::pair<double, double>> low, in;
    for (int i = 0; i <= kCurveSamples; ++i) {
      const double f = c.f_min_mhz * i / kCurveSamples;
      low.emplace_back(f, eq3(c, f));
    }
    for (int i = 0; i <= kCurveSamples; ++i) {
      const double f = c.f_min_mhz + (c.f_max_mhz - c.f_min_mhz) * i / kCurveSamples;
      in.emplace_back(f, eq3(c, f));
    }
    extrapolated.push_back(std::move(low));
    fitted.push_back(std::move(in));
  }
  const bool has_ci =
      std::isfinite(chart.p_const_ci_low_w) && std::isfinite(chart.p_const_ci_high_w);
  const std::string const_title = has_ci
                                      ? fmt::format("P_const = {:.1f} W ({:g}% CI {:.1f}–{:.1f} W)",
                                                    chart.p_const_w, 100.0 * chart.confidence_level,
                                                    chart.p_const_ci_low_w, chart.p_const_ci_high_w)
                                      : fmt::format("P_const = {:.1f} W", chart.p_const_w);
  auto body = [&](Gnuplot* gp) {
    *gp << "reset\n";
    *gp << "set title " << GnuplotTitle(title) << "\n";
    *gp << "set xlabel 'Core frequency (MHz)'\n";
    *gp << "set ylabel 'Power (W)'\n";
    *gp << AxisStyle();
    *gp << "set xrange [0:" << Num(1.02 * f_max) << "]\n";
    *gp << "set yrange [0:*]\n";
    *gp << "set key inside left top Left reverse box opaque samplen 2 spacing 1.1 font ',11'\n";
    *gp << "plot ";
    if (has_ci) {
      *gp << Num(chart.p_const_ci_low_w) << " with filledcurves y=" << Num(chart.p_const_ci_high_w)
          << " fc rgb '#e0e0e0' fs solid 1.0 notitle, \\\n  ";
    }
    *gp << Num(chart.p_const_w) << " with lines lw 1.5 dt 2 lc rgb '#000000' title "
        << GnuplotString(const_title);
    for (size_t i = 0; i < chart.curves.size(); ++i) {
      const int s = static_cast<int>(i);
      *gp << ", \\\n  '-' using 1:2 with lines lw 1.5 dt 3 lc rgb '" << SeriesColour(s)
          << "' notitle";
      *gp << ", \\\n  '-' using 1:2 with lines lw 2 lc rgb '" << SeriesColour(s) << "' title "
          << GnuplotString(chart.curves[i].label);
      if (!chart.curves[i].measured.empty()) {
        *gp << ", \\\n  '-' using 1:2 with points pt 7 ps 0.9 lc rgb '" << SeriesColour(s)
            << "' notitle";
      }
    }
    *gp << "\n";
    for (size_t i = 0; i < chart.curves.size(); ++i) {
      gp->send1d(extrapolated[i]);
      gp->send1d(fitted[i]);
      if (!chart.curves[i].measured.empty()) gp->send1d(chart.curves[i].measured);
    }
  };
  RenderFigure("constant-power figure", png_path, svg_path, body);
}

ConstantFitChart ReadConstantFitChart(const std::string& path) {
  const nlohmann::json j = ReadJsonFile(path, "the constant-power result file");
  auto number = [&](const nlohmann::json& object, const std::string& key, const std::string& where,
                    bool required) { return JsonNumber(path, object, key, where, required); };
  ConstantFitChart chart;
  chart.p_const_w = number(j, "p_const_w", "", true);
  chart.p_const_ci_low_w = number(j, "p_const_ci_low_w", "", false);
  chart.p_const_ci_high_w = number(j, "p_const_ci_high_w", "", false);
  const double level = number(j, "confidence_level", "", false);
  if (std::isfinite(level)) chart.confidence_level = level;
  if (!j.contains("curves") || !j["curves"].is_array()) {
    throw InputError(path, 0, "curves", "missing (expected an array of per-benchmark fits)");
  }
  for (size_t i = 0; i < j["curves"].size(); ++i) {
    const nlohmann::json& c = j["curves"][i];
    const std::string where = fmt::format("curves[{}].", i);
    ConstantFitCurve curve;
    if (!c.is_object() || !c.contains("benchmark") || !c["benchmark"].is_string()) {
      throw InputError(path, 0, where + "benchmark", "missing (expected a string)");
    }
    curve.benchmark = c["benchmark"].get<std::string>();
    curve.label = curve.benchmark;
    const double sms = number(c, "active_sms", where, false);
    const double lanes = number(c, "lanes_per_warp", where, false);
    curve.active_sms = std::isfinite(sms) ? static_cast<int>(sms) : 0;
    curve.lanes_per_warp = std::isfinite(lanes) ? static_cast<int>(lanes) : 0;
    curve.beta_w_per_mhz3 = number(c, "beta_w_per_mhz3", where, true);
    curve.tau_w_per_mhz = number(c, "tau_w_per_mhz", where, true);
    curve.f_min_mhz = number(c, "f_core_min_mhz", where, true);
    curve.f_max_mhz = number(c, "f_core_max_mhz", where, true);
    chart.curves.push_back(std::move(curve));
  }
  std::map<std::string, int> per_benchmark;
  for (const ConstantFitCurve& c : chart.curves) ++per_benchmark[c.benchmark];
  for (ConstantFitCurve& c : chart.curves) {
    if (per_benchmark[c.benchmark] < 2) continue;
    const std::string sms = c.active_sms <= 0   ? "all SMs"
                            : c.active_sms == 1 ? "1 SM"
                                                : fmt::format("{} SMs", c.active_sms);
    const std::string lanes = c.lanes_per_warp <= 0   ? "32 lanes"
                              : c.lanes_per_warp == 1 ? "1 lane"
                                                      : fmt::format("{} lanes", c.lanes_per_warp);
    c.label = fmt::format("{} ({}, {})", c.benchmark, sms, lanes);
  }
  return chart;
}

bool AddSweepPoints(const std::string& constant_json_path, ConstantFitChart* chart,
                    std::vector<std::string>* files_read) {
  const nlohmann::json j = ReadJsonFile(constant_json_path, "the constant-power result file");
  if (!j.contains("sweep") || !j["sweep"].is_object() || !j["sweep"].contains("path") ||
      !j["sweep"]["path"].is_string()) {
    return false;
  }
  const std::string sweep_path = j["sweep"]["path"].get<std::string>();
  std::string description;
  if (j["sweep"].contains("description_path") && j["sweep"]["description_path"].is_string()) {
    description = j["sweep"]["description_path"].get<std::string>();
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(sweep_path, ec) ||
      (!description.empty() && !std::filesystem::is_regular_file(description, ec))) {
    return false;
  }
  const Sweep sweep = ReadSweep(sweep_path, description);
  if (files_read != nullptr) {
    files_read->push_back(sweep_path);
    if (!description.empty()) files_read->push_back(description);
  }
  for (const SweepCurve& s : GroupCurves(sweep)) {
    for (ConstantFitCurve& c : chart->curves) {
      if (c.benchmark != s.benchmark || c.active_sms != s.active_sms ||
          c.lanes_per_warp != s.lanes_per_warp) {
        continue;
      }
      c.measured.clear();
      for (size_t i = 0; i < s.f_core_mhz.size(); ++i)
        c.measured.emplace_back(s.f_core_mhz[i], s.power_w[i]);
      std::sort(c.measured.begin(), c.measured.end());
    }
  }
  return true;
}

// ---- Relative architectures ------------------------------------------------------------------

void WriteRelativePowerPlot(const RelativePowerChart& chart, const std::string& title,
                            const std::string& png_path, const std::string& svg_path) {
  const std::vector<RelativePowerBar>& bars = chart.bars;
  if (bars.empty()) throw std::invalid_argument("relative-power figure: no workloads");
  if (bars.size() > kRelativePowerBarsMax) {
    WriteRelativePowerScatter(chart, title, png_path, svg_path);
    return;
  }
  double estimated_sum = 0.0, measured_sum = 0.0;
  int same_direction = 0;
  std::string table;
  for (const RelativePowerBar& bar : bars) {
    CheckFinite(bar.estimated_pct, "estimated relative power of '" + bar.workload + "'");
    CheckFinite(bar.measured_pct, "measured relative power of '" + bar.workload + "'");
    estimated_sum += bar.estimated_pct;
    measured_sum += bar.measured_pct;
    const bool same = bar.same_direction >= 0
                          ? bar.same_direction == 1
                          : (bar.estimated_pct > 0.0) - (bar.estimated_pct < 0.0) ==
                                (bar.measured_pct > 0.0) - (bar.measured_pct < 0.0);
    same_direction += same ? 1 : 0;
    table += fmt::format("{} {} {}\n", DataString(bar.workload), Num(bar.estimated_pct),
                         Num(bar.measured_pct));
  }
  const double n = static_cast<double>(bars.size());
  table += "\"\" 0 0\n";
  table += fmt::format("\"average\" {} {}\n", Num(estimated_sum / n), Num(measured_sum / n));
  const int bar_count = static_cast<int>(bars.size()) + 2;
  const int tic_pt = TicFontPt(bar_count, 600, 12);
  size_t longest_label = std::string("average").size();
  for (const RelativePowerBar& bar : bars)
    longest_label = std::max(longest_label, bar.workload.size());
  const int key_lines = 2;
  const int bottom_chars = BottomMarginChars(longest_label, tic_pt) + 1 + key_lines;
  const std::string difference = fmt::format(
      "averages {:+.1f}% estimated, {:+.1f}% measured: "
      "{:.1f} points apart",
      estimated_sum / n, measured_sum / n, std::abs(estimated_sum - measured_sum) / n);
  const std::string direction =
      fmt::format("same direction in {} of {} workloads ({:.0f}%)", same_direction, bars.size(),
                  100.0 * same_direction / n);
  auto body = [&](Gnuplot* gp) {
    *gp << "reset\n";
    *gp << "$bars << EOD\n" << table << "EOD\n";
    *gp << "set title " << GnuplotTitle(title) << " offset 0,1\n";
    // The title names the two GPUs (long names would not fit along the axis).
    *gp << "set ylabel 'Power of B relative to A (%)'\n";
    *gp << "set style data histograms\n";
    *gp << "set style histogram clustered gap 1\n";
    *gp << "set style fill solid 1.0 noborder\n";
    *gp << "set xtics rotate by 90 right scale 0 font '," << tic_pt << "'\n";
    *gp << AxisStyle("y");
    *gp << "set xzeroaxis lt -1 lw 1\n";
    *gp << "set xrange [-0.7:" << bar_count - 1 << ".7]\n";
    *gp << "set bmargin " << bottom_chars << "\n";
    // The two series above the axes; the summary in two lines at the bottom of the figure.
    *gp << "set tmargin 4.5\n";
    *gp << "set key at graph 0.5, graph 1.04 center bottom horizontal Left reverse samplen 1.5\n";
    *gp << "set label 1 " << GnuplotString(difference)
        << " at screen 0.5, screen 0.065 center font ',11'\n";
    *gp << "set label 2 " << GnuplotString(direction)
        << " at screen 0.5, screen 0.025 center font ',11'\n";
    *gp << "plot $bars using 2:xtic(1) lc rgb '" << SeriesColour(0) << "' title 'estimated', \\\n"
        << "  '' using 3 lc rgb '" << SeriesColour(1) << "' title 'measured'\n";
  };
  RenderFigure("relative-power figure", png_path, svg_path, body);
}

RelativePowerChart ReadRelativePowerChart(const std::string& path) {
  const nlohmann::json j = ReadJsonFile(path, "the comparison file");
  RelativePowerChart chart;
  auto text = [&](const nlohmann::json& object, const std::string& key, const std::string& where) {
    if (!object.is_object() || !object.contains(key) || !object[key].is_string()) {
      throw InputError(path, 0, where + key, "missing (expected a string)");
    }
    return object[key].get<std::string>();
  };
  chart.gpu_a = text(j, "arch_a", "");
  chart.gpu_b = text(j, "arch_b", "");
  if (j.contains("sources")) {
    chart.estimated_a_source = text(j["sources"], "estimated_a", "sources.");
    chart.estimated_b_source = text(j["sources"], "estimated_b", "sources.");
  }
  if (!j.contains("per_workload") || !j["per_workload"].is_array()) {
    throw InputError(path, 0, "per_workload", "missing (expected an array of workloads)");
  }
  for (size_t i = 0; i < j["per_workload"].size(); ++i) {
    const nlohmann::json& w = j["per_workload"][i];
    const std::string where = fmt::format("per_workload[{}].", i);
    RelativePowerBar bar;
    bar.workload = text(w, "workload", where);
    bar.estimated_pct = JsonNumber(path, w, "estimated_rel_pct", where, true);
    bar.measured_pct = JsonNumber(path, w, "measured_rel_pct", where, true);
    if (w.contains("same_direction")) {
      if (!w["same_direction"].is_boolean()) {
        throw InputError(path, 0, where + "same_direction", "expected true or false");
      }
      bar.same_direction = w["same_direction"].get<bool>() ? 1 : 0;
    }
    chart.bars.push_back(std::move(bar));
  }
  return chart;
}

}  // namespace wattcal
