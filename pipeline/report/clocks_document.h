// The text and tables of the activity-free DVFS report (report/clocks_report.h): what was fitted,
// how well it predicts across clocks, which clock it chooses and what that costs, the constant
// power; every number computed from the run's results.
#pragma once

#include <string>
#include <vector>

#include "report/clocks_report.h"
#include "report/document.h"

namespace wattcal {

// One held-out workload's CV error (model and P ~ f), its fold and points.
struct ClockWorkloadError {
  std::string workload;
  int fold = 0;
  int points = 0;
  double mape_pct = 0.0;
  double proportional_pct = 0.0;
};

// Per workload, best predicted first.
std::vector<ClockWorkloadError> ClockErrorsByWorkload(const ClockCvResult& cv);

struct ClocksFigure {
  std::string stem;  // figures/<stem>.{png,svg}
  std::string title;
};

Document ClocksDocument(const ClocksReportInput& in, const std::vector<ClockWorkloadError>& errors,
                        const std::vector<ClocksFigure>& figures);

}  // namespace wattcal
