// wattcal-compare: relative-architecture comparison (AccelWattch MICRO'21 §7.1, Fig. 12): per
// workload, the power of GPU B relative to GPU A, (P_B - P_A) / P_A, estimated vs. measured;
// the difference of the averages; the share of workloads pointing the same way.
//
//   wattcal-compare --measured MEASURED.csv --arch-a volta_qv100 --arch-b pascal_titanx
//                   --estimated-a A.csv --estimated-b B.csv --out COMPARE.json
//                   [--table COMPARE.csv] [--estimated-column sim_total_W]
//                   [--measured-a FILE] [--measured-b FILE] [--direction-deadband-pct P]
//                   [--max-diff-pp D]
#include <fmt/format.h>

#include <cmath>

#include "compare/relative_power.h"
#include "compare/workload_power.h"
#include "stage_common.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"

using namespace wattcal;

int main(int argc, char** argv) {
  CLI::App app{"Power of GPU B relative to GPU A per workload, estimated vs. measured "
               "(AccelWattch Fig. 12)",
               "wattcal-compare"};
  std::string measured_path, measured_a_path, measured_b_path, arch_a, arch_b;
  std::string estimated_a_path, estimated_b_path, estimated_column, out_path, table_path;
  double deadband_pct = 0.0, max_diff_pp = 0.0;
  app.add_option("--measured", measured_path,
                 "Measured power of both GPUs: a CSV keyed by kernel_id with one <arch>_W column "
                 "per GPU (empty = not run), e.g. measured_power_by_arch.csv")
      ->check(CLI::ExistingFile);
  app.add_option("--measured-a", measured_a_path, "Measured power of GPU A (instead of --measured)")
      ->check(CLI::ExistingFile);
  app.add_option("--measured-b", measured_b_path, "Measured power of GPU B (instead of --measured)")
      ->check(CLI::ExistingFile);
  app.add_option("--arch-a", arch_a,
                 "GPU A, the denominator: the measured column's name without its unit "
                 "(volta_qv100 reads volta_qv100_W)")
      ->required();
  app.add_option("--arch-b", arch_b, "GPU B, compared against A")->required();
  app.add_option("--estimated-a", estimated_a_path,
                 "Estimated power of GPU A: a per_kernel_*.csv (sim_total_W) or kernel,power_w")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--estimated-b", estimated_b_path, "Estimated power of GPU B (same forms)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--estimated-column", estimated_column,
                 "Column of the estimates (default: sim_total_W, else power_w, else power_mw)");
  std::string measured_column;
  app.add_option("--measured-column", measured_column,
                 "Column of the measured files (default: the GPU's name, --arch-a/--arch-b; "
                 "measured_w reads validate's predictions CSVs)");
  app.add_option("--out", out_path, "Comparison to write (JSON)")->check(OutputFile())->required();
  app.add_option("--table", table_path, "Also write the per-workload table (CSV)")
      ->check(OutputFile());
  app.add_option("--direction-deadband-pct", deadband_pct,
                 "Relative changes within +-this many percent count as 'no change' when judging "
                 "direction (0: the plain sign)")
      ->capture_default_str();
  app.add_option("--max-diff-pp", max_diff_pp,
                 "Exit with status 3 when |difference of the averages| exceeds this many points "
                 "(0: no threshold)")
      ->capture_default_str();
  AddLoggingOptions(&app);

  return RunStageMain(&app, argc, argv, [&]() {
    if (measured_a_path.empty()) measured_a_path = measured_path;
    if (measured_b_path.empty()) measured_b_path = measured_path;
    if (measured_a_path.empty() || measured_b_path.empty()) {
      throw OptionError("--measured (or both --measured-a and --measured-b) is required");
    }
    if (!std::isfinite(max_diff_pp) || max_diff_pp < 0.0) {
      throw OptionError(fmt::format("--max-diff-pp = {} must be >= 0", max_diff_pp));
    }
    CompareOptions options;
    options.direction_deadband_frac = deadband_pct / 100.0;
    std::string error;
    if (!options.Check(&error)) {
      throw OptionError(fmt::format("--direction-deadband-pct = {}: {}", deadband_pct, error));
    }

    const WorkloadPower measured_a =
        ReadWorkloadPower(measured_a_path, measured_column.empty() ? arch_a : measured_column);
    const WorkloadPower measured_b =
        ReadWorkloadPower(measured_b_path, measured_column.empty() ? arch_b : measured_column);
    const WorkloadPower estimated_a = ReadWorkloadPower(estimated_a_path, estimated_column);
    const WorkloadPower estimated_b = ReadWorkloadPower(estimated_b_path, estimated_column);
    const RelativePowerComparison comparison = CompareRelativePower(
        arch_a, arch_b, measured_a, measured_b, estimated_a, estimated_b, options);

    const std::vector<std::string> inputs = {measured_a_path, measured_b_path, estimated_a_path,
                                             estimated_b_path};
    const nlohmann::json manifest_options = {
        {"arch_a", arch_a},
        {"arch_b", arch_b},
        {"measured_a_column", measured_a.column},
        {"measured_b_column", measured_b.column},
        {"estimated_a_column", estimated_a.column},
        {"estimated_b_column", estimated_b.column},
        {"direction_deadband_frac", options.direction_deadband_frac},
        {"max_diff_pp", max_diff_pp}};
    OutputSet outputs;
    outputs.StageText(out_path, DumpJson(ComparisonToJson(comparison)));
    outputs.StageManifest(out_path, "compare", inputs, manifest_options);
    if (!table_path.empty()) {
      outputs.StageText(table_path, ComparisonToCsv(comparison));
      outputs.StageManifest(table_path, "compare", inputs, manifest_options);
    }
    outputs.Commit();
    LogInfo(FormatComparison(comparison));
    for (const auto& [workload, why] : comparison.skipped) {
      LogInfo(fmt::format("skipped {}: {}", workload, why));
    }
    LogInfo("wrote " + out_path + (table_path.empty() ? "" : " and " + table_path));
    if (max_diff_pp > 0.0 && std::fabs(comparison.diff_of_means_pp) > max_diff_pp) {
      LogWarning(fmt::format("the difference of the averages, {:.3f} points, exceeds "
                             "--max-diff-pp {}",
                             std::fabs(comparison.diff_of_means_pp), max_diff_pp));
      return static_cast<int>(kExitFit);
    }
    return static_cast<int>(kExitOk);
  });
}
