// The report's figures beyond the validation scatter and error CDF (report/validation_plots.h):
// voltage against frequency per domain, one benchmark's power over the V-F pairs, the
// per-component power breakdown, the utilisation correlation heat-maps, and the hooks for the
// constant-power fits and the relative-architecture bars.
//
// Every function draws through RenderFigure (report/gnuplot_figure.h): PNG (pngcairo) and SVG,
// 800 x 600, data inline in the script, so the same inputs give byte-identical files; it writes
// exactly the two paths it is given (callers pass OutputSet temporaries), throws
// std::runtime_error when gnuplot is missing or fails (neither file is left behind) and
// std::invalid_argument for data that cannot be drawn (nothing to draw, non-finite values).
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fit/identifiability.h"
#include "io/corpus.h"
#include "model/power_model.h"
#include "report/gnuplot_figure.h"
#include "validate/prediction.h"

namespace wattcal {

// ---- Voltage against frequency (TPDS'19 Figs. 4-5: the voltages the fit estimated) ----------

// One panel per frequency domain (the union of the models' domains, by name), one line per
// model through its estimated levels, normalised voltage (1 at the default frequency, marked by
// a dotted line). Models with a single level in a domain (fixed-frequency models) draw nothing
// there; at least one model must have two levels somewhere.
void WriteVoltagePlot(const std::vector<std::pair<std::string, PowerModel>>& labelled_models,
                      const std::string& title, const std::string& png_path,
                      const std::string& svg_path);

// ---- One benchmark over the V-F pairs (TPDS'19 Figs. 9 and 10A) -------------------------------

// Predictions of one benchmark by one model/mode.
struct BenchmarkSeries {
  std::string label;                // "dvfs", "scaling", ...
  std::vector<PredictionRow> rows;  // this benchmark's rows only
};

// Power (W) against core frequency (MHz): the measured power as points and each series'
// prediction as a line (solid, dashed, ... per series), one colour per memory frequency; the key
// gives each series' MAPE over the benchmark's rows. Measured values are taken from every
// series' rows (they agree: the same measurements).
void WriteBenchmarkVfPlot(const std::string& benchmark, const std::vector<BenchmarkSeries>& series,
                          const std::string& title, const std::string& png_path,
                          const std::string& svg_path);

// ---- Per-component breakdown (TPDS'19 Fig. 11, AccelWattch Figs. 8-9) -------------------------

struct BreakdownBar {
  std::string label;
  std::vector<double> term_w;  // one per BreakdownChart::terms, W, >= 0 (negative drawn as 0)
  double measured_w = std::numeric_limits<double>::quiet_NaN();  // NaN: not measured
};

struct BreakdownChart {
  std::vector<std::string> terms;  // stacking order, bottom first
  int grey_terms = 0;              // the first terms (static, component-independent): greys
  std::vector<BreakdownBar> bars;  // one per benchmark, in order
  std::string pair_label;          // the V-F pair the bars were predicted at ("975/3505 MHz")
  std::string note;  // a footnote right of the plot, below the key ("" for none; '\n' breaks lines)
  // Drawing. The defaults draw TPDS'19 Fig. 11's layout.
  // After a gap, a last bar with the average of the terms (and of the measured power when every
  // bar has one).
  bool average_bar = true;
  std::string average_label = "average";
  // That bar's terms when it averages more than the bars drawn; empty = AverageBreakdown.
  std::vector<double> average_term_w;
  // Text under the x axis; empty = none.
  std::string x_label;
  // Bar labels written horizontally (short labels such as clocks) instead of rotated by 90°.
  bool horizontal_labels = false;
  // The board's power limit, W, drawn as a dashed line (unset = unknown, not drawn).
  std::optional<double> limit_w;
};

// At most `max_bars` bars: the max_bars - 1 with the largest predicted power (in their order),
// then one bar "the other K (mean)" with the mean terms and measured power of the rest; the
// average bar keeps averaging every bar. Unchanged when it has max_bars or fewer.
void KeepLargestBars(BreakdownChart* chart, size_t max_bars);

// The model's terms at its default pair for one row per benchmark of `activity` (the row at the
// default pair when there is one, else the first): static power per domain, component-independent
// dynamic power per domain, then one term per component (PowerModel::PredictAtDefault with a
// PowerBreakdown). measured_w is the measured power of that row when it was measured at the
// default pair. Throws InputError naming the activity file when the layouts differ.
BreakdownChart ComputeBreakdownChart(const PowerModel& model, const Corpus& activity);

// Stacked bars, one per benchmark, then the average over the benchmarks as a last bar after a
// gap (unless chart.average_bar is false); measured power (when known) as a marker on each bar. Terms of the static and
// component-independent kinds are drawn in greys, components in colours.
void WriteBreakdownPlot(const BreakdownChart& chart, const std::string& title,
                        const std::string& png_path, const std::string& svg_path);

// WriteBreakdownPlot's canvas for `bars` bars (the average and its gap included): 800 x 600 up to
// 20, then 24 px more per bar (at most 1400) and 800 px high, room for long rotated names.
FigureSize BreakdownFigureSize(int bars);

// The mean of every term over the chart's bars, W (the "average" bar).
std::vector<double> AverageBreakdown(const BreakdownChart& chart);

// ---- Utilisation correlations (TPDS'19 Fig. 3b and Fig. 13a) ----------------------------------

// Names longer than this are shortened in the middle ("mix076_f16…t1_b4") on the heat-map.
constexpr size_t kHeatmapLabelChars = 16;

// The heat-map's axis labels: each name, shortened in the middle with "…" when longer than
// kHeatmapLabelChars; `shortened` (optional) receives how many were.
std::vector<std::string> HeatmapBenchmarkLabels(const std::vector<std::string>& names,
                                                int* shortened = nullptr);

// The heat-map's canvas: 800 x 600 up to 40 benchmarks, beyond growing with their number so
// that every one is named legibly (13 px per benchmark).
FigureSize BenchmarkHeatmapSize(size_t benchmarks);

// Benchmark x benchmark Pearson r of the utilisation vectors as a heat-map on a blue-white-red
// scale from -1 to 1 (benchmarks in corpus order, every one named on both axes by
// HeatmapBenchmarkLabels, on a canvas of BenchmarkHeatmapSize); cells where r is undefined are
// grey.
void WriteBenchmarkCorrelationHeatmap(const CollinearityReport& report, const std::string& title,
                                      const std::string& png_path, const std::string& svg_path);

// Component x component Pearson r across the benchmarks, each cell labelled with its value and
// the pairs at or above `pair_threshold_abs_r` outlined; constant components' cells grey.
void WriteComponentCorrelationHeatmap(const CollinearityReport& report, double pair_threshold_abs_r,
                                      const std::string& title, const std::string& png_path,
                                      const std::string& svg_path);

// ---- Constant power from V-F sweeps (AccelWattch Fig. 2; data from wattcal-constant) ---------

struct ConstantFitCurve {
  std::string label;  // benchmark [(active SMs, lanes)]
  std::string benchmark;
  int active_sms = 0;            // 0 = unknown
  int lanes_per_warp = 0;        // 0 = unknown
  double beta_w_per_mhz3 = 0.0;  // AccelWattch Eq. 3 with the shared constant
  double tau_w_per_mhz = 0.0;
  double f_min_mhz = 0.0;  // measured clock range
  double f_max_mhz = 0.0;
  std::vector<std::pair<double, double>> measured;  // (f_core_mhz, power_w); may be empty
};

struct ConstantFitChart {
  double p_const_w = 0.0;  // shared constant of AccelWattch Eq. 3
  double p_const_ci_low_w = std::numeric_limits<double>::quiet_NaN();
  double p_const_ci_high_w = std::numeric_limits<double>::quiet_NaN();
  double confidence_level = 0.95;
  std::vector<ConstantFitCurve> curves;
};

// Power (W) against core frequency (MHz) from 0 to the highest measured clock: each curve's
// P = beta f^3 + tau f + P_const (solid over its measured range, dotted down to f = 0), its
// measured points, and P_const with its interval as a band.
void WriteConstantPowerPlot(const ConstantFitChart& chart, const std::string& title,
                            const std::string& png_path, const std::string& svg_path);

// Reads wattcal-constant's JSON (keys p_const_w, p_const_ci_low_w, p_const_ci_high_w,
// confidence_level, curves[{benchmark, active_sms, lanes_per_warp, f_core_min_mhz,
// f_core_max_mhz, beta_w_per_mhz3, tau_w_per_mhz}]) into a chart without measured points; a
// curve's label is its benchmark, with its SMs and lanes when another curve has the same
// benchmark. Throws InputError naming the file and the key when one is missing or mistyped.
ConstantFitChart ReadConstantFitChart(const std::string& path);

// Adds the measured points of the sweep wattcal-constant read (its JSON's sweep.path and
// sweep.description_path) to the chart's curves, matched by benchmark, active SMs and lanes.
// Returns false (chart unchanged) when the JSON names no sweep or the sweep file is missing;
// throws InputError for a sweep file that cannot be read. The files read are appended to
// `files_read` when given.
bool AddSweepPoints(const std::string& constant_json_path, ConstantFitChart* chart,
                    std::vector<std::string>* files_read = nullptr);

// ---- Relative architectures (AccelWattch Fig. 12; data from wattcal-compare) -----------------

struct RelativePowerBar {
  std::string workload;
  double estimated_pct = 0.0;  // 100 (P_B - P_A) / P_A, estimated
  double measured_pct = 0.0;   // 100 (P_B - P_A) / P_A, measured
  // Whether the estimate points the same way as the measurement, as the comparison judged it
  // (wattcal-compare may count small changes as "no change"); -1 = judge by the signs here.
  int same_direction = -1;
};
// Whether the bar's estimate points the way its measurement does: the comparison's judgement when
// it made one, else the signs of the two changes (no change counts as a direction of its own).
bool SameDirection(const RelativePowerBar& bar);

struct RelativePowerChart {
  std::string gpu_a;  // the denominator
  std::string gpu_b;
  // The files each side's estimates came from (the comparison's "sources"; "" when not recorded).
  std::string estimated_a_source;
  std::string estimated_b_source;
  std::vector<RelativePowerBar> bars;
};

// Clustered bars per workload, estimated and measured power of GPU B relative to GPU A (%; the
// title should name both), then the two averages after a gap; the key states the difference of the
// averages and the share of workloads whose estimate points the same direction as the measurement.
// Past kRelativePowerBarsMax workloads WriteRelativePowerPlot draws WriteRelativePowerScatter.
void WriteRelativePowerPlot(const RelativePowerChart& chart, const std::string& title,
                            const std::string& png_path, const std::string& svg_path);
inline constexpr size_t kRelativePowerBarsMax = 30;

// One point per workload, measured change (x) against estimated change (y), with y = x, the
// quadrants where the estimate points the other way shaded, the points coloured by direction,
// the six largest disagreements named and the averages and direction count under the axes
// (relative_power_scatter.cc). RelativePowerScatterSize() px.
void WriteRelativePowerScatter(const RelativePowerChart& chart, const std::string& title,
                               const std::string& png_path, const std::string& svg_path);
FigureSize RelativePowerScatterSize();

// Reads wattcal-compare's JSON (keys arch_a, arch_b, per_workload[{workload,
// estimated_rel_pct, measured_rel_pct[, same_direction]}]). Throws InputError naming the file
// and the key when one is missing or mistyped.
RelativePowerChart ReadRelativePowerChart(const std::string& path);

}  // namespace wattcal
