#include "stage_options.h"

#include "stage_common.h"

namespace wattcal {

void AddIngestOptions(CLI::App* app, IngestStageOptions* o) {
  IngestInputs& in = o->inputs;
  IngestOptions& options = o->ingest;
  app->add_option("--power-log", in.power_log,
                  "Power log: nvidia-smi --query-gpu CSV (any shape), raw NVML samples "
                  "(timestamp_us,power_mw) or dcgmi dmon output")
      ->check(CLI::ExistingFile);
  app->add_option("--windows", in.windows, "Kernel launch windows: kernel,start_us,end_us (or _ms, _s)")
      ->check(CLI::ExistingFile);
  app->add_option("--counters", in.counters,
                  "Counters: Nsight Compute CSV (details or raw page), nvprof --csv --metrics, "
                  "AccelWattch hw_perf.csv")
      ->check(CLI::ExistingFile);
  app->add_option("--gpu", in.gpu_description, "GPU description (microbench_specs/gpus/*.json)")
      ->check(CLI::ExistingFile);
  app->add_option("--instructions", in.instruction_pairs,
                  "Per-instruction energy (Arafa Eq. 1): CSV kernel,overhead_kernel,instructions")
      ->check(CLI::ExistingFile);
  app->add_option("--corpus", in.corpus,
                  "A gpmTOOL training/real/prediction file (or tidy CSV) to convert to tidy form")
      ->check(CLI::ExistingFile);
  app->add_option("--kernel-power", in.kernel_power,
                  "AccelWattch's measured power per kernel (hw_power_validation_*.csv)")
      ->check(CLI::ExistingFile);
  app->add_option("--kernel-power-out", o->kernel_power_out_path,
                  "The --kernel-power table rewritten as kernel,mean_power_w,power_sd_w,power_var_w2,samples")->check(OutputFile());
  app->add_option("--ubench", in.ubench, "AccelWattch microbenchmark run list (ubench.cfg)")
      ->check(CLI::ExistingFile);
  app->add_option("--ubench-out", o->ubench_out_path, "The --ubench run list rewritten as benchmark,iterations,active_sms,lanes_per_warp")
      ->check(OutputFile());
  app->add_option("--description", in.description,
                  "Sweep description (wattcal-synth's sweep.csv: kernel,benchmark,category,"
                  "active_sms,lanes_per_warp,f_core_mhz,f_mem_mhz,iterations)")
      ->check(CLI::ExistingFile);
  app->add_option("--accelwattch-activity", o->accelwattch_activity_path,
                  "AccelWattch's activity table (needs --counters and --description): per "
                  "description kernel its description, elapsed_s, launches, mean_power_w and every "
                  "counter")->check(OutputFile());
  app->add_option("--ubench-sm-count", in.ubench_sm_count, "SMs for ubench lines that omit them")
      ->capture_default_str();
  app->add_option("--counters-table", o->counters_table_path,
                  "Every counter of every kernel, base units: kernel,benchmark,launches,metric,value")
      ->check(OutputFile());
  app->add_option("--corpus-out", o->corpus_out_path, "The converted --corpus (tidy CSV)")
      ->check(OutputFile());
  app->add_option("--out", o->out_path,
                  "Per-kernel energy table: kernel,launches,duration_s,energy_j,mean_power_w,samples,...")
      ->check(OutputFile());
  app->add_option("--tidy", o->tidy_path,
                  "Measured tidy table for calibrate/validate (needs --power-log, --windows, "
                  "--counters and --gpu, or --capture)")
      ->check(OutputFile());
  app->add_option("--activity", o->activity_path, "Utilisations per kernel (tidy activity table)")
      ->check(OutputFile());
  app->add_option("--windows-out", o->windows_out_path, "Per-launch energy table")->check(OutputFile());
  app->add_option("--instructions-out", o->instructions_out_path, "Energy per instruction table")
      ->check(OutputFile());
  app->add_option("--gpu-select", options.log.gpu, "GPU of a multi-GPU log: nvidia-smi index or uuid");
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
  app->add_option("--f-core-mhz", options.stated_core_mhz,
                  "For a power log without clock columns: the core clock the whole log ran at, MHz "
                  "(without it, a kernel launched in several windows is an error: its launches "
                  "could come from several V-F pairs)");
  app->add_option("--f-mem-mhz", options.stated_mem_mhz,
                  "For a power log without clock columns: the memory clock the whole log ran at, MHz");
  app->add_option_function<double>(
      "--settle-ms", [o](const double& ms) { o->settle_ms = ms; },
      "Measure each window from this long after its start (steady state, AccelWattch §4.1), ms. "
      "Default: 300 ms, and the second half of a window shorter than 600 ms; a value given is "
      "applied as given");
  app->add_option("--capture", o->captures,
                  "A capture directory (windows.csv, nvml_power.csv and/or nvidia_smi_power.csv, "
                  "idle_windows.csv, ncu_raw.csv or ncu/<workload>.csv; see README); repeat to "
                  "combine several into one table. Needs --gpu and --tidy; --out gets the "
                  "per-window table")
      ->check(CLI::ExistingDirectory);
  app->add_option("--capture-power", o->capture_power,
                  "With --capture: which log gives the power: auto (NVML's energy counter or "
                  "instant power when present, else nvidia-smi), nvml or nvidia-smi")
      ->check(CLI::IsMember({"auto", "nvml", "nvidia-smi"}))
      ->capture_default_str();
}

void AddReportOptions(CLI::App* app, ReportStageOptions* o) {
  app->add_option("--run-dir", o->report.run_dir,
                  "Run folder to report on (e.g. reports/titanx): its models, validations, "
                  "training corpus, constant-power result and AccelWattch models and breakdowns "
                  "are discovered")
      ->check(CLI::ExistingDirectory);
  app->add_option("--out-dir", o->report.out_dir,
                  "Folder for index.html, index.md and figures/ (default: the run folder)");
  app->add_option("--note", o->report.notes,
                  "A paragraph of your own reading of the run, shown under the heading "
                  "(repeatable; e.g. why two GPUs differ)");
  app->add_option("--title", o->report.title,
                  "Heading of the index and prefix of the figure titles (default: the run "
                  "folder's name)");
  app->add_option("--model", o->models,
                  "Another model to show beside the discovered ones, LABEL=FILE or FILE "
                  "(repeatable; e.g. gpmTOOL's published model)");
  app->add_option("--predictions", o->report.predictions,
                  "Another predictions CSV for the error CDF and a scatter plot, LABEL=FILE or FILE "
                  "(repeatable; e.g. another GPU's run)");
  app->add_option("--train", o->report.train,
                  "Corpus to analyse for multicollinearity (repeatable; default: the training "
                  "corpus the primary model names)")
      ->check(CLI::ExistingFile);
  app->add_option("--activity", o->report.activity,
                  "Corpus whose benchmarks the power breakdown shows (default: the held-out "
                  "measurements of the breakdown model's validation)")
      ->check(CLI::ExistingFile);
  app->add_option("--breakdown-model", o->report.breakdown_model,
                  "Model of the power breakdown (default: the run's model.json)")
      ->check(CLI::ExistingFile);
  app->add_option("--benchmark", o->report.benchmarks,
                  "Benchmark to draw over the V-F pairs (repeatable; default: chosen by MAPE)");
  app->add_option("--auto-benchmarks", o->report.auto_benchmarks,
                  "Without --benchmark: how many to choose (best, worst, evenly between)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app->add_option("--constant", o->report.constant_path,
                  "wattcal-constant's JSON (default: the one in the run folder)")
      ->check(CLI::ExistingFile);
  app->add_option("--compare", o->report.compare_paths,
                  "wattcal-compare's JSON, one figure each (repeatable; default: those in the "
                  "run folder)")
      ->check(CLI::ExistingFile);
  app->add_option("--max-constant-curves", o->report.max_constant_curves,
                  "Most sweep curves drawn in the constant-power figure")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--collinearity-pair-r", o->report.collinearity.pair_threshold_abs_r,
                  "Report component pairs whose utilisations correlate with |r| at or above this")
      ->capture_default_str();
  app->add_option("--collinearity-condition-number", o->report.collinearity.condition_number_threshold,
                  "Report a condition number of the standardised utilisation matrix above this")
      ->capture_default_str();
  app->add_option("--default-core-mhz", o->report.corpus_read.default_core_mhz,
                  "Tidy corpora without a preamble: the default core frequency, MHz (default: "
                  "the model's)");
  app->add_option("--default-mem-mhz", o->report.corpus_read.default_mem_mhz,
                  "Tidy corpora without a preamble: the default memory frequency, MHz (default: "
                  "the model's)");
  app->add_flag("--no-figures", o->no_figures, "Write the index without figures (no gnuplot needed)");
}

}  // namespace wattcal
