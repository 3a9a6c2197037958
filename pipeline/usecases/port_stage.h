// wattcal-port as one library call: carry a model to another GPU of the same architecture
// (TPDS'19 §4.6, Eq. 11), restrict a training corpus to the target GPU's components, or scale
// power estimates / a model to another technology node (AccelWattch MICRO'21 §7.1). The main
// (stages/port_main.cc) binds the three subcommands to PortStageOptions and calls
// RunPortStage; tests call it in-process.
#pragma once

#include <string>
#include <vector>

#include "port/gpu_port.h"
#include "port/technology_node.h"
#include "usecases/stage_summary.h"

namespace wattcal {

// wattcal-port gpu.
struct PortGpuStageOptions {
  // --model, --base-gpu, --target-gpu: required.
  std::string model_path;
  std::string base_gpu_path;
  std::string target_gpu_path;
  // --constant-scaling components | idle-power | none (alpha0/alpha1, TPDS Eq. 11).
  ConstantScaling constant_scaling = ConstantScaling::kComponentCounts;
  // --base-idle-w / --base-idle-from, --target-idle-w / --target-idle-from (idle-power only):
  // the measured idle power in W, or a corpus whose idle benchmark gives it.
  double base_idle_w = 0.0;
  std::string base_idle_from;
  double target_idle_w = 0.0;
  std::string target_idle_from;
  // --out: the ported model (JSON); required. --report: what was scaled (JSON).
  std::string out_path;
  std::string report_path;
};

// wattcal-port project.
struct PortProjectStageOptions {
  // --corpus, --target-gpu, --out: required.
  std::string corpus_path;
  std::string target_gpu_path;
  std::string out_path;
};

// wattcal-port node.
struct PortNodeStageOptions {
  // --estimates (per-kernel estimates) or --model (a wattcal/gpmTOOL model): exactly one.
  std::string estimates_path;
  std::string model_path;
  // --reference: someone else's scaled --estimates, to derive and check its factors.
  std::string reference_path;
  // --node-table: needed unless --dynamic-factor and --static-factor are both given.
  std::string node_table_path;
  // --from-node, --to-node, --dynamic-factor, --static-factor, --idle-sm-factor,
  // --board-constant-factor.
  NodePortOptions scaling;
  // --out: scaled estimates (CSV) or model (JSON); required. --report: factors and checks
  // (JSON). --totals-out: with --estimates, each kernel's scaled total (kernel,power_w).
  std::string out_path;
  std::string report_path;
  std::string totals_out_path;
};

struct PortStageOptions {
  // The subcommand: "gpu", "project" or "node".
  std::string subcommand;
  PortGpuStageOptions gpu;
  PortProjectStageOptions project;
  PortNodeStageOptions node;

  // The subcommand's rules (exclusive and required flags, --constant-scaling's values, the
  // node factors' ranges). Throws OptionError naming the flag(s).
  void Check() const;
};

struct PortStageReport : StageSummary {};

PortStageReport RunPortStage(const PortStageOptions& options);

}  // namespace wattcal
