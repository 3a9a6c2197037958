// wattcal-compare: relative-architecture comparison (AccelWattch MICRO'21 §7.1, Fig. 12): per
// workload, the power of GPU B relative to GPU A, (P_B - P_A) / P_A, estimated vs. measured;
// the difference of the averages; the share of workloads pointing the same way.
//
//   wattcal-compare --measured MEASURED.csv --arch-a volta_qv100 --arch-b pascal_titanx
//                   --estimated-a A.csv --estimated-b B.csv --out COMPARE.json
//                   [--table COMPARE.csv] [--estimated-column sim_total_W]
//                   [--measured-a FILE] [--measured-b FILE] [--direction-deadband-pct P]
//                   [--max-diff-pp D]
#include "commands.h"

#include "usecases/compare_stage.h"
#include "stage_common.h"
#include "stage_options.h"

namespace wattcal {

void AddCompareOptions(CLI::App* app, CompareStageOptions* o) {
  app->add_option(
         "--measured", o->measured_path,
         "Measured power of both GPUs: a CSV keyed by kernel_id "
         "with one <arch>_W column per GPU (empty = not run), e.g. measured_power_by_arch.csv")
      ->check(CLI::ExistingFile);
  app->add_option("--measured-a", o->measured_a_path,
                  "Measured power of GPU A (instead of --measured)")
      ->check(CLI::ExistingFile);
  app->add_option("--measured-b", o->measured_b_path,
                  "Measured power of GPU B (instead of --measured)")
      ->check(CLI::ExistingFile);
  app->add_option("--arch-a", o->arch_a,
                  "GPU A, the denominator: the measured column's name without its "
                  "unit (volta_qv100 reads volta_qv100_W)")
      ->required();
  app->add_option("--arch-b", o->arch_b, "GPU B, compared against A")->required();
  app->add_option("--estimated-a", o->estimated_a_path,
                  "Estimated power of GPU A: a per_kernel_*.csv "
                  "(sim_total_W) or kernel,power_w")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--estimated-b", o->estimated_b_path, "Estimated power of GPU B (same forms)")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--estimated-column", o->estimated_column,
                  "Column of the estimates (default: sim_total_W, "
                  "else power_w, else power_mw)");
  app->add_option("--measured-column", o->measured_column,
                  "Column of the measured files (default: the GPU's "
                  "name, --arch-a/--arch-b; measured_w reads validate's predictions CSVs)");
  app->add_option("--out", o->out_path, "Comparison to write (JSON)")
      ->check(OutputFile())
      ->required();
  app->add_option("--table", o->table_path, "Also write the per-workload table (CSV)")
      ->check(OutputFile());
  app->add_option("--direction-deadband-pct", o->direction_deadband_pct,
                  "Relative changes within +-this "
                  "many percent count as 'no change' when judging direction (0: the plain sign)")
      ->capture_default_str();
  app->add_option("--max-diff-pp", o->max_diff_pp,
                  "Exit with status 3 when |difference of the averages| "
                  "exceeds this many points (0: no threshold)")
      ->capture_default_str();
}

int CompareCommand(int argc, char** argv) {
  CLI::App app{
      "Power of GPU B relative to GPU A per workload, estimated vs. measured "
      "(AccelWattch Fig. 12)",
      "wattcal-compare"};
  CompareStageOptions o;
  AddCompareOptions(&app, &o);
  AddLoggingOptions(&app);
  return RunStageMain(&app, argc, argv, [&] {
    auto r = RunCompareStage(o);
    std::cout << r.summary;
    return r.exit_code;
  });
}

}  // namespace wattcal
