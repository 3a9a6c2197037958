#include "validate/workload_errors.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

namespace wattcal {

std::vector<WorkloadError> ComputeWorkloadErrors(const std::vector<PredictionRow>& rows) {
  std::map<std::string, WorkloadError> by_name;
  for (const PredictionRow& row : rows) {
    if (!std::isfinite(row.measured_w) || !(row.measured_w > 0.0) ||
        !std::isfinite(row.predicted_w)) {
      throw std::invalid_argument(fmt::format(
          "per-workload error: workload '{}' (line {}) has measured_w = {}, predicted_w = {}; "
          "measured power must be > 0 and both finite",
          row.benchmark, row.line, row.measured_w, row.predicted_w));
    }
    WorkloadError& e = by_name[row.benchmark];
    e.workload = row.benchmark;
    ++e.points;
    e.measured_w += row.measured_w;
    e.predicted_w += row.predicted_w;
    e.error_pct += row.error_pct();
    e.mape_pct += std::abs(row.error_pct());
    e.max_abs_error_pct = std::max(e.max_abs_error_pct, std::abs(row.error_pct()));
  }
  std::vector<WorkloadError> errors;
  errors.reserve(by_name.size());
  for (auto& [name, e] : by_name) {
    const double n = static_cast<double>(e.points);
    e.measured_w /= n;
    e.predicted_w /= n;
    e.error_pct /= n;
    e.abs_error_pct = std::abs(e.error_pct);
    e.mape_pct /= n;
    errors.push_back(std::move(e));
  }
  std::stable_sort(errors.begin(), errors.end(),
                   [](const WorkloadError& a, const WorkloadError& b) {
                     return a.abs_error_pct > b.abs_error_pct;  // map order breaks ties by name
                   });
  return errors;
}

std::string WorkloadErrorsMarkdown(const std::vector<WorkloadError>& errors) {
  const bool several = std::any_of(errors.begin(), errors.end(),
                                   [](const WorkloadError& e) { return e.points > 1; });
  std::string s = "| workload | points | measured W | predicted W | error % | abs error % |";
  s += several ? " MAPE % | max abs error % |\n" : "\n";
  s += several ? "|---|---:|---:|---:|---:|---:|---:|---:|\n" : "|---|---:|---:|---:|---:|---:|\n";
  for (const WorkloadError& e : errors) {
    std::string name;
    for (char c : e.workload) name += c == '|' ? std::string("\\|") : std::string(1, c);
    s += fmt::format("| {} | {} | {:.2f} | {:.2f} | {:+.2f} | {:.2f} |", name, e.points,
                     e.measured_w, e.predicted_w, e.error_pct, e.abs_error_pct);
    s += several ? fmt::format(" {:.2f} | {:.2f} |\n", e.mape_pct, e.max_abs_error_pct) : "\n";
  }
  return s;
}

}  // namespace wattcal
