// The applications of a run in its report: wattcal-predict --capture's table (one row per
// workload: predicted power, energy over the run as it ran, flags, and measured power and energy
// where the capture had a log) and its per-component breakdown (--breakdown-out) as stacked bars.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "report/report_figures.h"

namespace wattcal {

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
  double measured_energy_j = std::numeric_limits<double>::quiet_NaN();
  double energy_error_pct = std::numeric_limits<double>::quiet_NaN();
  int64_t steps = 0;  // 0 = not reported
  double energy_per_step_j = std::numeric_limits<double>::quiet_NaN();
  double kernel_time_s = std::numeric_limits<double>::quiet_NaN();
  std::string measured_flags;
  double f_core_mhz = 0.0;
  int windows = 0;
};

struct ReportApps {
  std::string path;            // wattcal-predict --capture's table (predictions/apps.csv)
  std::string breakdown_path;  // apps_breakdown.csv; "" when absent
  std::vector<ReportApp> rows;
  // The breakdown's terms per workload (static and component-independent in greys), with the
  // measured power as markers; empty bars when there is no breakdown file.
  BreakdownChart chart;

  int measured() const;
  // Mean |error_pct| over the measured workloads (NaN when none is).
  double mape_pct() const;
  // The same for the energy (energy_error_pct).
  int energy_measured() const;
  double energy_mape_pct() const;
};

// The report's applications table: its header, which columns are numbers (right-aligned), and
// one row of cells per workload ("–" for an unknown cell): predicted and measured power, the
// run's duration, predicted and measured energy with their errors, steps and energy per step.
struct AppsTable {
  std::vector<std::string> header;
  std::vector<bool> numeric;
  std::vector<std::vector<std::string>> rows;
};
AppsTable AppsTableOf(const ReportApps& apps);

// "11 of them also have measured power: MAPE 8.17%; energy over the run as it ran: MAPE 7.90%."
// (or that none was measured).
std::string AppsMeasuredSentence(const ReportApps& apps);

// True when `path` starts with wattcal-predict --capture's header.
bool IsAppPredictionsCsv(const std::string& path);

// Reads the predictions and, when `breakdown_path` is not empty, the breakdown (its workloads
// must be the predictions', in the same order). Throws InputError naming FILE:LINE and the
// column for a missing column or a bad number.
ReportApps ReadReportApps(const std::string& path, const std::string& breakdown_path);

}  // namespace wattcal
