// wattcal-ingest as one library call: raw measurement dumps -> the tidy tables calibrate and
// validate read (MTSM energy; utilisations, TPDS Eqs. 7-8), each written with a manifest beside
// it and committed only when everything succeeded.
//
// Two ways in, exclusive:
//   captures            capture directories (ingest/capture.h) -> tidy_path [+ out_path: windows]
//   inputs.power_log .. the separate dumps (ingest/ingest.h)    -> out_path, tidy_path, ...
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ingest/capture.h"
#include "ingest/ingest.h"
#include "usecases/stage_summary.h"

namespace wattcal {

// The settle time a window is measured from when --settle-ms is not given, ms: steady state
// (AccelWattch §4.1), measured on the H100 capture (ingest/kernel_energy.h); a window shorter
// than twice it is measured over its second half. The same on both ways in.
constexpr double kDefaultSettleMs = 300.0;

struct IngestStageOptions {
  // --power-log, --windows, --counters, --gpu, --instructions, --corpus, --kernel-power,
  // --ubench, --ubench-sm-count, --description.
  IngestInputs inputs;
  // --gpu-select, --power-field, --utc-offset-h, --dmon-interval-ms, --min-samples, --max-cv,
  // --max-temp-drift-c, --exclude-flagged, --f-core-mhz, --f-mem-mhz. Its energy.settle_ms is
  // not used: settle_ms below is.
  IngestOptions ingest;
  // --columns: the column names of a --format=csv,noheader log, comma-separated.
  std::string columns;
  // --settle-ms when given; nullopt: kDefaultSettleMs, shortened for short windows. A value
  // given is applied as given: on the --power-log way a window not longer than it is an error
  // naming its line; capture directories measure a window shorter than twice it over its
  // second half.
  std::optional<double> settle_ms;
  // --clock-runs (repeatable): per-run tables of power (and run time) at locked clocks
  // (io/clock_runs.h) -> tidy_path, the table wattcal-clocks reads.
  std::vector<std::string> clock_runs;
  // --capture (repeatable) and --capture-power (auto, nvml or nvidia-smi).
  std::vector<std::string> captures;
  CapturePowerLog capture_power = CapturePowerLog::kAuto;
  // --per-workload: with --capture, one row per workload in the measured table (its windows'
  // summed energy over their summed duration) instead of one per window: for applications whose
  // windows share one counters export.
  bool per_workload = false;
  // --mixed-gpus: captures of different GPUs may be combined.
  bool mixed_gpus = false;
  // --allow-other-gpu: a --gpu description of another GPU than the captures' may be used.
  bool allow_other_gpu = false;
  // Outputs (empty = not written).
  std::string out_path;                   // --out
  std::string tidy_path;                  // --tidy
  std::string activity_path;              // --activity
  std::string windows_out_path;           // --windows-out
  std::string instructions_out_path;      // --instructions-out
  std::string counters_table_path;        // --counters-table
  std::string corpus_out_path;            // --corpus-out
  std::string kernel_power_out_path;      // --kernel-power-out
  std::string ubench_out_path;            // --ubench-out
  std::string accelwattch_activity_path;  // --accelwattch-activity

  // Every rule between the flags (an input without the output it feeds, an output without its
  // inputs, --capture with any separate dump). OptionError naming the flags.
  void Check() const;
};

struct IngestStageReport : StageSummary {
  // --exclude-flagged: rows of the measured table left out because every launch they had was
  // flagged (power-log way) or their window was flagged (capture way).
  int64_t left_out_rows = 0;
};

IngestStageReport RunIngestStage(const IngestStageOptions& options);

}  // namespace wattcal
