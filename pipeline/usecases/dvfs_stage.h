// What wattcal-dvfs does, as one library call, so its main stays "declare options, parse,
// Check(), one call" (STYLE.md rule 1). Every output is staged in an OutputSet with a manifest
// beside it and committed only when everything succeeded.
//
// DvfsStageOptions is what one command line asks for: the files (some required, so its
// defaults do not pass Check() on their own) plus the choice's settings (DvfsOptions, whose
// defaults do pass).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "perf/dvfs_choice.h"
#include "usecases/stage_summary.h"

namespace wattcal {

// wattcal-dvfs: a DVFS power model + per-kernel activity + predicted times -> the chosen pair
// per kernel and run-time model.
struct DvfsStageOptions {
  // Power model (wattcal JSON or gpmTOOL model file), method dvfs.
  std::string model_path;
  // Per-kernel activity at the default pair (tidy CSV or gpmTOOL file).
  std::string activity_path;
  // Tidy activity without a preamble or frequency columns: the default pair, MHz (0 = infer).
  double default_core_mhz = 0.0;
  double default_mem_mhz = 0.0;
  // Predicted times (wattcal-perf --out).
  std::string times_path;
  // The choices table to write.
  std::string out_path;
  // Every candidate pair (optional).
  std::string curves_out_path;
  // True run times (optional): the choices are then scored against the true optimum.
  std::string actual_path;
  // Per-model summary JSON (optional).
  std::string summary_out_path;
  // Figures <prefix>_<kernel>_<model>.{png,svg} (optional).
  std::string plot_prefix;
  // Kernels drawn; empty = every kernel.
  std::vector<std::string> plot_kernels;
  // Run-time models drawn; empty = the first chosen with.
  std::vector<std::string> plot_models;
  // The choice itself.
  DvfsOptions dvfs;

  // Every rule between the options; throws OptionError naming the flag.
  void Check() const;
};

// The effective options, for manifests.
void to_json(nlohmann::json& j, const DvfsStageOptions& options);

struct DvfsStageReport : StageSummary {};

// Runs wattcal-dvfs; returns the exit code (0). Throws OptionError / InputError as the stage
// contract says.
DvfsStageReport RunDvfsStage(const DvfsStageOptions& options);

}  // namespace wattcal
