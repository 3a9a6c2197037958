// Capture directories: one measurement campaign's raw dumps in one folder, read as one input
// (issue 10; the layout of datasets/h100_capture and of wattcal-capture's output).
//
//   DIR/windows.csv          kernel,start_us,end_us[,launches,blocks,threads,...]: one row per
//                            measured window (a benchmark or a workload run in a loop).
//   DIR/nvml_power.csv       raw NVML samples: timestamp_us,power_mw[,power_instant_mw,energy_mj,
//                            sm_clock_mhz,mem_clock_mhz,temperature_c]    } at least one of
//   DIR/nvidia_smi_power.csv nvidia-smi --query-gpu log (power.draw*,      } the two logs
//                            power.limit, clocks, clocks_event_reasons)  } (or neither, for
//                                                                        } prediction only)
//   DIR/idle_windows.csv     optional: idle windows, same columns as windows.csv.
//   DIR/ncu_raw.csv          Nsight Compute raw page: one row per profiled launch, one launch
//                            per window, in window order (set-up launches may come first), or
//   DIR/ncu/<workload>.csv   one Nsight Compute export per workload of windows.csv: all its
//                            kernels, whose counts are summed (a real application).
//   DIR/gpm_fields.csv       wattcal-capture --fields gpm: NVML GPM metrics per sampling tick,
//                            read instead of the ncu files through a field set (below).
//
// Power. With both logs, NVML's is the primary source (energy counter, instant power, clocks)
// and nvidia-smi's gives the throttle reasons and the board power limit. The energy of a
// window comes from the best source the logs have: the energy counter, then instant power,
// then 1-s averaged power (with a warning naming the column). Each window is measured from
// settle_ms after its start (steady state), shortened for windows too short for that.
//
// Counters. ncu_raw.csv rows are joined to windows by launch order, never by name: leading
// launches whose configuration differs from the first window's (set-up kernels such as
// k_fill_random) are dropped and named; then the counts must match (an error names both
// files), and every pair is verified by launch configuration (Grid Size x Block Size against
// the window's blocks and threads). ncu/<workload>.csv exports are summed over all their
// launches (counts summed; utilisations from summed counts over summed time, TPDS Eqs. 7-8).
// An export may sit in a subfolder (workload "suite/app" -> ncu/suite/app.csv); an explicit
// run of a workload without an export of its own ("app_run2", "app-run3") takes the workload's
// (ncu/app.csv), with a warning; no other name shares an export ("dram_ld_l2_half" never takes
// ncu/dram_ld.csv). The raw page is joined to windows.csv in launch order, so the windows must
// be in time order (an error names the first two out of order). With both ncu_raw.csv and ncu/, the exports are
// used when every window has one, else the raw page (a warning names the one left out). Units
// are checked for the metrics the GPU description uses only; a metric absent ("n/a") from some
// kernels of a workload counts 0 there, with a warning, and absent from all, or a time base
// absent from any or 0 in any, or a negative count in any launch, is an error. An optional
// component's metric that no export has leaves the component out (warned); one that some
// exports lack counts 0 for their windows, flagged metric_absent (capture_flags.h).
//
// The secondary (nvidia-smi) log is left out, with a warning, when it does not cover every
// window; idle windows outside the primary log are skipped and named, those over a benchmark
// window flagged overlap. The toggle sweep's windows are flagged data_toggle (capture.json
// gives the suite's data; a capture.json that is not JSON is an error). One workload's windows
// from a marked and an unmarked recording (an applications capture's mark column) are refused.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ingest/capture_gpu.h"
#include "ingest/kernel_energy.h"
#include "io/corpus.h"
#include "io/field_set.h"
#include "io/gpu_description.h"
#include "model/app_prediction.h"

namespace wattcal {

struct CaptureCounters;  // below: counters lent by another capture of the same GPU model

// Which of a capture's power logs gives the power: kAuto (NVML's when present, else
// nvidia-smi's), kNvml or kNvidiaSmi.
enum class CapturePowerLog { kAuto, kNvml, kNvidiaSmi };
// "auto" | "nvml" | "nvidia-smi", the names --capture-power takes.
const char* CapturePowerLogName(CapturePowerLog log);

struct CaptureOptions {
  // Each window is measured from this long after its start, ms; a window shorter than
  // 2 x settle_ms is measured from its middle instead (and named in the warnings).
  double settle_ms = 300.0;
  // Which log gives the power.
  CapturePowerLog power_log = CapturePowerLog::kAuto;
  // Flagging thresholds (clock range, samples, CV, temperature drift). Its settle_ms is not
  // used: settle_ms above applies, per window.
  KernelEnergyOptions energy;
  // False: a capture without a power log is read for its counters only (applications to
  // predict without a power meter): its windows get no energy (NaN power, power source
  // "none"), and a capture that has a log is measured as usual.
  bool require_power_log = true;
  // nvidia_smi_power.csv: the GPU to read when the log holds several (an index, UUID or PCI
  // bus id, as --gpu-select), the column names of a noheader log, and the hours the logging
  // machine's clock was ahead of UTC (PowerLogOptions).
  std::string gpu_select;
  std::vector<std::string> smi_columns;
  double utc_offset_h = 0.0;
  // The power column of the log that gives the power ("" = automatic: instant preferred).
  std::string power_field;
  // Captures of different GPUs (by name, from capture.json, the nvidia-smi log or
  // nvidia_smi_q.txt) are refused unless this is set: their utilisations share one
  // description's peaks, which fit one GPU only.
  bool allow_mixed_gpus = false;
  // A GPU description of another GPU than the one the captures name (capture.json, the
  // nvidia-smi log or nvidia_smi_q.txt; io/gpu_description.h DescriptionDescribes) is refused
  // unless this is set; then CaptureReport::other_gpu says so.
  bool allow_other_gpu = false;
  // Captures read through a field set: a window with fewer field samples than this inside it
  // is flagged few_field_samples (left out of training); one with none is an InputError.
  int min_field_samples = 3;
  // Counters lent by a capture of another GPU of the same model (LendCounters): a capture
  // directory with no counters of its own (no ncu_raw.csv, no ncu/) takes each window's counters
  // from the lent window of the same benchmark name (an InputError names a window whose benchmark
  // they lack), and says so in the warnings. The suite's kernels do the same work on every GPU of
  // a model, so one GPU's counters serve them all (issue 39). Read through the description the
  // counters were read with (CaptureCounters::gpu). nullptr: such a capture is refused.
  std::shared_ptr<const CaptureCounters> counters_from;

  bool Check(std::string* error) const;
};

// One measured window of a capture.
struct CaptureWindow {
  // Capture directory and the window's name in windows.csv (the workload).
  std::string capture;
  std::string workload;
  // "benchmark" (windows.csv) or "idle" (idle_windows.csv).
  std::string kind;
  // The window's energy, power, clocks, throttle reasons and flags (start moved by the settle).
  WindowEnergy energy;
  // The window as it ran, no settle trim: its length, s (known without a power log).
  double whole_duration_s = 0.0;
  // Its energy over that length, J, from the same source as `energy` (NaN without a power log).
  double whole_energy_j = std::numeric_limits<double>::quiet_NaN();
  // windows.csv's steps (wattcal-capture --app: the steps the program reported), 0 = not given.
  int64_t steps = 0;
  // windows.csv's launches, blocks, threads (0 = not given).
  int64_t launches = 0;
  int64_t blocks = 0;
  int64_t threads = 0;
  // Where its counters came from: the file, the first launch's line, its kernel name, and the
  // number of profiled launches summed (1 for ncu_raw.csv). Empty for idle windows.
  std::string counters_path;
  int64_t counters_line = 0;
  std::string counters_kernel;
  int counters_launches = 0;
  // The summed kernel time of those launches (the description's duration metric), s.
  double counters_time_s = 0.0;
  // Component utilisations in the description's order (TPDS Eqs. 7-8); empty for idle windows.
  std::vector<double> utilisations;
};

struct CaptureReport {
  GpuDescription gpu;
  // The GPU the captures were recorded on (the first that names one; ingest/capture_gpu.h).
  CaptureGpu recorded_on;
  // When the description is of another GPU and allow_other_gpu let it be used: the sentence
  // saying so (also among the warnings); "" otherwise.
  std::string other_gpu;
  // Every window of every capture, in capture order, benchmarks then idle windows.
  std::vector<CaptureWindow> windows;
  // "FILE:LINE: KERNEL (grid (..) x block (..))" of each profiled launch that belongs to no
  // window (set-up kernels), in file order.
  std::vector<std::string> dropped_launches;
  // ncu/<name>.csv exports that no window names.
  std::vector<std::string> unused_exports;
  // Idle windows that could not be measured (outside the power log), with the reason.
  std::vector<std::string> skipped_idle;
  // Warnings for the terminal and the report (averaged power, short windows, ...).
  std::vector<std::string> warnings;
  // The board power limit (nvidia-smi power.limit), W: the highest of the windows' limits; unset
  // when no log gives one.
  std::optional<double> power_limit_w;
  // Per capture: the power source used ("energy_counter", "instant_power", "averaged_power",
  // or "none" for a capture read without a power log) and the log it came from ("").
  std::vector<std::string> power_sources;
  std::vector<std::string> power_logs;
  // Every file read, for the manifest.
  std::vector<std::string> inputs;

  // The measured table: one row per benchmark window, at its time-weighted clocks (rounded to
  // 1 MHz), its flags (power_cap, clock_moved, ...) and the board limit.
  Corpus ToCorpus() const;
  // The same with one row per workload (the benchmark windows of one name): their summed energy
  // over their summed duration, the time-weighted clocks (rounded to 1 MHz), the flags of any of
  // them, the utilisations of CaptureReport::Workloads(), and its duration_s and energy_j as it
  // ran (Workloads()' duration_s and measured_energy_j: whole windows, no settle trim).
  Corpus ToWorkloadCorpus() const;
  // Per window: capture,workload,kind,start_s,end_s,duration_s,energy_j,mean_power_w,
  // power_source,samples,f_core_mhz,f_core_min_mhz,f_core_max_mhz,f_mem_mhz,clock_reasons,
  // power_limit_w,flags,launches,blocks,threads,counters,counters_line,counters_kernel,
  // counters_launches,util:<component>...
  std::string WindowsCsv() const;
  // For the terminal.
  std::string Summary() const;
  // One entry per workload (benchmark windows of one name, in order of first appearance),
  // for wattcal-predict --capture: its utilisations (the windows' own when they share one
  // export; else their mean weighted by each window's kernel time), the summed kernel time
  // of its exports (each export once), and, when measured, its windows' summed energy over
  // their summed duration with their flags (the steady state: each window from settle_ms after
  // its start); the run as it ran: its windows' summed whole length (duration_s), their summed
  // whole energy (measured_energy_j, NaN when any is unknown) and steps (0 when any window lacks
  // them).
  std::vector<AppActivity> Workloads() const;
};

// One GPU's counters, per benchmark, for the captures of other GPUs of its model that have none
// (CaptureOptions::counters_from).
struct CaptureCounters {
  // The GPU they were measured on (its UUID, "" when unrecorded) and its capture directories.
  std::string uuid;
  std::vector<std::string> captures;
  // The description they were read with, its optional components resolved (a component whose
  // metric the lending capture lacks is left out, as in its own report).
  GpuDescription gpu;
  // Per benchmark name: the first benchmark window of that name (its counters and utilisations).
  std::map<std::string, CaptureWindow> by_workload;
  // The counter files they came from, for the manifest of a capture that borrows them.
  std::vector<std::string> inputs;
};

// The counters of an ingested capture, to lend (its benchmark windows' counters by name).
CaptureCounters LendCounters(const CaptureReport& report);

// Reads every capture directory and joins its windows, power and counters. Throws InputError
// (FILE:LINE: FIELD: message) for what it cannot read or join and OptionError for bad options.
CaptureReport IngestCaptures(const std::vector<std::string>& dirs, const GpuDescription& gpu,
                             const CaptureOptions& options);

// The same through a field set (io/field_set.h): each capture's utilisations come from its field
// log, DIR/gpm_fields.csv (wattcal-capture --fields gpm; ingest/field_log.h "gpm-csv"), each field
// averaged over each window's settled span like its power; ncu files are not read. The report's
// description is the one the set makes (names, domains, default clocks; no metric).
CaptureReport IngestCaptures(const std::vector<std::string>& dirs, const FieldSet& fields,
                             const CaptureOptions& options);

// The one a --gpu file asks for: a field set (io/field_set.h IsFieldSetFile) or an ncu GPU
// description (ReadGpuDescription).
CaptureReport IngestCapturesDescribedBy(const std::vector<std::string>& dirs,
                                        const std::string& description_path,
                                        const CaptureOptions& options);

// The description a prediction of `report` (read through `description_path`) takes: an ncu
// description whole, read again (it tells the optional components that the capture's counters
// left out, which CaptureReport::gpu lacks), or, for a field set, the one the report made of it.
GpuDescription PredictionDescription(const CaptureReport& report,
                                     const std::string& description_path);

}  // namespace wattcal
