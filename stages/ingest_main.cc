// wattcal-ingest: raw measurement dumps -> tidy tables that calibrate/validate read.
//
//   wattcal-ingest --power-log LOG.csv --windows WINDOWS.csv --out KERNELS.csv
//                  [--counters NCU.csv --gpu GPU.json --tidy MEASUREMENTS.csv]
//   wattcal-ingest --counters NCU.csv --gpu GPU.json --activity ACTIVITY.csv
//   wattcal-ingest --counters NCU.csv --description SWEEP.csv --accelwattch-activity OUT.csv
//                  [--power-log LOG.csv --windows WINDOWS.csv --out KERNELS.csv --settle-ms MS]
//   wattcal-ingest --capture DIR [--capture DIR2 ...] --gpu GPU.json --tidy MEASURED.csv
//                  [--out WINDOWS.csv]
#include <fmt/format.h>

#include <cmath>

#include "ingest/capture.h"
#include "ingest/ingest.h"
#include "stage_common.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"

using namespace wattcal;

int main(int argc, char** argv) {
  CLI::App app{"Ingest power logs, kernel windows and counter exports (MTSM energy, TPDS Eqs. 7-8)",
               "wattcal-ingest"};
  IngestInputs in;
  IngestOptions options;
  std::string out_path, tidy_path, activity_path, windows_out_path, instructions_out_path;
  std::string columns;
  app.add_option("--power-log", in.power_log,
                 "Power log: nvidia-smi --query-gpu CSV (any shape), raw NVML samples "
                 "(timestamp_us,power_mw) or dcgmi dmon output")
      ->check(CLI::ExistingFile);
  app.add_option("--windows", in.windows, "Kernel launch windows: kernel,start_us,end_us (or _ms, _s)")
      ->check(CLI::ExistingFile);
  app.add_option("--counters", in.counters,
                 "Counters: Nsight Compute CSV (details or raw page), nvprof --csv --metrics, "
                 "AccelWattch hw_perf.csv")
      ->check(CLI::ExistingFile);
  app.add_option("--gpu", in.gpu_description, "GPU description (microbench_specs/gpus/*.json)")
      ->check(CLI::ExistingFile);
  app.add_option("--instructions", in.instruction_pairs,
                 "Per-instruction energy (Arafa Eq. 1): CSV kernel,overhead_kernel,instructions")
      ->check(CLI::ExistingFile);
  app.add_option("--corpus", in.corpus,
                 "A gpmTOOL training/real/prediction file (or tidy CSV) to convert to tidy form")
      ->check(CLI::ExistingFile);
  std::string counters_table_path, corpus_out_path, kernel_power_out_path, ubench_out_path;
  app.add_option("--kernel-power", in.kernel_power,
                 "AccelWattch's measured power per kernel (hw_power_validation_*.csv)")
      ->check(CLI::ExistingFile);
  app.add_option("--kernel-power-out", kernel_power_out_path,
                 "The --kernel-power table rewritten as kernel,mean_power_w,power_sd_w,power_var_w2,samples")->check(OutputFile());
  app.add_option("--ubench", in.ubench, "AccelWattch microbenchmark run list (ubench.cfg)")
      ->check(CLI::ExistingFile);
  app.add_option("--ubench-out", ubench_out_path, "The --ubench run list rewritten as benchmark,iterations,active_sms,lanes_per_warp")
      ->check(OutputFile());
  std::string accelwattch_activity_path;
  app.add_option("--description", in.description,
                 "Sweep description (wattcal-synth's sweep.csv: kernel,benchmark,category,"
                 "active_sms,lanes_per_warp,f_core_mhz,f_mem_mhz,iterations)")
      ->check(CLI::ExistingFile);
  app.add_option("--accelwattch-activity", accelwattch_activity_path,
                 "AccelWattch's activity table (needs --counters and --description): per "
                 "description kernel its description, elapsed_s, launches, mean_power_w and every "
                 "counter")->check(OutputFile());
  app.add_option("--ubench-sm-count", in.ubench_sm_count, "SMs for ubench lines that omit them")
      ->capture_default_str();
  app.add_option("--counters-table", counters_table_path,
                 "Every counter of every kernel, base units: kernel,benchmark,launches,metric,value")
      ->check(OutputFile());
  app.add_option("--corpus-out", corpus_out_path, "The converted --corpus (tidy CSV)")
      ->check(OutputFile());
  app.add_option("--out", out_path,
                 "Per-kernel energy table: kernel,launches,duration_s,energy_j,mean_power_w,samples,...")
      ->check(OutputFile());
  app.add_option("--tidy", tidy_path,
                 "Measured tidy table for calibrate/validate (needs --counters and --gpu)")
      ->check(OutputFile());
  app.add_option("--activity", activity_path, "Utilisations per kernel (tidy activity table)")
      ->check(OutputFile());
  app.add_option("--windows-out", windows_out_path, "Per-launch energy table")->check(OutputFile());
  app.add_option("--instructions-out", instructions_out_path, "Energy per instruction table")
      ->check(OutputFile());
  app.add_option("--gpu-select", options.log.gpu, "GPU of a multi-GPU log: nvidia-smi index or uuid");
  app.add_option("--power-field", options.log.power_field,
                 "nvidia-smi power field (default: power.draw.instant, else power.draw, else "
                 "power.draw.average)");
  app.add_option("--columns", columns,
                 "Column names of a --format=csv,noheader log, comma-separated query names");
  app.add_option("--utc-offset-h", options.log.utc_offset_h,
                 "nvidia-smi prints local time: hours to subtract to reach the windows' UTC clock")
      ->capture_default_str();
  app.add_option("--dmon-interval-ms", options.log.dmon_interval_ms,
                 "dcgmi dmon without timestamps: its -d interval, ms");
  app.add_option("--min-samples", options.energy.min_samples,
                 "Flag windows with fewer readings inside")
      ->capture_default_str();
  app.add_option("--max-cv", options.energy.max_cv,
                 "Flag windows whose readings vary more (coefficient of variation)")
      ->capture_default_str();
  app.add_option("--max-temp-drift-c", options.energy.max_temp_drift_c,
                 "Flag windows whose temperature drifts more, degrees C")
      ->capture_default_str();
  app.add_flag("--exclude-flagged", options.energy.exclude_flagged,
               "Leave flagged windows out of the per-kernel aggregates");
  app.add_option("--f-core-mhz", options.stated_core_mhz,
                 "For a power log without clock columns: the core clock the whole log ran at, MHz "
                 "(without it, a kernel launched in several windows is an error: its launches "
                 "could come from several V-F pairs)");
  app.add_option("--f-mem-mhz", options.stated_mem_mhz,
                 "For a power log without clock columns: the memory clock the whole log ran at, MHz");
  app.add_option("--settle-ms", options.energy.settle_ms,
                 "Measure each window from this long after its start (steady state, AccelWattch "
                 "§4.1), ms")
      ->capture_default_str();
  std::vector<std::string> captures;
  std::string capture_power = "auto";
  app.add_option("--capture", captures,
                 "A capture directory (windows.csv, nvml_power.csv and/or nvidia_smi_power.csv, "
                 "idle_windows.csv, ncu_raw.csv or ncu/<workload>.csv; see README); repeat to "
                 "combine several into one table. Needs --gpu and --tidy; --out gets the "
                 "per-window table")
      ->check(CLI::ExistingDirectory);
  app.add_option("--capture-power", capture_power,
                 "With --capture: which log gives the power: auto (NVML's energy counter or "
                 "instant power when present, else nvidia-smi), nvml or nvidia-smi")
      ->check(CLI::IsMember({"auto", "nvml", "nvidia-smi"}))
      ->capture_default_str();
  AddLoggingOptions(&app);

  return RunStageMain(&app, argc, argv, [&]() {
    if (!captures.empty()) {
      for (const char* other : {"--power-log", "--windows", "--counters", "--corpus", "--kernel-power",
                                "--ubench", "--description", "--instructions", "--activity",
                                "--windows-out", "--counters-table", "--accelwattch-activity"}) {
        if (app.count(other) > 0) {
          throw OptionError(fmt::format("--capture reads a whole capture directory: {} cannot be "
                                        "combined with it",
                                        other));
        }
      }
      if (in.gpu_description.empty()) {
        throw OptionError("--capture needs --gpu (the GPU description, e.g. "
                          "microbench_specs/gpus/h100_sxm.json)");
      }
      if (tidy_path.empty()) throw OptionError("--capture needs --tidy (the measured table)");
      CaptureOptions capture_options;
      capture_options.energy = options.energy;
      if (app.count("--settle-ms") > 0) capture_options.settle_ms = options.energy.settle_ms;
      capture_options.power_log = capture_power;
      const CaptureResult r =
          IngestCaptures(captures, ReadGpuDescription(in.gpu_description), capture_options);
      std::vector<std::string> inputs = r.inputs;
      inputs.push_back(in.gpu_description);
      nlohmann::json sources = nlohmann::json::array();
      for (size_t i = 0; i < r.power_sources.size(); ++i) {
        sources.push_back({{"capture", captures[i]}, {"power_source", r.power_sources[i]},
                           {"power_log", r.power_logs[i]}});
      }
      const nlohmann::json manifest_options = {
          {"capture", captures},
          {"capture_power", capture_power},
          {"power_sources", sources},
          {"power_limit_w", std::isfinite(r.power_limit_w) ? nlohmann::json(r.power_limit_w)
                                                          : nlohmann::json()},
          {"settle_ms", capture_options.settle_ms},
          {"min_samples", options.energy.min_samples},
          {"max_cv", options.energy.max_cv},
          {"max_temp_drift_c", options.energy.max_temp_drift_c},
          {"max_clock_range_frac", capture_options.energy.max_clock_range_frac},
          {"dropped_launches", r.dropped_launches},
          {"skipped_idle_windows", r.skipped_idle}};
      Corpus corpus = r.ToCorpus();
      corpus.path = tidy_path;
      OutputSet outputs;
      outputs.StageText(tidy_path, CorpusToTidyCsv(corpus));
      outputs.StageManifest(tidy_path, "ingest", inputs, manifest_options);
      if (!out_path.empty()) {
        outputs.StageText(out_path, r.WindowsCsv());
        outputs.StageManifest(out_path, "ingest", inputs, manifest_options);
      }
      outputs.Commit();
      for (const std::string& w : r.warnings) LogWarning(w);
      LogInfo(r.Summary());
      return static_cast<int>(kExitOk);
    }
    if (!columns.empty()) {
      size_t start = 0;
      while (start <= columns.size()) {
        const size_t comma = columns.find(',', start);
        options.log.columns.push_back(columns.substr(start, comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    }
    if (!in.power_log.empty() && out_path.empty() && accelwattch_activity_path.empty()) {
      throw OptionError("--power-log needs --out (or --accelwattch-activity, whose mean_power_w it "
                        "measures)");
    }
    if (!tidy_path.empty() && (in.power_log.empty() || in.counters.empty())) {
      throw OptionError("--tidy needs --power-log, --windows, --counters and --gpu");
    }
    if (!activity_path.empty() && (in.counters.empty() || in.gpu_description.empty())) {
      throw OptionError("--activity needs --counters and --gpu");
    }
    if (!counters_table_path.empty() && in.counters.empty()) {
      throw OptionError("--counters-table needs --counters");
    }
    if (!accelwattch_activity_path.empty() && (in.counters.empty() || in.description.empty())) {
      throw OptionError("--accelwattch-activity needs --counters and --description");
    }
    if (!in.description.empty() && accelwattch_activity_path.empty()) {
      throw OptionError("--description needs --accelwattch-activity (the table it describes)");
    }
    if (!in.corpus.empty() && corpus_out_path.empty()) throw OptionError("--corpus needs --corpus-out");
    if (!in.kernel_power.empty() && kernel_power_out_path.empty()) {
      throw OptionError("--kernel-power needs --kernel-power-out");
    }
    if (!in.ubench.empty() && ubench_out_path.empty()) throw OptionError("--ubench needs --ubench-out");
    if (!in.counters.empty() && in.gpu_description.empty() && counters_table_path.empty() &&
        accelwattch_activity_path.empty()) {
      throw OptionError(
          "--counters needs --gpu (for utilisations), --counters-table or --accelwattch-activity");
    }
    if (!instructions_out_path.empty() && in.instruction_pairs.empty()) {
      throw OptionError("--instructions-out needs --instructions");
    }
    if (!in.instruction_pairs.empty() && instructions_out_path.empty()) {
      throw OptionError("--instructions needs --instructions-out");
    }
    options.windows_table = !windows_out_path.empty();
    const IngestResult r = Ingest(in, options);

    std::vector<std::string> inputs;
    for (const std::string& p : {in.power_log, in.windows, in.counters, in.gpu_description,
                                 in.instruction_pairs, in.corpus, in.kernel_power, in.ubench,
                                 in.description}) {
      if (!p.empty()) inputs.push_back(p);
    }
    const nlohmann::json manifest_options = {
        {"gpu_select", options.log.gpu},
        {"power_field", r.energy.power_field},
        {"columns", options.log.columns},
        {"utc_offset_h", options.log.utc_offset_h},
        {"dmon_interval_ms", options.log.dmon_interval_ms},
        {"min_samples", options.energy.min_samples},
        {"max_cv", options.energy.max_cv},
        {"max_temp_drift_c", options.energy.max_temp_drift_c},
        {"exclude_flagged", options.energy.exclude_flagged},
        {"settle_ms", options.energy.settle_ms}};
    OutputSet outputs;
    auto write = [&](const std::string& path, const std::string& content) {
      if (path.empty()) return;
      outputs.StageText(path, content);
      outputs.StageManifest(path, "ingest", inputs, manifest_options);
    };
    write(out_path, r.kernels_csv);
    write(windows_out_path, r.windows_csv);
    write(tidy_path, r.tidy_csv);
    write(activity_path, r.activity_csv);
    write(instructions_out_path, r.instructions_csv);
    write(counters_table_path, r.counters_csv);
    write(corpus_out_path, r.corpus_tidy_csv);
    write(kernel_power_out_path, r.kernel_power_csv);
    write(ubench_out_path, r.ubench_csv);
    write(accelwattch_activity_path, r.accelwattch_activity_csv);
    outputs.Commit();
    LogInfo(r.summary);
    return static_cast<int>(kExitOk);
  });
}
