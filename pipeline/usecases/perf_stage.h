// What wattcal-perf does, as one library call, so its main stays "declare options, parse,
// Check(), one call" (STYLE.md rule 1); wattcal-dvfs's twin is stage/dvfs_stage.h. Every output
// is staged in an OutputSet with a manifest beside it and committed only when everything
// succeeded.
//
// A *StageOptions is what one command line asks for: the files (some required, so its defaults do
// not pass Check() on their own) plus the settings, whose own options structs
// (TimePredictionOptions, ClassifierOptions) do have passing defaults.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "perf/perf_models.h"
#include "usecases/stage_summary.h"
#include "util/output.h"

namespace wattcal {

// wattcal-perf. Three inputs, exactly one given:
//   counters_path     counters CSV (crisp_counters.h)            -> predicted times
//   timelines_path    event timelines (timeline.h), classified     -> predicted times
//   simulate_spec_path a run-time suite (perf_suite.h) on the virtual GPU's SM model
//                     -> out_dir/{counters.csv, actual_times.csv[, timelines.csv][, activity.csv]}
struct PerfStageOptions {
  // Counters CSV to predict from.
  std::string counters_path;
  // Timeline CSV to classify and predict from.
  std::string timelines_path;
  // Run-time suite spec to simulate.
  std::string simulate_spec_path;
  // Predicted times CSV (kernel,model,target_mhz,predicted_time_s); required unless simulating.
  std::string out_path;
  // Simulation: folder of the campaign's files.
  std::string out_dir;
  // Target core frequencies, MHz (predicting: required; simulating: replaces the spec's).
  std::vector<double> targets_mhz;
  // Simulating: base core frequency, MHz (0 = the spec's, or the activity spec's default).
  double base_mhz = 0.0;
  // Run-time models (perf_models.h); empty = every model the counters allow.
  std::vector<PerfModelKind> models;
  // Timelines / simulation: MISS's fixed latency, base cycles (0 = mean load latency).
  double miss_latency_cycles = 0.0;
  // Timelines: also write the classifier's counters here.
  std::string counters_out_path;
  // Actual run times (kernel,target_mhz,actual_time_s) to validate the predictions against.
  std::string actual_path;
  // Validation statistics JSON; required with actual_path.
  std::string validation_out_path;
  // Per-point errors CSV (optional, with actual_path).
  std::string errors_out_path;
  // Figures: <prefix>_mape.{png,svg} and <prefix>_times_<kernel>.{png,svg} (with actual_path).
  std::string plot_prefix;
  // Kernels drawn by <prefix>_times_<kernel>; empty = every kernel.
  std::vector<std::string> plot_kernels;
  // With actual_path: exit 3 when crisp's overall MAPE exceeds this, %; 0 = no gate.
  double max_mape_pct = 0.0;
  // Simulating: the virtual GPU's power spec (microbench_specs/virtual_gpu.json) whose layout
  // the activity file uses; its default core frequency is then the base frequency and its
  // core levels the default targets.
  std::string activity_spec_path;
  // Simulating: also write the base runs' timelines.
  bool write_timelines = false;
  // Simulating: threads (the result does not depend on it).
  int threads = 1;

  // Every rule between the options; throws OptionError naming the flag.
  void Check() const;
};

// The effective options, for manifests.
void to_json(nlohmann::json& j, const PerfStageOptions& options);

struct PerfStageReport : StageSummary {};

// Runs wattcal-perf; returns the exit code (0, or 3 when the MAPE gate fails — the outputs are
// written either way). Throws OptionError / InputError as the stage contract says.
PerfStageReport RunPerfStage(const PerfStageOptions& options);

// A kernel name as a file-name part: every character outside [A-Za-z0-9._-] becomes '_'.
std::string FileNamePart(const std::string& name);

// Stages the figure <prefix>.png and <prefix>.svg in `outputs`, drawn by `draw(png, svg)`, each
// with a manifest of `stage`, `inputs` and `options` (wattcal-perf's and wattcal-dvfs's figures).
void StageFigure(OutputSet* outputs, const std::string& prefix, const std::string& stage,
                 const std::vector<std::string>& inputs, const nlohmann::json& options,
                 const std::function<void(const std::string&, const std::string&)>& draw);

}  // namespace wattcal
