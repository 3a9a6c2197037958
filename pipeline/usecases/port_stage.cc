#include "usecases/port_stage.h"

#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "io/corpus_io.h"
#include "io/gpu_description.h"
#include "model/model_io.h"
#include "port/estimate_table.h"
#include "port/gpu_port.h"
#include "port/node_port.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"

namespace wattcal {

namespace {

// The rules of one side's "--X-idle-w W" / "--X-idle-from CORPUS" under --constant-scaling.
void CheckIdlePower(const std::string& which, bool idle_power, double watts,
                    const std::string& corpus_path) {
  if (!idle_power) return;
  if (watts != 0.0 && !corpus_path.empty()) {
    throw OptionError(fmt::format("give --{0}-idle-w or --{0}-idle-from, not both", which));
  }
  if (corpus_path.empty() && watts == 0.0) {
    throw OptionError(
        fmt::format("--constant-scaling idle-power needs --{0}-idle-w W or "
                    "--{0}-idle-from CORPUS (TPDS Eq. 11)",
                    which));
  }
}

// One of "--X-idle-w W" or "--X-idle-from CORPUS" (idle-power only): the idle power in W.
double IdlePowerW(const std::string& which, double watts, const std::string& corpus_path,
                  std::vector<std::string>* inputs) {
  if (corpus_path.empty()) return watts;
  inputs->push_back(corpus_path);
  const double idle_w = IdlePowerAtDefaultW(ReadCorpus(corpus_path));
  LogInfo(fmt::format("{} idle power at the default pair: {:.4f} W (from {})", which, idle_w,
                      corpus_path));
  return idle_w;
}

void Require(const std::string& value, const std::string& flag, const std::string& subcommand) {
  if (value.empty()) throw OptionError(subcommand + ": " + flag + " is required");
}

PortStageReport RunGpu(const PortGpuStageOptions& o) {
  GpuPortOptions options;
  options.constant_scaling = o.constant_scaling;
  std::vector<std::string> inputs = {o.model_path, o.base_gpu_path, o.target_gpu_path};
  if (options.constant_scaling == ConstantScaling::kIdlePower) {
    options.base_idle_w = IdlePowerW("base", o.base_idle_w, o.base_idle_from, &inputs);
    options.target_idle_w = IdlePowerW("target", o.target_idle_w, o.target_idle_from, &inputs);
  }
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  GpuPortReport port;
  const PowerModel ported =
      PortModelToGpu(ReadModel(o.model_path), ReadGpuDescription(o.base_gpu_path),
                     ReadGpuDescription(o.target_gpu_path), options, &port);
  const nlohmann::json manifest_options = {
      {"subcommand", "gpu"},
      {"constant_scaling", ConstantScalingName(options.constant_scaling)},
      {"base_idle_w", options.base_idle_w},
      {"target_idle_w", options.target_idle_w}};
  PortStageReport report;
  OutputSet outputs;
  outputs.StageText(o.out_path, ModelToJson(ported));
  outputs.StageProvenance(o.out_path, "port", inputs, manifest_options, "model");
  if (!o.report_path.empty()) {
    outputs.StageText(o.report_path, DumpJson(nlohmann::ordered_json(port)));
    outputs.StageProvenance(o.report_path, "port", inputs, manifest_options, "port_report");
  }
  outputs.Commit();
  report.written = outputs.Outputs();
  LogInfo(FormatGpuPortReport(port));
  LogInfo("wrote " + o.out_path + (o.report_path.empty() ? "" : " and " + o.report_path));
  return report;
}

PortStageReport RunProject(const PortProjectStageOptions& o) {
  std::vector<std::string> dropped;
  const Corpus projected = ProjectCorpus(
      ReadCorpus(o.corpus_path), ReadGpuDescription(o.target_gpu_path).ToLayout(), &dropped);
  OutputSet outputs;
  outputs.StageText(o.out_path, CorpusToTidyCsv(projected));
  outputs.StageProvenance(o.out_path, "port", {o.corpus_path, o.target_gpu_path},
                          {{"subcommand", "project"}, {"dropped_components", dropped}});
  outputs.Commit();
  std::string list;
  for (const std::string& name : dropped) list += (list.empty() ? "" : ", ") + name;
  LogInfo(fmt::format("wrote {} rows to {}; dropped: {}", projected.rows(), o.out_path,
                      list.empty() ? "none" : list));
  PortStageReport report;
  report.written = outputs.Outputs();
  return report;
}

PortStageReport RunNode(const PortNodeStageOptions& o) {
  std::unique_ptr<NodeTable> table;
  std::vector<std::string> inputs;
  if (!o.node_table_path.empty()) {
    table = std::make_unique<NodeTable>(ReadNodeTable(o.node_table_path));
    inputs.push_back(o.node_table_path);
  }
  const NodeScaling scaling = MakeNodeScaling(table.get(), o.scaling);
  const nlohmann::json manifest_options = {
      {"subcommand", "node"},
      {"from_node", o.scaling.from_node},
      {"to_node", o.scaling.to_node},
      {"dynamic_factor", scaling.dynamic_factor},
      {"static_factor", scaling.static_factor},
      {"idle_sm_factor", scaling.idle_sm_factor},
      {"board_constant_factor", scaling.board_constant_factor}};
  PortStageReport report;
  OutputSet outputs;
  auto stage = [&](const std::string& path, const std::string& text) {
    outputs.StageText(path, text);
    outputs.StageProvenance(path, "port", inputs, manifest_options);
  };
  if (!o.model_path.empty()) {
    inputs.insert(inputs.begin(), o.model_path);
    const PowerModel scaled = ScaleModelToNode(ReadModel(o.model_path), scaling);
    stage(o.out_path, ModelToJson(scaled));
    if (!o.report_path.empty())
      stage(o.report_path, DumpJson(NodeScalingToJson(scaling, table.get())));
    outputs.Commit();
    report.written = outputs.Outputs();
    LogInfo(fmt::format("scaled {}: dynamic x{:.6g}, static x{:.6g}; wrote {}", o.model_path,
                        scaling.dynamic_factor, scaling.static_factor, o.out_path));
    return report;
  }
  inputs.insert(inputs.begin(), o.estimates_path);
  const EstimateTable estimates = ReadEstimateTable(o.estimates_path);
  std::unique_ptr<EstimateTable> reference;
  if (!o.reference_path.empty()) {
    reference = std::make_unique<EstimateTable>(ReadEstimateTable(o.reference_path));
    inputs.push_back(o.reference_path);
  }
  EstimateTable scaled;
  const NodeEstimatesReport node_report =
      PortEstimatesToNode(estimates, scaling, reference.get(), &scaled);
  stage(o.out_path, EstimateTableToCsv(scaled));
  if (!o.report_path.empty()) {
    stage(o.report_path, DumpJson(NodeEstimatesReportToJson(node_report, table.get())));
  }
  if (!o.totals_out_path.empty()) stage(o.totals_out_path, EstimateTotalsToCsv(scaled));
  outputs.Commit();
  report.written = outputs.Outputs();
  LogInfo(FormatNodeEstimatesReport(node_report));
  LogInfo("wrote " + o.out_path + (o.report_path.empty() ? "" : " and " + o.report_path));
  return report;
}

}  // namespace

void PortStageOptions::Check() const {
  if (subcommand == "gpu") {
    Require(gpu.model_path, "--model", subcommand);
    Require(gpu.base_gpu_path, "--base-gpu", subcommand);
    Require(gpu.target_gpu_path, "--target-gpu", subcommand);
    Require(gpu.out_path, "--out", subcommand);
    const bool idle_power = gpu.constant_scaling == ConstantScaling::kIdlePower;
    CheckIdlePower("base", idle_power, gpu.base_idle_w, gpu.base_idle_from);
    CheckIdlePower("target", idle_power, gpu.target_idle_w, gpu.target_idle_from);
    if (!idle_power && (gpu.base_idle_w != 0.0 || gpu.target_idle_w != 0.0 ||
                        !gpu.base_idle_from.empty() || !gpu.target_idle_from.empty())) {
      throw OptionError("--base/target-idle-w and -from belong to --constant-scaling idle-power");
    }
    return;
  }
  if (subcommand == "project") {
    Require(project.corpus_path, "--corpus", subcommand);
    Require(project.target_gpu_path, "--target-gpu", subcommand);
    Require(project.out_path, "--out", subcommand);
    return;
  }
  if (subcommand != "node") {
    throw OptionError("wattcal-port takes one subcommand: gpu, project or node (got '" +
                      subcommand + "')");
  }
  Require(node.out_path, "--out", subcommand);
  if (node.estimates_path.empty() == node.model_path.empty()) {
    throw OptionError("node takes --estimates FILE or --model FILE (one of them)");
  }
  if ((!node.reference_path.empty() || !node.totals_out_path.empty()) &&
      node.estimates_path.empty()) {
    throw OptionError("--reference and --totals-out go with --estimates");
  }
  std::string error;
  if (!node.scaling.Check(&error)) throw OptionError(error);
  if (node.node_table_path.empty() && node.scaling.NeedsTable()) {
    throw OptionError(
        "--node-table is needed unless --dynamic-factor and --static-factor are "
        "both given");
  }
}

PortStageReport RunPortStage(const PortStageOptions& options) {
  options.Check();
  if (options.subcommand == "gpu") return RunGpu(options.gpu);
  if (options.subcommand == "project") return RunProject(options.project);
  return RunNode(options.node);
}

}  // namespace wattcal
