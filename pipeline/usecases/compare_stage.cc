#include "usecases/compare_stage.h"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compare/relative_power.h"
#include "compare/workload_power.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"

namespace wattcal {

std::string CompareStageOptions::MeasuredAPath() const {
  return measured_a_path.empty() ? measured_path : measured_a_path;
}
std::string CompareStageOptions::MeasuredBPath() const {
  return measured_b_path.empty() ? measured_path : measured_b_path;
}

CompareOptions CompareStageOptions::Check() const {
  if (arch_a.empty()) throw OptionError("--arch-a is required");
  if (arch_b.empty()) throw OptionError("--arch-b is required");
  if (estimated_a_path.empty()) throw OptionError("--estimated-a is required");
  if (estimated_b_path.empty()) throw OptionError("--estimated-b is required");
  if (out_path.empty()) throw OptionError("--out is required");
  if (MeasuredAPath().empty() || MeasuredBPath().empty()) {
    throw OptionError("--measured (or both --measured-a and --measured-b) is required");
  }
  if (!std::isfinite(max_diff_pp) || max_diff_pp < 0.0) {
    throw OptionError(fmt::format("--max-diff-pp = {} must be >= 0", max_diff_pp));
  }
  CompareOptions options;
  options.direction_deadband_frac = direction_deadband_pct / 100.0;
  std::string error;
  if (!options.Check(&error)) {
    throw OptionError(
        fmt::format("--direction-deadband-pct = {}: {}", direction_deadband_pct, error));
  }
  return options;
}

CompareStageReport RunCompareStage(const CompareStageOptions& o) {
  const CompareOptions options = o.Check();
  const std::string measured_a_path = o.MeasuredAPath();
  const std::string measured_b_path = o.MeasuredBPath();
  const WorkloadPower measured_a =
      ReadWorkloadPower(measured_a_path, o.measured_column.empty() ? o.arch_a : o.measured_column);
  const WorkloadPower measured_b =
      ReadWorkloadPower(measured_b_path, o.measured_column.empty() ? o.arch_b : o.measured_column);
  const WorkloadPower estimated_a = ReadWorkloadPower(o.estimated_a_path, o.estimated_column);
  const WorkloadPower estimated_b = ReadWorkloadPower(o.estimated_b_path, o.estimated_column);
  const RelativePowerComparison comparison = CompareRelativePower(
      o.arch_a, o.arch_b, measured_a, measured_b, estimated_a, estimated_b, options);

  const std::vector<std::string> inputs = {measured_a_path, measured_b_path, o.estimated_a_path,
                                           o.estimated_b_path};
  const nlohmann::json manifest_options = {
      {"arch_a", o.arch_a},
      {"arch_b", o.arch_b},
      {"measured_a_column", measured_a.column},
      {"measured_b_column", measured_b.column},
      {"estimated_a_column", estimated_a.column},
      {"estimated_b_column", estimated_b.column},
      {"direction_deadband_frac", options.direction_deadband_frac},
      {"max_diff_pp", o.max_diff_pp}};
  OutputSet outputs;
  nlohmann::ordered_json result = comparison;
  // Where each side's numbers came from, for the report to say which model each figure belongs to.
  result["sources"] = {{"measured_a", measured_a_path},
                       {"measured_b", measured_b_path},
                       {"estimated_a", o.estimated_a_path},
                       {"estimated_b", o.estimated_b_path}};
  outputs.StageText(o.out_path, DumpJson(result));
  outputs.StageProvenance(o.out_path, "compare", inputs, manifest_options, "comparison");
  if (!o.table_path.empty()) {
    outputs.StageText(o.table_path, ComparisonToCsv(comparison));
    outputs.StageProvenance(o.table_path, "compare", inputs, manifest_options, "table");
  }
  outputs.Commit();
  LogInfo(FormatComparison(comparison));
  for (const auto& [workload, why] : comparison.skipped) {
    LogInfo(fmt::format("skipped {}: {}", workload, why));
  }
  LogInfo("wrote " + o.out_path + (o.table_path.empty() ? "" : " and " + o.table_path));
  CompareStageReport report;
  report.written = outputs.Outputs();
  report.diff_of_means_pp = comparison.diff_of_means_pp;
  if (o.max_diff_pp > 0.0 && std::fabs(comparison.diff_of_means_pp) > o.max_diff_pp) {
    LogWarning(
        fmt::format("the difference of the averages, {:.3f} points, exceeds "
                    "--max-diff-pp {}",
                    std::fabs(comparison.diff_of_means_pp), o.max_diff_pp));
    report.exit_code = static_cast<int>(kExitFit);
  }
  return report;
}

}  // namespace wattcal
