// wattcal-port: carry a model to another GPU of the same architecture (TPDS'19 §4.6, Eq. 11) or
// power estimates / a model to another technology node (AccelWattch MICRO'21 §7.1).
//
//   wattcal-port gpu --model BASE.json --base-gpu BASE.json --target-gpu TARGET.json
//                    [--constant-scaling components|idle-power|none]
//                    [--base-idle-w W | --base-idle-from CORPUS]
//                    [--target-idle-w W | --target-idle-from CORPUS]
//                    --out PORTED.json [--report PORT.json]
//   wattcal-port project --corpus TRAIN.csv --target-gpu TARGET.json --out TRAIN_TARGET.csv
//   wattcal-port node (--estimates PER_KERNEL.csv [--reference SCALED.csv] | --model M.json)
//                     [--node-table technology_nodes.csv --from-node 12nm --to-node 16nm]
//                     [--dynamic-factor X] [--static-factor X] [--idle-sm-factor X]
//                     [--board-constant-factor X] --out OUT [--report NODE.json]
//                     [--totals-out TOTALS.csv]
#include "commands.h"

#include "usecases/port_stage.h"
#include "stage_common.h"
#include "stage_options.h"

namespace wattcal {

void AddPortOptions(CLI::App* app, PortStageOptions* o) {
  app->require_subcommand(1);
  app->fallthrough();

  // ---- gpu
  CLI::App* gpu =
      app->add_subcommand("gpu", "Port a model to another GPU of the same architecture");
  gpu->add_option("--model", o->gpu.model_path, "Base model (wattcal JSON or gpmTOOL model file)")
      ->required()
      ->check(CLI::ExistingFile);
  gpu->add_option("--base-gpu", o->gpu.base_gpu_path,
                  "Description of the GPU the model was trained on")
      ->required()
      ->check(CLI::ExistingFile);
  gpu->add_option("--target-gpu", o->gpu.target_gpu_path, "Description of the target GPU")
      ->required()
      ->check(CLI::ExistingFile);
  AddEnumOption(
      gpu, "--constant-scaling", &o->gpu.constant_scaling,
      {ConstantScaling::kIdlePower, ConstantScaling::kComponentCounts, ConstantScaling::kNone},
      ConstantScalingName,
      "alpha0/alpha1: components (domain count "
      "ratio), idle-power (Eq. 11, needs the measured idle powers; the paper's better "
      "choice) or none");
  gpu->add_option("--base-idle-w", o->gpu.base_idle_w, "Measured idle power of the base GPU, W");
  gpu->add_option("--base-idle-from", o->gpu.base_idle_from,
                  "Take the base idle power from this corpus's "
                  "idle benchmark (all utilisations 0) at the default pair")
      ->check(CLI::ExistingFile);
  gpu->add_option("--target-idle-w", o->gpu.target_idle_w,
                  "Measured idle power of the target GPU, W (TPDS: "
                  "65 W for the GTX 980)");
  gpu->add_option("--target-idle-from", o->gpu.target_idle_from,
                  "Take the target idle power from this "
                  "corpus's idle benchmark")
      ->check(CLI::ExistingFile);
  gpu->add_option("--out", o->gpu.out_path, "Ported model to write (JSON)")
      ->check(OutputFile())
      ->required();
  gpu->add_option("--report", o->gpu.report_path,
                  "Also write what was scaled and by how much (JSON)")
      ->check(OutputFile());

  // ---- project
  CLI::App* project = app->add_subcommand(
      "project", "Restrict a training corpus to the target GPU's components (tidy CSV)");
  project->add_option("--corpus", o->project.corpus_path, "Training corpus (gpmTOOL or tidy)")
      ->required()
      ->check(CLI::ExistingFile);
  project->add_option("--target-gpu", o->project.target_gpu_path, "Description of the target GPU")
      ->required()
      ->check(CLI::ExistingFile);
  project->add_option("--out", o->project.out_path, "Corpus to write (tidy CSV)")
      ->check(OutputFile())
      ->required();

  // ---- node
  CLI::App* node = app->add_subcommand(
      "node", "Scale per-kernel estimates or a model to another technology node");
  node->add_option("--estimates", o->node.estimates_path,
                   "Per-kernel estimates (AccelWattch "
                   "per_kernel_*.csv or tidy)")
      ->check(CLI::ExistingFile);
  node->add_option("--reference", o->node.reference_path,
                   "Someone else's scaled version of --estimates, to "
                   "derive and check its factors")
      ->check(CLI::ExistingFile);
  node->add_option("--model", o->node.model_path, "A wattcal/gpmTOOL model instead of --estimates")
      ->check(CLI::ExistingFile);
  node->add_option("--node-table", o->node.node_table_path,
                   "Node table "
                   "(microbench_specs/technology_nodes.csv)")
      ->check(CLI::ExistingFile);
  node->add_option("--from-node", o->node.scaling.from_node, "Node the estimates are for");
  node->add_option("--to-node", o->node.scaling.to_node, "Node to scale them to");
  node->add_option("--dynamic-factor", o->node.scaling.dynamic_factor,
                   "Factor on dynamic power instead of "
                   "the table's C V^2 ratio");
  node->add_option("--static-factor", o->node.scaling.static_factor,
                   "Factor on static power instead of the "
                   "table's V I_leak ratio");
  node->add_option("--idle-sm-factor", o->node.scaling.idle_sm_factor,
                   "Factor on the idle SMs' power "
                   "(default: the static factor)");
  node->add_option("--board-constant-factor", o->node.scaling.board_constant_factor,
                   "Factor on the board's "
                   "constant power (AccelWattch: 1.7 for Turing vs. Volta)")
      ->capture_default_str();
  node->add_option("--out", o->node.out_path, "Scaled estimates (tidy CSV) or model (JSON)")
      ->check(OutputFile())
      ->required();
  node->add_option("--report", o->node.report_path, "Also write the factors and checks (JSON)")
      ->check(OutputFile());
  node->add_option("--totals-out", o->node.totals_out_path,
                   "--estimates: also write a table of each kernel's "
                   "scaled total power, columns kernel,power_w (input of wattcal-compare)")
      ->check(OutputFile());
}

int PortCommand(int argc, char** argv) {
  CLI::App app{
      "Carry a power model to another GPU (TPDS §4.6) or technology node "
      "(AccelWattch §7.1)",
      "wattcal-port"};
  AddLoggingOptions(&app);
  PortStageOptions o;

  AddPortOptions(&app, &o);

  return RunStageMain(&app, argc, argv, [&] {
    o.subcommand = app.get_subcommands().front()->get_name();  // require_subcommand(1)
    auto r = RunPortStage(o);
    std::cout << r.summary;
    return r.exit_code;
  });
}

}  // namespace wattcal
