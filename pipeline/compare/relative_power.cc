#include "compare/relative_power.h"

#include <fmt/format.h>

#include <cmath>
#include <set>

#include "util/csv_field.h"
#include "util/errors.h"
#include "util/option_rule.h"

namespace wattcal {
namespace {

int Sign(double rel, double deadband) {
  if (std::fabs(rel) <= deadband) return 0;
  return rel > 0.0 ? 1 : -1;
}

}  // namespace

bool CompareOptions::Check(std::string* error) const {
  if (!std::isfinite(direction_deadband_frac) || direction_deadband_frac < 0.0)
    return RejectOption(error, "direction_deadband_frac = {} must be a finite fraction >= 0",
                        direction_deadband_frac);
  return true;
}

double WorkloadRelativePower::abs_diff_pp() const {
  return 100.0 * std::fabs(estimated_rel_frac - measured_rel_frac);
}

RelativePowerComparison CompareRelativePower(const std::string& arch_a, const std::string& arch_b,
                                             const WorkloadPower& measured_a,
                                             const WorkloadPower& measured_b,
                                             const WorkloadPower& estimated_a,
                                             const WorkloadPower& estimated_b,
                                             const CompareOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  RelativePowerComparison c;
  c.arch_a = arch_a;
  c.arch_b = arch_b;
  c.options = options;

  // Every workload named anywhere, in order of first appearance: the compared ones (all in
  // measured A) thus keep the measured A file's order.
  std::vector<std::string> order;
  std::set<std::string> named;
  for (const WorkloadPower* table : {&measured_a, &measured_b, &estimated_a, &estimated_b}) {
    for (const std::string& w : table->workloads) {
      if (named.insert(w).second) order.push_back(w);
    }
    for (const std::string& w : table->not_run) {
      if (named.insert(w).second) order.push_back(w);
    }
  }
  for (const std::string& w : order) {
    const int ma = measured_a.Find(w), mb = measured_b.Find(w);
    const int ea = estimated_a.Find(w), eb = estimated_b.Find(w);
    std::vector<std::string> missing;
    if (ma < 0) missing.push_back("no measurement on " + arch_a);
    if (mb < 0) missing.push_back("no measurement on " + arch_b);
    if (ea < 0) missing.push_back("no estimate for " + arch_a);
    if (eb < 0) missing.push_back("no estimate for " + arch_b);
    if (!missing.empty()) {
      std::string why;
      for (const std::string& m : missing) why += (why.empty() ? "" : "; ") + m;
      c.skipped.emplace_back(w, why);
      continue;
    }
    WorkloadRelativePower r;
    r.workload = w;
    r.measured_a_w = measured_a.power_w[ma];
    r.measured_b_w = measured_b.power_w[mb];
    r.estimated_a_w = estimated_a.power_w[ea];
    r.estimated_b_w = estimated_b.power_w[eb];
    r.measured_rel_frac = (r.measured_b_w - r.measured_a_w) / r.measured_a_w;
    r.estimated_rel_frac = (r.estimated_b_w - r.estimated_a_w) / r.estimated_a_w;
    r.measured_sign = Sign(r.measured_rel_frac, options.direction_deadband_frac);
    r.estimated_sign = Sign(r.estimated_rel_frac, options.direction_deadband_frac);
    c.workloads.push_back(r);
  }
  if (c.workloads.empty()) {
    throw InputError(measured_a.path, 0, measured_a.column,
                     fmt::format("no workload has a measurement on both {} and {} and an "
                                 "estimate for both (see the other inputs' workload names)",
                                 arch_a, arch_b));
  }

  double sum_est = 0.0, sum_meas = 0.0, sum_abs = 0.0;
  for (const WorkloadRelativePower& r : c.workloads) {
    sum_est += r.estimated_rel_frac;
    sum_meas += r.measured_rel_frac;
    sum_abs += r.abs_diff_pp();
    if (r.abs_diff_pp() > c.max_abs_diff_pp || c.max_abs_diff_workload.empty()) {
      c.max_abs_diff_pp = r.abs_diff_pp();
      c.max_abs_diff_workload = r.workload;
    }
    if (r.same_direction()) {
      ++c.same_direction_count;
    } else {
      c.opposite_direction.push_back(r.workload);
    }
  }
  const double n = static_cast<double>(c.workloads.size());
  c.estimated_mean_rel_pct = 100.0 * sum_est / n;
  c.measured_mean_rel_pct = 100.0 * sum_meas / n;
  c.diff_of_means_pp = c.estimated_mean_rel_pct - c.measured_mean_rel_pct;
  c.mean_abs_diff_pp = sum_abs / n;
  c.same_direction_pct = 100.0 * c.same_direction_count / n;
  return c;
}

void to_json(nlohmann::ordered_json& j, const RelativePowerComparison& c) {
  j = nlohmann::ordered_json::object();
  j["definition"] = "rel = (P_B - P_A) / P_A per workload; A = arch_a is the denominator";
  j["arch_a"] = c.arch_a;
  j["arch_b"] = c.arch_b;
  j["direction_deadband_frac"] = c.options.direction_deadband_frac;
  j["workloads"] = c.num_workloads();
  j["estimated_mean_rel_pct"] = c.estimated_mean_rel_pct;
  j["measured_mean_rel_pct"] = c.measured_mean_rel_pct;
  j["diff_of_means_pp"] = c.diff_of_means_pp;
  j["abs_diff_of_means_pp"] = std::fabs(c.diff_of_means_pp);
  j["mean_abs_diff_pp"] = c.mean_abs_diff_pp;
  j["max_abs_diff_pp"] = c.max_abs_diff_pp;
  j["max_abs_diff_workload"] = c.max_abs_diff_workload;
  j["same_direction_count"] = c.same_direction_count;
  j["same_direction_pct"] = c.same_direction_pct;
  j["opposite_direction"] = c.opposite_direction;
  nlohmann::ordered_json skipped = nlohmann::ordered_json::array();
  for (const auto& [workload, why] : c.skipped) {
    nlohmann::ordered_json entry = nlohmann::ordered_json::object();
    entry["workload"] = workload;
    entry["reason"] = why;
    skipped.push_back(entry);
  }
  j["skipped"] = skipped;
  j["per_workload"] = c.workloads;
}

void to_json(nlohmann::ordered_json& row, const WorkloadRelativePower& r) {
  row = nlohmann::ordered_json::object();
  row["workload"] = r.workload;
  row["measured_a_w"] = r.measured_a_w;
  row["measured_b_w"] = r.measured_b_w;
  row["estimated_a_w"] = r.estimated_a_w;
  row["estimated_b_w"] = r.estimated_b_w;
  row["measured_rel_pct"] = 100.0 * r.measured_rel_frac;
  row["estimated_rel_pct"] = 100.0 * r.estimated_rel_frac;
  row["abs_diff_pp"] = r.abs_diff_pp();
  row["same_direction"] = r.same_direction();
}

std::string ComparisonToCsv(const RelativePowerComparison& c) {
  std::string out =
      "workload,measured_a_w,measured_b_w,estimated_a_w,estimated_b_w,measured_rel_pct,"
      "estimated_rel_pct,abs_diff_pp,same_direction\n";
  for (const WorkloadRelativePower& r : c.workloads) {
    out += fmt::format(
        "{},{},{},{},{},{},{},{},{}\n", CsvField(r.workload), ExactNumber(r.measured_a_w),
        ExactNumber(r.measured_b_w), ExactNumber(r.estimated_a_w), ExactNumber(r.estimated_b_w),
        ExactNumber(100.0 * r.measured_rel_frac), ExactNumber(100.0 * r.estimated_rel_frac),
        ExactNumber(r.abs_diff_pp()), r.same_direction() ? 1 : 0);
  }
  return out;
}

std::string FormatComparison(const RelativePowerComparison& c) {
  std::string out = fmt::format(
      "{} relative to {} over {} workloads ({} skipped): estimated {:+.2f}%, measured {:+.2f}%, "
      "difference of the averages {:.2f} points; per workload |difference| mean {:.2f}, max "
      "{:.2f} points ({}); same direction {}/{} = {:.1f}%",
      c.arch_b, c.arch_a, c.num_workloads(), c.skipped.size(), c.estimated_mean_rel_pct,
      c.measured_mean_rel_pct, std::fabs(c.diff_of_means_pp), c.mean_abs_diff_pp, c.max_abs_diff_pp,
      c.max_abs_diff_workload, c.same_direction_count, c.num_workloads(), c.same_direction_pct);
  if (!c.opposite_direction.empty()) {
    std::string list;
    for (const std::string& w : c.opposite_direction) list += (list.empty() ? "" : ", ") + w;
    out += "; opposite: " + list;
  }
  return out;
}

}  // namespace wattcal
