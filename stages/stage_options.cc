#include "stage_options.h"

#include "stage_common.h"

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

void AddReportOptions(CLI::App* app, ReportStageOptions* o) {
  app->add_option("--run-dir", o->report.run_dir,
                  "Run folder to report on (e.g. reports/titanx): its models, validations, "
                  "training corpus, constant-power result and AccelWattch models and breakdowns "
                  "are found through its provenance/ records (a folder without them is refused)")
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
  app->add_option(
      "--predictions", o->report.predictions,
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
                  "Model of the power breakdown (default: the run's model/model.json)")
      ->check(CLI::ExistingFile);
  app->add_flag(
      "--benchmark-heatmap", o->report.benchmark_heatmap,
      "Also draw the benchmark x benchmark correlation of the training utilisations (TPDS'19 "
      "Fig. 3b; unreadable past a few dozen benchmarks, so only on request)");
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
  app->add_option("--collinearity-condition-number",
                  o->report.collinearity.condition_number_threshold,
                  "Report a condition number of the standardised utilisation matrix above this")
      ->capture_default_str();
  app->add_option("--default-core-mhz", o->report.corpus_read.default_core_mhz,
                  "Tidy corpora without a preamble: the default core frequency, MHz (default: "
                  "the model's)");
  app->add_option("--default-mem-mhz", o->report.corpus_read.default_mem_mhz,
                  "Tidy corpora without a preamble: the default memory frequency, MHz (default: "
                  "the model's)");
  app->add_flag("--no-figures", o->no_figures,
                "Write the index without figures (no gnuplot needed)");
}

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

void AddPerfOptions(CLI::App* app, PerfStageOptions* o) {
  app->add_option("--counters", o->counters_path,
                  "Counters CSV: kernel,base_mhz,total_cycles,lcp_cycles,load_stall_cycles,"
                  "store_stall_cycles[,crit_cycles,lead_cycles,miss_cycles,stall_cycles,"
                  "load_outstanding_cycles]")
      ->check(CLI::ExistingFile);
  app->add_option("--timelines", o->timelines_path,
                  "Event timelines CSV (kernel,base_mhz,issue_width,event,start_cycle,end_cycle,"
                  "issued,flags), classified by CRISP's rules (§3.5)")
      ->check(CLI::ExistingFile);
  app->add_option(
         "--simulate", o->simulate_spec_path,
         "Run a run-time suite (microbench_specs/perf_kernels.json) on the virtual GPU's SM "
         "model and write counters, actual times (and timelines, activity) to --out-dir")
      ->check(CLI::ExistingFile);
  app->add_option("--out", o->out_path,
                  "Predicted times CSV: kernel,model,target_mhz,predicted_time_s")
      ->check(OutputFile());
  app->add_option("--out-dir", o->out_dir, "--simulate: folder of the campaign's files");
  app->add_option("--targets-mhz", o->targets_mhz, "Target core frequencies, MHz (comma-separated)")
      ->delimiter(',');
  app->add_option("--base-mhz", o->base_mhz,
                  "--simulate: base core frequency, MHz (default: the spec's)");
  AddEnumListOption(app, "--models", &o->models, AllPerfModels(), PerfModelName,
                    "Run-time models: crisp, crisp_l, proportional, stall, lead, crit, miss "
                    "(default: every model the counters allow)");
  app->add_option("--miss-latency-cycles", o->miss_latency_cycles,
                  "MISS's fixed latency per contributor miss, base cycles (0: mean load latency)");
  app->add_option("--counters-out", o->counters_out_path, "--timelines: write the derived counters")
      ->check(OutputFile());
  app->add_option("--actual", o->actual_path, "Actual times CSV: kernel,target_mhz,actual_time_s")
      ->check(CLI::ExistingFile);
  app->add_option("--validation-out", o->validation_out_path,
                  "MAPE per model / target / kernel (JSON)")
      ->check(OutputFile());
  app->add_option("--errors-out", o->errors_out_path, "Per-point errors CSV")->check(OutputFile());
  app->add_option("--plot-prefix", o->plot_prefix,
                  "Figures PREFIX_mape.{png,svg} and PREFIX_times_<kernel>.{png,svg}");
  app->add_option("--plot-kernels", o->plot_kernels, "Kernels to draw (default: all)")
      ->delimiter(',');
  app->add_option("--max-mape-pct", o->max_mape_pct,
                  "Exit 3 when crisp's overall run-time MAPE exceeds this (0: no gate)");
  app->add_option(
         "--activity-spec", o->activity_spec_path,
         "--simulate: the virtual GPU's power spec; writes DIR/activity.csv in its layout, "
         "base = its default core frequency, targets = its core levels")
      ->check(CLI::ExistingFile);
  app->add_flag("--write-timelines", o->write_timelines,
                "--simulate: also write DIR/timelines.csv");
  app->add_option("--threads", o->threads, "--simulate: threads")->capture_default_str();
}

void AddDvfsOptions(CLI::App* app, DvfsStageOptions* o) {
  app->add_option("--model", o->model_path, "Power model (wattcal JSON or gpmTOOL), method dvfs")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--activity", o->activity_path,
                  "Per-kernel activity at the default pair (tidy CSV or gpmTOOL file), matched by "
                  "kernel name")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--times", o->times_path, "Predicted times (wattcal-perf --out)")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--out", o->out_path, "Choices CSV: chosen pair, time, power, energy, savings")
      ->check(OutputFile())
      ->required();
  AddEnumOption(app, "--objective", &o->dvfs.objective,
                {DvfsObjective::kEnergy, DvfsObjective::kEdp, DvfsObjective::kEd2p},
                DvfsObjectiveName, "What to minimise: energy, edp or ed2p");
  app->add_option("--max-slowdown-pct", o->dvfs.max_slowdown_pct,
                  "Slowdown budget against the default pair, % (default: none)");
  AddEnumOption(app, "--power-mode", &o->dvfs.power_mode, {PowerMode::kDvfs, PowerMode::kScaling},
                PowerModeName,
                "dvfs: the model's power at each pair; scaling: TPDS Eq. 10 from the measured "
                "power at the default pair");
  AddEnumOption(app, "--activity-scaling", &o->dvfs.activity_scaling,
                {ActivityScaling::kEvents, ActivityScaling::kFixed}, ActivityScalingName,
                "events: utilisations follow the run time (events conserved); fixed: as measured");
  app->add_option("--perf-models", o->dvfs.perf_models,
                  "Run-time models to choose with (default: all)")
      ->delimiter(',');
  app->add_option("--actual", o->actual_path,
                  "True run times (kernel,target_mhz,actual_time_s): score the choices against the "
                  "true optimum")
      ->check(CLI::ExistingFile);
  app->add_option("--summary-out", o->summary_out_path, "Per-model summary (JSON)")
      ->check(OutputFile());
  app->add_option("--curves-out", o->curves_out_path, "Every candidate pair (CSV)")
      ->check(OutputFile());
  app->add_option("--plot-prefix", o->plot_prefix, "Figures PREFIX_<kernel>_<model>.{png,svg}");
  app->add_option("--plot-kernels", o->plot_kernels, "Kernels to draw (default: all)")
      ->delimiter(',');
  app->add_option("--plot-models", o->plot_models, "Run-time models to draw (default: the first)")
      ->delimiter(',');
  app->add_option("--default-core-mhz", o->default_core_mhz,
                  "Tidy activity: default core frequency, MHz");
  app->add_option("--default-mem-mhz", o->default_mem_mhz,
                  "Tidy activity: default memory frequency, MHz");
}

}  // namespace wattcal
