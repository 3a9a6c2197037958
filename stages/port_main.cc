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
#include <fmt/format.h>

#include <memory>

#include "io/corpus_io.h"
#include "io/gpu_description.h"
#include "model/model_io.h"
#include "port/estimate_table.h"
#include "port/gpu_port.h"
#include "port/node_port.h"
#include "port/technology_node.h"
#include "stage_common.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"

using namespace wattcal;

namespace {

// One of "--X-idle-w W" or "--X-idle-from CORPUS" (idle-power only): the idle power in W.
double IdlePowerW(const std::string& which, double watts, const std::string& corpus_path,
                  std::vector<std::string>* inputs) {
  if (watts != 0.0 && !corpus_path.empty()) {
    throw OptionError(fmt::format("give --{0}-idle-w or --{0}-idle-from, not both", which));
  }
  if (!corpus_path.empty()) {
    inputs->push_back(corpus_path);
    const double idle_w = IdlePowerAtDefaultW(ReadCorpus(corpus_path));
    LogInfo(fmt::format("{} idle power at the default pair: {:.4f} W (from {})", which, idle_w,
                        corpus_path));
    return idle_w;
  }
  if (watts == 0.0) {
    throw OptionError(fmt::format("--constant-scaling idle-power needs --{0}-idle-w W or "
                                  "--{0}-idle-from CORPUS (TPDS Eq. 11)",
                                  which));
  }
  return watts;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Carry a power model to another GPU (TPDS §4.6) or technology node "
               "(AccelWattch §7.1)",
               "wattcal-port"};
  app.require_subcommand(1);
  app.fallthrough();
  AddLoggingOptions(&app);

  // ---- gpu
  CLI::App* gpu = app.add_subcommand("gpu", "Port a model to another GPU of the same architecture");
  std::string model_path, base_gpu_path, target_gpu_path, out_path, report_path;
  std::string constant_scaling_text = "components", base_idle_from, target_idle_from;
  double base_idle_w = 0.0, target_idle_w = 0.0;
  gpu->add_option("--model", model_path, "Base model (wattcal JSON or gpmTOOL model file)")
      ->required()
      ->check(CLI::ExistingFile);
  gpu->add_option("--base-gpu", base_gpu_path, "Description of the GPU the model was trained on")
      ->required()
      ->check(CLI::ExistingFile);
  gpu->add_option("--target-gpu", target_gpu_path, "Description of the target GPU")
      ->required()
      ->check(CLI::ExistingFile);
  gpu->add_option("--constant-scaling", constant_scaling_text,
                  "alpha0/alpha1: components (domain count ratio), idle-power (Eq. 11, needs the "
                  "measured idle powers; the paper's better choice) or none")
      ->check(CLI::IsMember({"idle-power", "components", "none"}))
      ->capture_default_str();
  gpu->add_option("--base-idle-w", base_idle_w, "Measured idle power of the base GPU, W");
  gpu->add_option("--base-idle-from", base_idle_from,
                  "Take the base idle power from this corpus's idle benchmark (all utilisations "
                  "0) at the default pair")
      ->check(CLI::ExistingFile);
  gpu->add_option("--target-idle-w", target_idle_w,
                  "Measured idle power of the target GPU, W (TPDS: 65 W for the GTX 980)");
  gpu->add_option("--target-idle-from", target_idle_from,
                  "Take the target idle power from this corpus's idle benchmark")
      ->check(CLI::ExistingFile);
  gpu->add_option("--out", out_path, "Ported model to write (JSON)")
      ->check(OutputFile())->required();
  gpu->add_option("--report", report_path, "Also write what was scaled and by how much (JSON)")
      ->check(OutputFile());

  // ---- project
  CLI::App* project = app.add_subcommand(
      "project", "Restrict a training corpus to the target GPU's components (tidy CSV)");
  std::string corpus_path, project_gpu_path, project_out_path;
  project->add_option("--corpus", corpus_path, "Training corpus (gpmTOOL or tidy)")
      ->required()
      ->check(CLI::ExistingFile);
  project->add_option("--target-gpu", project_gpu_path, "Description of the target GPU")
      ->required()
      ->check(CLI::ExistingFile);
  project->add_option("--out", project_out_path, "Corpus to write (tidy CSV)")
      ->check(OutputFile())->required();

  // ---- node
  CLI::App* node = app.add_subcommand(
      "node", "Scale per-kernel estimates or a model to another technology node");
  std::string estimates_path, reference_path, node_model_path, node_table_path;
  std::string node_out_path, node_report_path, totals_path;
  NodePortOptions node_options;
  node->add_option("--estimates", estimates_path,
                   "Per-kernel estimates (AccelWattch per_kernel_*.csv or tidy)")
      ->check(CLI::ExistingFile);
  node->add_option("--reference", reference_path,
                   "Someone else's scaled version of --estimates, to derive and check its factors")
      ->check(CLI::ExistingFile);
  node->add_option("--model", node_model_path, "A wattcal/gpmTOOL model instead of --estimates")
      ->check(CLI::ExistingFile);
  node->add_option("--node-table", node_table_path,
                   "Node table (microbench_specs/technology_nodes.csv)")
      ->check(CLI::ExistingFile);
  node->add_option("--from-node", node_options.from_node, "Node the estimates are for");
  node->add_option("--to-node", node_options.to_node, "Node to scale them to");
  node->add_option("--dynamic-factor", node_options.dynamic_factor,
                   "Factor on dynamic power instead of the table's C V^2 ratio");
  node->add_option("--static-factor", node_options.static_factor,
                   "Factor on static power instead of the table's V I_leak ratio");
  node->add_option("--idle-sm-factor", node_options.idle_sm_factor,
                   "Factor on the idle SMs' power (default: the static factor)");
  node->add_option("--board-constant-factor", node_options.board_constant_factor,
                   "Factor on the board's constant power (AccelWattch: 1.7 for Turing vs. Volta)")
      ->capture_default_str();
  node->add_option("--out", node_out_path, "Scaled estimates (tidy CSV) or model (JSON)")
      ->check(OutputFile())->required();
  node->add_option("--report", node_report_path, "Also write the factors and checks (JSON)")
      ->check(OutputFile());
  node->add_option("--totals-out", totals_path,
                   "--estimates: also write each kernel's scaled total as kernel,power_w (input "
                   "of wattcal-compare)")->check(OutputFile());

  return RunStageMain(&app, argc, argv, [&]() {
    OutputSet outputs;
    if (*gpu) {
      GpuPortOptions options;
      if (!ParseConstantScaling(constant_scaling_text, &options.constant_scaling)) {
        throw OptionError("--constant-scaling: unknown value " + constant_scaling_text);
      }
      std::vector<std::string> inputs = {model_path, base_gpu_path, target_gpu_path};
      if (options.constant_scaling == ConstantScaling::kIdlePower) {
        options.base_idle_w = IdlePowerW("base", base_idle_w, base_idle_from, &inputs);
        options.target_idle_w = IdlePowerW("target", target_idle_w, target_idle_from, &inputs);
      } else if (base_idle_w != 0.0 || target_idle_w != 0.0 || !base_idle_from.empty() ||
                 !target_idle_from.empty()) {
        throw OptionError("--base/target-idle-w and -from belong to --constant-scaling idle-power");
      }
      std::string error;
      if (!options.Check(&error)) throw OptionError(error);
      GpuPortReport report;
      const PowerModel ported =
          PortModelToGpu(ReadModel(model_path), ReadGpuDescription(base_gpu_path),
                         ReadGpuDescription(target_gpu_path), options, &report);
      const nlohmann::json manifest_options = {
          {"subcommand", "gpu"},
          {"constant_scaling", ConstantScalingName(options.constant_scaling)},
          {"base_idle_w", options.base_idle_w},
          {"target_idle_w", options.target_idle_w}};
      outputs.StageText(out_path, ModelToJson(ported));
      outputs.StageManifest(out_path, "port", inputs, manifest_options);
      if (!report_path.empty()) {
        outputs.StageText(report_path, DumpJson(GpuPortReportToJson(report)));
        outputs.StageManifest(report_path, "port", inputs, manifest_options);
      }
      outputs.Commit();
      LogInfo(FormatGpuPortReport(report));
      LogInfo("wrote " + out_path + (report_path.empty() ? "" : " and " + report_path));
      return static_cast<int>(kExitOk);
    }
    if (*project) {
      std::vector<std::string> dropped;
      const Corpus projected = ProjectCorpus(
          ReadCorpus(corpus_path), ReadGpuDescription(project_gpu_path).ToLayout(), &dropped);
      outputs.StageText(project_out_path, CorpusToTidyCsv(projected));
      outputs.StageManifest(project_out_path, "port", {corpus_path, project_gpu_path},
                            {{"subcommand", "project"}, {"dropped_components", dropped}});
      outputs.Commit();
      std::string list;
      for (const std::string& name : dropped) list += (list.empty() ? "" : ", ") + name;
      LogInfo(fmt::format("wrote {} rows to {}; dropped: {}", projected.rows(), project_out_path,
                          list.empty() ? "none" : list));
      return static_cast<int>(kExitOk);
    }
    // node
    if (estimates_path.empty() == node_model_path.empty()) {
      throw OptionError("node takes --estimates FILE or --model FILE (one of them)");
    }
    if ((!reference_path.empty() || !totals_path.empty()) && estimates_path.empty()) {
      throw OptionError("--reference and --totals-out go with --estimates");
    }
    std::string error;
    if (!node_options.Check(&error)) throw OptionError(error);
    std::unique_ptr<NodeTable> table;
    std::vector<std::string> inputs;
    if (!node_table_path.empty()) {
      table = std::make_unique<NodeTable>(ReadNodeTable(node_table_path));
      inputs.push_back(node_table_path);
    } else if (node_options.NeedsTable()) {
      throw OptionError("--node-table is needed unless --dynamic-factor and --static-factor are "
                        "both given");
    }
    const NodeScaling scaling = MakeNodeScaling(table.get(), node_options);
    const nlohmann::json manifest_options = {
        {"subcommand", "node"},
        {"from_node", node_options.from_node},
        {"to_node", node_options.to_node},
        {"dynamic_factor", scaling.dynamic_factor},
        {"static_factor", scaling.static_factor},
        {"idle_sm_factor", scaling.idle_sm_factor},
        {"board_constant_factor", scaling.board_constant_factor}};
    if (!node_model_path.empty()) {
      inputs.insert(inputs.begin(), node_model_path);
      const PowerModel scaled = ScaleModelToNode(ReadModel(node_model_path), scaling);
      outputs.StageText(node_out_path, ModelToJson(scaled));
      outputs.StageManifest(node_out_path, "port", inputs, manifest_options);
      if (!node_report_path.empty()) {
        outputs.StageText(node_report_path, DumpJson(NodeScalingToJson(scaling, table.get())));
        outputs.StageManifest(node_report_path, "port", inputs, manifest_options);
      }
      outputs.Commit();
      LogInfo(fmt::format("scaled {}: dynamic x{:.6g}, static x{:.6g}; wrote {}", node_model_path,
                          scaling.dynamic_factor, scaling.static_factor, node_out_path));
      return static_cast<int>(kExitOk);
    }
    inputs.insert(inputs.begin(), estimates_path);
    const EstimateTable estimates = ReadEstimateTable(estimates_path);
    std::unique_ptr<EstimateTable> reference;
    if (!reference_path.empty()) {
      reference = std::make_unique<EstimateTable>(ReadEstimateTable(reference_path));
      inputs.push_back(reference_path);
    }
    EstimateTable scaled;
    const NodeEstimatesReport report =
        PortEstimatesToNode(estimates, scaling, reference.get(), &scaled);
    outputs.StageText(node_out_path, EstimateTableToCsv(scaled));
    outputs.StageManifest(node_out_path, "port", inputs, manifest_options);
    if (!node_report_path.empty()) {
      outputs.StageText(node_report_path,
                        DumpJson(NodeEstimatesReportToJson(report, table.get())));
      outputs.StageManifest(node_report_path, "port", inputs, manifest_options);
    }
    if (!totals_path.empty()) {
      outputs.StageText(totals_path, EstimateTotalsToCsv(scaled));
      outputs.StageManifest(totals_path, "port", inputs, manifest_options);
    }
    outputs.Commit();
    LogInfo(FormatNodeEstimatesReport(report));
    LogInfo("wrote " + node_out_path + (node_report_path.empty() ? "" : " and " + node_report_path));
    return static_cast<int>(kExitOk);
  });
}
