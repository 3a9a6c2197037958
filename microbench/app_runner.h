// wattcal-capture --app: records a user's own program into a capture directory that
// wattcal-ingest --capture and wattcal-predict --capture read (SPEC.md "Real GPUs").
//
//   wattcal-capture --app NAME --out DIR [--repeat N] [--counters] -- CMD ARGS...
//
// The program runs N times under the NVML sampler (the suite's thread and columns), each run
// after an idle gap. Its windows are the parts of each run it marks (WATTCAL_MARKS=FILE,
// marks_file.h), or, when it marks none, the whole run (start-up included). With --counters
// it then runs once more under Nsight Compute (every kernel, or only those inside the marked
// windows: an NVTX range filter) into ncu/NAME.csv, whose launches ingest sums.
//
// The directory (written all at the end, nothing when a step fails or SIGINT, SIGTERM or SIGHUP
// arrives; one recording into it at a time, recording_guard.h):
//   windows.csv        kernel,start_us,end_us,run,mark: one row per window, named NAME
//   nvml_power.csv     the samples of every run, appended in time order
//   ncu/NAME.csv       the counters (ncu's raw page), with --counters
//   marks/NAME.runK.txt  each run's marks file, as the program wrote it
//   logs/ncu_NAME.log  ncu's own messages (stderr), with --counters
//   capture.json       the GPU and, per recording, the command and options ("kind": "apps")
// Adding to a directory appends windows, samples and runs and never truncates: it is refused
// when the directory is not an applications capture, was recorded on another GPU (UUID),
// already has ncu/NAME.csv while --counters is asked again, has a power log with other
// columns, or holds a windows.csv or a power log that its readers would refuse (each checked
// before the runs, the error naming FILE:LINE).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "app_windows.h"
#include "capture_writer.h"
#include "marks_file.h"
#include "runner.h"

namespace wattcal::capture {

struct AppCaptureOptions {
  // The capture directory (created when absent; added to when it holds an applications capture).
  std::string out_dir;
  // The workload's name (windows.csv's kernel column, ncu/NAME.csv): letters, digits and _ . - +.
  std::string name;
  // The command and its arguments, run without a shell.
  std::vector<std::string> command;
  // Runs of the command measured, one after the other.
  int repeat = 1;
  // Idle time before each run, ms (the GPU's power settles back).
  double gap_ms = 1000.0;
  // NVML sampling period, ms.
  double sample_ms = 5.0;
  // Only marks of this name are windows ("" = every mark, which must then all share one name).
  std::string window;
  // Profile the program once more with Nsight Compute into ncu/NAME.csv.
  bool counters = false;
  // The ncu program and the metrics it collects.
  std::string ncu = "ncu";
  std::vector<std::string> metrics;
  // Those of `metrics` the export must give a value for (the GPU description's time bases and
  // required components: GpuDescription::RequiredMetrics): an export without one is not kept, since
  // wattcal-ingest and wattcal-predict would refuse it. Empty = none checked.
  std::vector<std::string> required_metrics;
  // The NVTX push/pop range whose kernels ncu profiles; "" = the marks' name when the windows
  // are marked (the wattcal marks helpers push it), none otherwise.
  std::string nvtx_range;
  // Profile every kernel of the program, marked windows or not.
  bool all_kernels = false;
  // --fields gpm: the NVML GPM metrics recorded beside the power at each tick into
  // gpm_fields.csv (their ids and canonical names; empty: none). The meter's
  // StartFieldSampling must have succeeded. A capture recorded with fields takes only recordings
  // with the same fields, one without them only recordings without.
  std::vector<int> gpm_metric_ids;
  std::vector<std::string> gpm_metric_names;

  bool Check(std::string* error) const;
};

// Runs the command `options.command` under the meter and writes (or adds to) the capture
// directory; `gpu` describes the meter's GPU (capture.json; compared with an existing one).
// Returns the windows added. Throws std::runtime_error naming what failed (the command's exit
// status, a marks file's line, ncu, another recording holding the directory), InputError for a
// marks file or an existing file that breaks its rules, and Interrupted (recording_guard.h) when
// SIGINT, SIGTERM or SIGHUP arrived; the directory is then as it was.
std::vector<WindowRecord> RunAppCapture(const AppCaptureOptions& options, const CaptureInfo& gpu,
                                        PowerMeter& meter, const ProgressFn& progress);

// The ncu command line of the --app counters run (raw page as CSV into `log_file`, clocks as
// they are, every process, optional NVTX push/pop filter).
std::vector<std::string> AppNcuCommand(const AppCaptureOptions& options, const std::string& nvtx_range,
                                       const std::string& log_file);

}  // namespace wattcal::capture
