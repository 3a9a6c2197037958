// Relative-architecture comparison (AccelWattch, MICRO'21 §7.1, Fig. 12): per workload, the
// power of GPU B relative to GPU A as estimated by a model and as measured,
//
//   rel_j = (P_B,j - P_A,j) / P_A,j        (GPU A is the denominator)
//
// which is the definition of AccelWattch's spreadsheet ("Relative Accuracy (Fig 12)",
// ../shared/datasets/accelwattch/common/relative_power_fig12.csv: its pascal_vs_volta columns
// are (P_Pascal - P_Volta) / P_Volta, i.e. A = Volta, B = Pascal). Over the workloads that
// have all four values:
//
//   mean relative power, estimated and measured:   mean_j rel_j
//   difference of the averages (points):           100 (mean est - mean meas)
//   mean |difference| per workload (points):       100 mean_j |est_j - meas_j|
//   direction agreement:                           share of workloads with
//                                                  sign(est_j) == sign(meas_j)
//
// where sign() is -1, 0 or +1 and |rel| <= direction_deadband_frac counts as 0 ("no change").
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/workload_power.h"

namespace wattcal {

struct CompareOptions {
  // Relative changes with |rel| <= this fraction count as "no change" (sign 0) when judging
  // whether estimate and measurement point the same way; 0 = the plain sign (AccelWattch).
  double direction_deadband_frac = 0.0;

  // False, with a sentence naming the field, its value and the rule broken, when invalid.
  bool Check(std::string* error) const;
};

// One workload's four powers and relative changes.
struct WorkloadRelativePower {
  std::string workload;
  double measured_a_w = 0.0;
  double measured_b_w = 0.0;
  double estimated_a_w = 0.0;
  double estimated_b_w = 0.0;
  double measured_rel_frac = 0.0;   // (meas_B - meas_A) / meas_A
  double estimated_rel_frac = 0.0;  // (est_B - est_A) / est_A
  int measured_sign = 0;            // -1, 0, +1 (with the deadband)
  int estimated_sign = 0;
  bool same_direction() const { return measured_sign == estimated_sign; }
  // 100 |est - meas|, percentage points.
  double abs_diff_pp() const;
};

struct RelativePowerComparison {
  std::string arch_a;  // the denominator
  std::string arch_b;
  CompareOptions options;
  // Workloads with all four values, in the order of the measured A file.
  std::vector<WorkloadRelativePower> workloads;
  // Workloads left out and why ("not run on B", "no estimate for A", ...), in order of first
  // appearance in measured A, measured B, estimated A, estimated B.
  std::vector<std::pair<std::string, std::string>> skipped;

  double estimated_mean_rel_pct = 0.0;
  double measured_mean_rel_pct = 0.0;
  // estimated_mean_rel_pct - measured_mean_rel_pct, percentage points (signed).
  double diff_of_means_pp = 0.0;
  double mean_abs_diff_pp = 0.0;
  double max_abs_diff_pp = 0.0;
  std::string max_abs_diff_workload;
  int same_direction_count = 0;
  double same_direction_pct = 0.0;
  // Workloads whose estimate points the other way, in workload order.
  std::vector<std::string> opposite_direction;

  int num_workloads() const { return static_cast<int>(workloads.size()); }
};

// Compares B against A. Throws InputError (naming the measured A file) when no workload has
// all four values, and OptionError when `options` fails Check().
RelativePowerComparison CompareRelativePower(const std::string& arch_a, const std::string& arch_b,
                                             const WorkloadPower& measured_a,
                                             const WorkloadPower& measured_b,
                                             const WorkloadPower& estimated_a,
                                             const WorkloadPower& estimated_b,
                                             const CompareOptions& options = {});

// The comparison as JSON: definition, arch_a, arch_b, direction_deadband_frac, the summary
// (workloads, estimated_mean_rel_pct, measured_mean_rel_pct, diff_of_means_pp,
// abs_diff_of_means_pp, mean_abs_diff_pp, max_abs_diff_pp, max_abs_diff_workload,
// same_direction_count, same_direction_pct, opposite_direction), skipped, and per_workload
// rows (workload, the four powers in W, measured_rel_pct, estimated_rel_pct, abs_diff_pp,
// same_direction), keys in this order. Doubles in shortest round-trip form.
void to_json(nlohmann::ordered_json& j, const RelativePowerComparison& c);
// One per_workload row.
void to_json(nlohmann::ordered_json& j, const WorkloadRelativePower& r);

// One row per workload:
//   workload,measured_a_w,measured_b_w,estimated_a_w,estimated_b_w,measured_rel_pct,
//   estimated_rel_pct,abs_diff_pp,same_direction
// powers and percentages with %.17g (exact), same_direction 1/0; names quoted (RFC 4180) only
// when they must be.
std::string ComparisonToCsv(const RelativePowerComparison& c);

// A few lines for the terminal: averages, their difference, direction agreement.
std::string FormatComparison(const RelativePowerComparison& c);

}  // namespace wattcal
