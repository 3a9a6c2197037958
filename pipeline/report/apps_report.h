// The applications of a run in its report: wattcal-predict --capture's table (one row per
// workload: predicted power, energy over its kernel time, flags, and measured power where the
// capture had a log) and its per-component breakdown (--breakdown-out) as stacked bars.
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "report/report_figures.h"

namespace wattcal {

// wattcal-predict --what-if-out: per application its run as recorded, then one row per clock or
// power limit asked for (perf/what_if.h).
struct ReportWhatIfRow {
  std::string workload;
  std::string setting;  // "as_recorded", "clock" or "power_limit"
  double setting_value = std::numeric_limits<double>::quiet_NaN();  // MHz or W
  double f_core_mhz = std::numeric_limits<double>::quiet_NaN();
  double measured_f_core_mhz = std::numeric_limits<double>::quiet_NaN();
  double predicted_w = std::numeric_limits<double>::quiet_NaN();
  double run_time_s = std::numeric_limits<double>::quiet_NaN();
  double energy_j = std::numeric_limits<double>::quiet_NaN();
  double time_change_pct = std::numeric_limits<double>::quiet_NaN();
  double energy_change_pct = std::numeric_limits<double>::quiet_NaN();
  std::string time_model;
  std::string flags;
};

struct ReportWhatIf {
  std::string path;       // "" when the run asked for none
  std::string vf_source;  // where the voltage-frequency curve came from (the first row's)
  std::vector<ReportWhatIfRow> rows;
};

struct ReportApp {
  std::string workload;
  double predicted_w = 0.0;
  double uncapped_w = 0.0;
  bool capped = false;
  double duration_s = std::numeric_limits<double>::quiet_NaN();
  double energy_j = std::numeric_limits<double>::quiet_NaN();
  std::string flags;
  double measured_w = std::numeric_limits<double>::quiet_NaN();
  double error_pct = std::numeric_limits<double>::quiet_NaN();
  std::string measured_flags;
  double f_core_mhz = 0.0;
  int windows = 0;
  // Columns of later wattcal-predict versions, NaN (or 0 steps) when the table has none: the
  // 95% interval of the power and of the energy, the measured energy over the whole windows and
  // its error, the steps the program reported and the predicted energy per step, the profiled
  // kernels' time, and the clock the windows ran at (time-weighted).
  double predicted_w_lo = std::numeric_limits<double>::quiet_NaN();
  double predicted_w_hi = std::numeric_limits<double>::quiet_NaN();
  double energy_j_lo = std::numeric_limits<double>::quiet_NaN();
  double energy_j_hi = std::numeric_limits<double>::quiet_NaN();
  double measured_energy_j = std::numeric_limits<double>::quiet_NaN();
  double energy_error_pct = std::numeric_limits<double>::quiet_NaN();
  double steps = std::numeric_limits<double>::quiet_NaN();
  double energy_per_step_j = std::numeric_limits<double>::quiet_NaN();
  double kernel_time_s = std::numeric_limits<double>::quiet_NaN();
  double measured_f_core_mhz = std::numeric_limits<double>::quiet_NaN();

  bool has_interval() const {
    return std::isfinite(predicted_w_lo) && std::isfinite(predicted_w_hi);
  }
  // The measured power lies inside the interval (false when either is unknown).
  bool measured_inside() const {
    return has_interval() && std::isfinite(measured_w) && measured_w >= predicted_w_lo &&
           measured_w <= predicted_w_hi;
  }
};

struct ReportApps {
  std::string path;            // wattcal-predict --capture's table (predictions/apps.csv)
  std::string breakdown_path;  // apps_breakdown.csv; "" when absent
  std::vector<ReportApp> rows;
  // The breakdown's terms per workload (static and component-independent in greys), with the
  // measured power as markers; empty bars when there is no breakdown file.
  BreakdownChart chart;
  // The same predict run's what-if table, when it wrote one.
  ReportWhatIf what_if;

  int measured() const;
  // Mean |error_pct| over the measured workloads (NaN when none is).
  double mape_pct() const;
  // The same for the energy (energy_error_pct): how many have one, and their mean |error|.
  int energy_measured() const;
  double energy_mape_pct() const;
  // Measured workloads with an interval, and how many of them lie inside it.
  int with_interval() const;
  int inside_interval() const;
};

// The report's applications table: its header, which columns are numbers (right-aligned), and
// one row of cells per workload ("–" for an unknown cell). A column is shown when some workload
// has a value for it: predicted power and its 95% interval, measured power and the error, the
// clock predicted and the clock measured, the run's duration, predicted energy and its interval,
// measured energy and its error, steps and energy per step, the profiled kernels' time, flags.
struct AppsTable {
  std::vector<std::string> header;
  std::vector<bool> numeric;
  std::vector<std::vector<std::string>> rows;
};
AppsTable AppsTableOf(const ReportApps& apps);

// "11 of them also have measured power: MAPE 8.17%; energy over the run as it ran: energy MAPE
// 7.90% over 11." (or that none was measured).
std::string AppsMeasuredSentence(const ReportApps& apps);

// Reads a what-if table. Throws InputError naming FILE:LINE and the column for a missing column
// or a bad number.
ReportWhatIf ReadReportWhatIf(const std::string& path);

// One line per application over the settings of `setting` ("clock" or "power_limit"): its
// energy change against the run as recorded (apps_figures.cc). True when drawn (some rows).
bool WhatIfDrawable(const ReportWhatIf& what_if, const std::string& setting);
void WriteWhatIfPlot(const ReportWhatIf& what_if, const std::string& setting,
                     const std::string& title, const std::string& png_path,
                     const std::string& svg_path);

// True when some application has the run's energy (a table that gives kernel_time_s apart from
// duration_s): the energy figure can be drawn.
bool AppsEnergyDrawable(const ReportApps& apps);

// Per application: the run's predicted energy as a bar, its 95% interval as a whisker (when the
// table has one), the measured energy over the same windows as a diamond (apps_figures.cc).
void WriteAppsEnergyPlot(const ReportApps& apps, const std::string& title,
                         const std::string& png_path, const std::string& svg_path);

// True when `path` starts with wattcal-predict --capture's header.
bool IsAppPredictionsCsv(const std::string& path);

// Reads the predictions and, when `breakdown_path` is not empty, the breakdown (its workloads
// must be the predictions', in the same order). Throws InputError naming FILE:LINE and the
// column for a missing column or a bad number.
ReportApps ReadReportApps(const std::string& path, const std::string& breakdown_path);

}  // namespace wattcal
