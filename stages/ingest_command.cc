// wattcal-ingest: raw measurement dumps -> tidy tables that calibrate/validate read.
//
//   wattcal-ingest --power-log LOG.csv --windows WINDOWS.csv --out KERNELS.csv
//                  [--counters NCU.csv --gpu GPU.json --tidy MEASUREMENTS.csv]
//   wattcal-ingest --counters NCU.csv --gpu GPU.json --activity ACTIVITY.csv
//   wattcal-ingest --counters NCU.csv --description SWEEP.csv --accelwattch-activity OUT.csv
//                  [--power-log LOG.csv --windows WINDOWS.csv --out KERNELS.csv --settle-ms MS]
//   wattcal-ingest --capture DIR [--capture DIR2 ...] --gpu GPU.json --tidy MEASURED.csv
//                  [--out WINDOWS.csv]
#include "commands.h"

#include <iostream>

#include "stage_common.h"
#include "stage_options.h"

namespace wattcal {

namespace {

// The input files (and the rewritten forms of two of them: --kernel-power-out, --ubench-out).
void AddIngestInputOptions(CLI::App* app, IngestStageOptions* o) {
  IngestInputs& in = o->inputs;
  app->add_option("--power-log", in.power_log,
                  "Power log: nvidia-smi --query-gpu CSV (any shape), raw NVML samples "
                  "(timestamp_us,power_mw) or dcgmi dmon output")
      ->check(CLI::ExistingFile);
  app->add_option("--windows", in.windows,
                  "Kernel launch windows: kernel,start_us,end_us (or _ms, _s)")
      ->check(CLI::ExistingFile);
  app->add_option("--counters", in.counters,
                  "Counters: Nsight Compute CSV (details or raw page), nvprof --csv --metrics, "
                  "AccelWattch hw_perf.csv")
      ->check(CLI::ExistingFile);
  app->add_option("--gpu", in.gpu_description, "GPU description (microbench_specs/gpus/*.json)")
      ->check(CLI::ExistingFile);
  app->add_option("--instructions", in.instructions,
                  "Per-instruction energy (Arafa Eq. 1): CSV kernel,overhead_kernel,instructions")
      ->check(CLI::ExistingFile);
  app->add_option("--corpus", in.corpus,
                  "A gpmTOOL training/real/prediction file (or tidy CSV) to convert to tidy form")
      ->check(CLI::ExistingFile);
  app->add_option("--kernel-power", in.kernel_power,
                  "AccelWattch's measured power per kernel (hw_power_validation_*.csv)")
      ->check(CLI::ExistingFile);
  app->add_option("--kernel-power-out", o->kernel_power_out_path,
                  "The --kernel-power table rewritten with columns "
                  "kernel,mean_power_w,power_sd_w,power_var_w2,samples")
      ->check(OutputFile());
  app->add_option("--ubench", in.ubench, "AccelWattch microbenchmark run list (ubench.cfg)")
      ->check(CLI::ExistingFile);
  app->add_option(
         "--ubench-out", o->ubench_out_path,
         "The --ubench run list rewritten as benchmark,iterations,active_sms,lanes_per_warp")
      ->check(OutputFile());
  app->add_option("--description", in.description,
                  "Sweep description (wattcal-synth's sweep.csv: kernel,benchmark,category,"
                  "active_sms,lanes_per_warp,f_core_mhz,f_mem_mhz,iterations)")
      ->check(CLI::ExistingFile);
}

// The tables wattcal-ingest writes.
void AddIngestOutputOptions(CLI::App* app, IngestStageOptions* o) {
  IngestInputs& in = o->inputs;
  app->add_option("--accelwattch-activity", o->accelwattch_activity_path,
                  "AccelWattch's activity table (needs --counters and --description): per "
                  "description kernel its description, elapsed_s, launches, mean_power_w and every "
                  "counter")
      ->check(OutputFile());
  app->add_option("--ubench-sm-count", in.ubench_sm_count, "SMs for ubench lines that omit them")
      ->capture_default_str();
  app->add_option(
         "--counters-table", o->counters_table_path,
         "Every counter of every kernel, base units: kernel,benchmark,launches,metric,value")
      ->check(OutputFile());
  app->add_option("--corpus-out", o->corpus_out_path, "The converted --corpus (tidy CSV)")
      ->check(OutputFile());
  app->add_option(
         "--out", o->out_path,
         "Per-kernel energy table: kernel,launches,duration_s,energy_j,mean_power_w,samples,...")
      ->check(OutputFile());
  app->add_option("--tidy", o->tidy_path,
                  "Measured tidy table for calibrate/validate (needs --power-log, --windows, "
                  "--counters and --gpu, or --capture)")
      ->check(OutputFile());
  app->add_option("--activity", o->activity_path, "Utilisations per kernel (tidy activity table)")
      ->check(OutputFile());
  app->add_option("--windows-out", o->windows_out_path, "Per-launch energy table")
      ->check(OutputFile());
  app->add_option("--instructions-out", o->instructions_out_path, "Energy per instruction table")
      ->check(OutputFile());
}

// How the power log is read: which GPU, field, columns, clock and dmon interval.
void AddPowerLogOptions(CLI::App* app, IngestStageOptions* o) {
  IngestOptions& options = o->ingest;
  app->add_option("--gpu-select", options.log.gpu,
                  "GPU of a multi-GPU log: nvidia-smi index or uuid");
  app->add_option("--power-field", options.log.power_field,
                  "nvidia-smi power field (default: power.draw.instant, else power.draw, else "
                  "power.draw.average)");
  app->add_option("--columns", o->columns,
                  "Column names of a --format=csv,noheader log, comma-separated query names");
  app->add_option("--utc-offset-h", options.log.utc_offset_h,
                  "nvidia-smi prints local time: hours to subtract to reach the windows' UTC clock")
      ->capture_default_str();
  app->add_option("--dmon-interval-ms", options.log.dmon_interval_ms,
                  "dcgmi dmon without timestamps: its -d interval, ms");
}

// How each launch window is measured and which windows are flagged.
void AddWindowOptions(CLI::App* app, IngestStageOptions* o) {
  IngestOptions& options = o->ingest;
  app->add_option("--min-samples", options.energy.min_samples,
                  "Flag windows with fewer readings inside")
      ->capture_default_str();
  app->add_option("--max-cv", options.energy.max_cv,
                  "Flag windows whose readings vary more (coefficient of variation)")
      ->capture_default_str();
  app->add_option("--max-temp-drift-c", options.energy.max_temp_drift_c,
                  "Flag windows whose temperature drifts more, degrees C")
      ->capture_default_str();
  app->add_flag("--exclude-flagged", options.energy.exclude_flagged,
                "Leave flagged windows out of the per-kernel aggregates and the measured table "
                "(rows left with no window are dropped; the summary and manifest say how many)");
  app->add_option("--f-core-mhz", options.f_core_mhz,
                  "For a power log without clock columns: the core clock the whole log ran at, MHz "
                  "(without it, a kernel launched in several windows is an error: its launches "
                  "could come from several V-F pairs)");
  app->add_option(
      "--f-mem-mhz", options.f_mem_mhz,
      "For a power log without clock columns: the memory clock the whole log ran at, MHz");
  app->add_option_function<double>(
      "--settle-ms", [o](const double& ms) { o->settle_ms = ms; },
      "Measure each window from this long after its start (steady state, AccelWattch §4.1), ms. "
      "Default: 300 ms, and the second half of a window shorter than 600 ms; a value given is "
      "applied as given");
}

// The counter-free per-run tables and the capture directories.
void AddCaptureOptions(CLI::App* app, IngestStageOptions* o) {
  app->add_option(
         "--clock-runs", o->clock_runs,
         "A per-run table of power (and run time) at locked core clocks, no counters: "
         "workload,f_core_mhz,power_w (or energy_j,time_s; units by suffix), EnergAIzer's "
         "workload,energy,time,avg_freq or nsfcac's application,sm_app_clock,power_usage,run_time; "
         "repeat to combine. Needs --tidy: the table wattcal-clocks reads")
      ->check(CLI::ExistingFile);
  app->add_option("--capture", o->captures,
                  "A capture directory (windows.csv, nvml_power.csv and/or nvidia_smi_power.csv, "
                  "idle_windows.csv, ncu_raw.csv or ncu/<workload>.csv; see README); repeat to "
                  "combine several into one table. Needs --gpu and --tidy; --out gets the "
                  "per-window table")
      ->check(CLI::ExistingDirectory);
  app->add_flag("--mixed-gpus", o->mixed_gpus,
                "With several --capture of different GPUs (by name): combine them anyway (refused "
                "by default: "
                "one description's peaks fit one GPU)");
  app->add_flag(
      "--allow-other-gpu", o->allow_other_gpu,
      "With --capture: use the --gpu description although the capture was recorded on "
      "another GPU (capture.json, the nvidia-smi log; refused by default: a description's "
      "counters and peaks fit one GPU); the provenance records it");
  app->add_flag(
      "--per-workload", o->per_workload,
      "With --capture: one row per workload in --tidy (its windows' summed energy over their "
      "summed duration, flags of any window, and duration_s,energy_j: the whole windows as they "
      "ran, no settle trim) instead of one per window: for applications, whose windows share "
      "one counters export");
  AddEnumOption(app, "--capture-power", &o->capture_power,
                {CapturePowerLog::kAuto, CapturePowerLog::kNvml, CapturePowerLog::kNvidiaSmi},
                CapturePowerLogName,
                "With --capture: which log gives the power: auto (NVML's energy counter or "
                "instant power when present, else nvidia-smi), nvml or nvidia-smi");
}

}  // namespace

void AddIngestOptions(CLI::App* app, IngestStageOptions* o) {
  AddIngestInputOptions(app, o);
  AddIngestOutputOptions(app, o);
  AddPowerLogOptions(app, o);
  AddWindowOptions(app, o);
  AddCaptureOptions(app, o);
}

int IngestCommand(int argc, char** argv) {
  CLI::App app{"Ingest power logs, kernel windows and counter exports (MTSM energy, TPDS Eqs. 7-8)",
               "wattcal-ingest"};
  IngestStageOptions o;
  AddIngestOptions(&app, &o);
  AddLoggingOptions(&app);

  return RunStageMain(&app, argc, argv, [&]() {
    const IngestStageReport r = RunIngestStage(o);
    std::cout << r.summary;
    return r.exit_code;
  });
}

}  // namespace wattcal
