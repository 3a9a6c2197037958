// The power run and the counters run of wattcal-capture, in plain C++ against two small
// interfaces (the GPU that launches benchmarks, the meter that reads NVML), so that the
// whole run - calibration, back-to-back launches, idle gaps, the sampler thread, the files -
// is the same code on a GPU and in the CPU tests (which pass a simulated device and meter).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "benchmark_device.h"
#include "capture_writer.h"
#include "suite_plan.h"

namespace wattcal::capture {

// The NVML side (nvml_loader.h implements it).
class PowerMeter {
 public:
  virtual ~PowerMeter() = default;
  // One reading, stamped with the system clock (Unix epoch us). Called from the sampler thread.
  virtual PowerSample Read() = 0;
  virtual bool LockCoreClock(int mhz, std::string* error) = 0;
  virtual bool ResetCoreClock(std::string* error) = 0;
  // Field sampling (NVML GPM metrics, --fields): prepares to read these metric ids (nvml.h
  // nvmlGpmMetricId_t) and takes the first sample. False with `error` set when the GPU or its
  // driver has no GPM; a meter without fields says so.
  virtual bool StartFieldSampling(const std::vector<int>& gpm_metric_ids, std::string* error) {
    (void)gpm_metric_ids;
    *error = "this power meter records no GPM fields";
    return false;
  }
  // The metrics over the interval since the previous call (or StartFieldSampling), in the order
  // asked, stamped at the interval's end. Called from the sampler thread.
  virtual FieldSample ReadFields() { return {}; }
};

// What --fields records beside the power log: these GPM metrics, one column each (their
// canonical names, io/field_set.h), into `path` (empty: no field log).
struct FieldRecording {
  std::string path;
  std::vector<int> gpm_metric_ids;
  std::vector<std::string> names;
};

struct RunOptions {
  // The capture directory (created when absent).
  std::string out_dir;
  // Each benchmark is launched back to back for this long, s, unless the plan gives it its own
  // window (Benchmark::window_s: those that reach the power cap).
  double seconds = 2.0;
  // Every window (the plan's own and `seconds`) times this: below 1 rehearses a plan quickly
  // (its capped windows then no longer settle); 1 on a GPU.
  double window_scale = 1.0;
  // Idle gap before each benchmark, ms.
  double gap_ms = 400.0;
  // NVML sampling period, ms.
  double sample_ms = 5.0;
  // Aimed duration of one launch (the calibrated iteration count), ms.
  double launch_ms = 25.0;
  // Idle windows at the start and at the end of the run, s.
  double idle_s = 3.0;
  // Core clocks to lock, MHz, one suite pass each; empty = the clocks are never touched.
  std::vector<int> lock_clocks_mhz;
  // The profiled launch runs this many times fewer iterations than a power-run launch.
  int profile_divisor = 12;
  // --fields: the GPM metrics recorded beside the power at each sampling tick, into
  // out_dir/gpm_fields.csv (empty: none). The meter's StartFieldSampling must have succeeded.
  std::vector<int> gpm_metric_ids;
  std::vector<std::string> gpm_metric_names;

  bool Check(std::string* error) const;
};

// The plan-timing settings (suite_plan.h PlannedSeconds) of a run with these options; `counters`:
// a counters run follows it.
PlanTimingOptions PlanTimingOf(const RunOptions& options, bool counters);

struct RunResult {
  std::vector<WindowRecord> windows;
  std::vector<IdleRecord> idle;
  // The counters run's launches, one per window, in window order.
  std::vector<ProfileEntry> profile;
  int64_t samples = 0;
};

// A progress message ("[12/132] fp32_fma ... 3m20s left").
using ProgressFn = std::function<void(const std::string&)>;

// Runs the plan and writes windows.csv, idle_windows.csv, nvml_power.csv, profile_plan.csv and,
// with gpm_metric_ids, gpm_fields.csv into options.out_dir. Clocks are locked only for lock_clocks_mhz, and reset before
// returning or throwing (and, through InstallClockRestorer, on signals and exit).
// Throws std::runtime_error for what it cannot do (files, clock locking refused).
RunResult RunPowerCapture(const std::vector<Benchmark>& plan, const RunOptions& options,
                          BenchmarkDevice& device, PowerMeter& meter, const ProgressFn& progress);

// The GPM metrics --fields VALUE records: "gpm" = every GPM metric wattcal knows (io/field_set.h
// KnownFields: the utilisations 1-13, PCIe 20-21, NVLink 60-61), or the path of a GPM field set
// (microbench_specs/gpus/fields/*_gpm.json) = the metrics its components read. Ids and canonical
// names in id order. False with `error` naming --fields when the value is neither.
bool ResolveFieldRecording(const std::string& value, std::vector<int>* gpm_metric_ids,
                           std::vector<std::string>* names, std::string* error);

// Launches each entry of the profile plan once (the program run under ncu). Names must be
// in `plan`; throws std::runtime_error otherwise.
void RunProfilePlan(const std::vector<Benchmark>& plan, const std::vector<ProfileEntry>& entries,
                    BenchmarkDevice& device);

// While a clock is locked: resets it on SIGINT, SIGTERM, SIGHUP and at exit (then the signal
// ends the program as it would have). `meter` = nullptr uninstalls.
void InstallClockRestorer(PowerMeter* meter);

// The Nsight Compute metrics of a GPU description (microbench_specs/gpus/*.json): its time
// bases and every component's counters, each once, in file order. Throws InputError.
std::vector<std::string> DescriptionMetrics(const std::string& description_path);
// The metric list of datasets/h100_capture (ncu_metrics.txt), used without a description.
std::vector<std::string> DefaultMetrics();

// The ncu command line of the counters run: one profiled launch per window, clocks as they
// are (--clock-control none), the raw page as CSV on stdout. `program_args` re-run this
// program in profile mode.
std::vector<std::string> NcuCommand(const std::string& ncu, const std::vector<std::string>& metrics,
                                    const std::vector<std::string>& program_args);
// Joins arguments into one shell command line, each quoted.
std::string ShellJoin(const std::vector<std::string>& args);

// The path of `program` on the PATH ("" when absent); a name with a slash is checked as is.
std::string FindProgram(const std::string& program);

// The counters run: `ncu` (NcuCommand) re-runs `program_args` (this program in profile mode),
// its stdout becomes out_dir/ncu_raw.csv as ncu printed it, its stderr out_dir/ncu_stderr.log.
// False with `error` set (naming the log) when ncu cannot start or exits non-zero.
bool RunCounters(const std::string& ncu, const std::vector<std::string>& metrics,
                 const std::vector<std::string>& program_args, const std::string& out_dir,
                 std::string* error);

// Nsight Compute's chip name for a compute capability (90 -> "gh100"), "" when not known here.
std::string NcuChip(int compute_capability);

// The metrics ncu would not know on `chip`: those whose base name (before the first '.') the
// list of `ncu --query-metrics --chip CHIP` lacks. ncu refuses a whole run for one unknown
// metric, so they are left out before the run. Empty, with `note` saying why, when the list
// cannot be had (no chip name, ncu failing): then every metric is asked for.
std::vector<std::string> MetricsTheChipLacks(const std::string& ncu, const std::string& chip,
                                             const std::vector<std::string>& metrics, std::string* note);

// The last line that `command` prints on stdout ("" when it cannot run): ncu --version.
std::string LastLineOf(const std::string& command);

}  // namespace wattcal::capture
