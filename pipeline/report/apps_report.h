// The applications of a run in its report: wattcal-predict --capture's table (one row per
// workload: predicted power, energy over its kernel time, flags, and measured power where the
// capture had a log) and its per-component breakdown (--breakdown-out) as stacked bars.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "report/report_figures.h"

namespace wattcal {

struct ReportApp {
  std::string workload;
  double predicted_w = 0.0;
  // The 95% prediction interval, W (NaN when the model holds none).
  double predicted_w_lo = std::numeric_limits<double>::quiet_NaN();
  double predicted_w_hi = std::numeric_limits<double>::quiet_NaN();
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
};

// True when `path` starts with wattcal-predict --capture's header.
bool IsAppPredictionsCsv(const std::string& path);

// Reads the predictions and, when `breakdown_path` is not empty, the breakdown (its workloads
// must be the predictions', in the same order). Throws InputError naming FILE:LINE and the
// column for a missing column or a bad number.
ReportApps ReadReportApps(const std::string& path, const std::string& breakdown_path);

}  // namespace wattcal
