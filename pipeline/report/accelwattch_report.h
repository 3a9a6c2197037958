// The whole AccelWattch Eq. 12 model in the run report (report/run_report.h): the
// breakdown CSV wattcal-predict --breakdown writes for an AccelWattch model
// (accelwattch/power_model.h, AccelWattchPredictionsToCsv), read back and averaged into the
// report's stacked bars, and the virtual GPU's expected scaling factors (truth_accelwattch.json),
// against which a fit's recovery is shown.
//
//   if (LooksLikeAccelWattchBreakdownCsv(path)) {
//     const AccelWattchBreakdownTable table = ReadAccelWattchBreakdownCsv(path);
//     const std::vector<ClockSplit> clocks = SplitByCoreClock(table);
//     WriteBreakdownPlot(ClockSplitChart(clocks), ...);  // AccelWattch Eq. 12's terms per clock
//     WriteBreakdownPlot(DynamicByBenchmarkChart(table, 1447, 11), ...);  // components
//   }
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/report_figures.h"

namespace wattcal {

// One kernel evaluated at one V-F pair: a row of the breakdown CSV.
struct AccelWattchBreakdownRow {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  std::string kernel;
  std::string benchmark;
  double f_core_mhz = 0.0;
  double f_mem_mhz = 0.0;
  double predicted_w = 0.0;
  double measured_w = kNaN;  // NaN: not measured at this pair
  double error_pct = kNaN;
  double const_w = 0.0;
  double static_w = 0.0;
  double idle_w = 0.0;
  double dynamic_w = 0.0;
  std::vector<double> component_w;  // one per AccelWattchBreakdownTable::components
  int64_t line = 0;
};

struct AccelWattchBreakdownTable {
  std::string path;
  std::vector<std::string> components;  // the <COMPONENT>_w columns after dynamic_w, unit cut
  std::vector<AccelWattchBreakdownRow> rows;
};

// True when the first line of `path` is the header of an AccelWattch breakdown: it names
// kernel, benchmark, f_core_mhz, predicted_w, measured_w, const_w, static_w, idle_w and
// dynamic_w, followed by one or more <COMPONENT>_w columns. False for a file that cannot be read.
bool LooksLikeAccelWattchBreakdownCsv(const std::string& path);

// Reads a breakdown CSV (columns in any order). Throws InputError naming FILE:LINE and the
// column for a missing column, a row with the wrong number of fields, an empty kernel or
// benchmark, a number that does not parse (measured_w and error_pct may be empty), a core clock
// that is not > 0, or no rows.
AccelWattchBreakdownTable ReadAccelWattchBreakdownCsv(const std::string& path);

// AccelWattch Eq. 12's terms averaged over every kernel evaluated at one core clock.
struct ClockSplit {
  double f_core_mhz = 0.0;
  int kernels = 0;
  double const_w = 0.0;
  double static_w = 0.0;
  double idle_w = 0.0;
  double dynamic_w = 0.0;
  double predicted_w = 0.0;
  // Kernels measured at this clock (evaluated at their own pair) and their MAPE (NaN: none).
  int measured_kernels = 0;
  double mape_pct = std::numeric_limits<double>::quiet_NaN();
};

// One entry per core clock of the table, in increasing order.
std::vector<ClockSplit> SplitByCoreClock(const AccelWattchBreakdownTable& table);

// Stacked bars of the splits, one per clock (at most `max_bars`, spread evenly over the clocks
// when there are more): constant, static and idle power in greys, dynamic power on top; no
// average bar.
BreakdownChart ClockSplitChart(const std::vector<ClockSplit>& splits, size_t max_bars);

// The core clock the per-component figure is drawn at: `preferred_mhz` when the table has it,
// else the clock with the most measured kernels, else the highest. `why` (optional) receives a
// few words on the choice.
double ChooseReferenceClock(const AccelWattchBreakdownTable& table, double preferred_mhz,
                            std::string* why = nullptr);

// Dynamic power per component at core clock `f_core_mhz`, one bar per benchmark (the mean over
// its kernels), at most `max_benchmarks` of them spread over the range of dynamic power (in
// increasing dynamic power), then the mean over every kernel at that clock. Components with no
// power in any bar are left out. `benchmarks_total` (optional) receives how many benchmarks the
// table has at that clock. Throws std::invalid_argument when no row is at that clock.
BreakdownChart DynamicByBenchmarkChart(const AccelWattchBreakdownTable& table, double f_core_mhz,
                                       size_t max_benchmarks, size_t* benchmarks_total = nullptr);

// The expected scaling factors of a virtual GPU's truth file (truth_accelwattch.json's
// expected_scaling_factors: {component: x}); empty when the JSON has none. Throws InputError
// naming the file and the key for a factor that is not a number.
std::map<std::string, double> ExpectedScalingFactors(const std::string& path,
                                                     const nlohmann::json& truth);

}  // namespace wattcal
