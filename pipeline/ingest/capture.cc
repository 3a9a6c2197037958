#include "ingest/capture.h"
#include "ingest/internal/capture_fields.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "ingest/capture_gpu.h"
#include "ingest/internal/capture_flags.h"
#include "ingest/internal/capture_join.h"
#include "ingest/internal/capture_files.h"
#include "ingest/internal/workload_launches.h"
#include "ingest/counters.h"
#include "ingest/kernel_energy_pass.h"
#include "ingest/kernel_windows.h"
#include "ingest/power_log.h"
#include "ingest/utilisation.h"
#include "util/csv_field.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/nan.h"
#include "util/option_rule.h"

namespace wattcal {

namespace fs = std::filesystem;

const char* CapturePowerLogName(CapturePowerLog log) {
  switch (log) {
    case CapturePowerLog::kAuto: return "auto";
    case CapturePowerLog::kNvml: return "nvml";
    case CapturePowerLog::kNvidiaSmi: return "nvidia-smi";
  }
  return "auto";
}

bool CaptureOptions::Check(std::string* error) const {
  if (!(std::isfinite(settle_ms) && settle_ms >= 0.0))
    return RejectOption(error, "--settle-ms: {} is not a time >= 0 ms", settle_ms);
  if (min_field_samples < 1)
    return RejectOption(error, "--min-field-samples: {} is not a count >= 1", min_field_samples);
  return energy.Check(error);
}

using capture_internal::CaptureFiles;
using capture_internal::ExportOf;
using capture_internal::FieldSetDescription;
using capture_internal::FindFiles;
using capture_internal::FlagIdleOverBenchmarks;
using capture_internal::FlagToggleSweep;
using capture_internal::JoinFieldLog;
using capture_internal::ListExports;
using capture_internal::MetricRole;
using capture_internal::MetricRoles;
using capture_internal::NeededMetrics;
using capture_internal::OptionalMetrics;
using capture_internal::RefuseConfigMismatch;
using capture_internal::RefuseLaunchCount;
using capture_internal::RefuseMixedMarks;
using capture_internal::RefuseShiftedJoin;
using capture_internal::RefuseUnsortedWindows;
using capture_internal::ResolveOptionalMetrics;
using capture_internal::SkipSetupLaunches;
using capture_internal::WorkloadLaunches;

namespace {

// Utilisations of summed counters; an absent optional metric gives NaN (ResolveOptionalMetrics
// leaves its component out, or counts it 0 with a flag), an absent required one was refused.
std::vector<double> Utilisations(const KernelCounters& k, const GpuDescription& gpu) {
  std::vector<std::string> missing;
  return ComputeUtilisations(k, gpu, &missing);
}

// The time range [first, last] of a power log, seconds (one pass).
std::pair<double, double> LogRange(const std::string& path, const PowerLogOptions& options) {
  PowerLogReader reader(path, options);
  PowerSample s;
  while (reader.Next(&s)) {
  }
  return {reader.stats().first_time_s, reader.stats().last_time_s};
}

// Whether every window lies inside [range.first, range.second].
bool Covers(const std::pair<double, double>& range, const std::vector<KernelWindow>& windows) {
  for (const KernelWindow& w : windows) {
    if (w.start_s < range.first || w.end_s > range.second) return false;
  }
  return true;
}

// Warnings naming the windows whose power log had a gap or whose energy counter disagreed
// with the instant power.
void NameUnreliableWindows(const KernelEnergyReport& measured, const std::string& windows_path,
                           const std::string& log, std::vector<std::string>* warnings) {
  for (const WindowEnergy& w : measured.windows) {
    if (w.flags & kFlagSampleGap) {
      warnings->push_back(fmt::format(
          "{}:{}: {}: no power reading for {:.3f} s ({}, lines {}-{}) inside the window or across "
          "its edges: "
          "flagged sample_gap (left out of training; its energy rests on interpolation across the "
          "gap)",
          windows_path, w.line, w.kernel, w.max_gap_s, log, w.gap_from_line, w.gap_to_line));
    }
    if ((w.flags & kFlagCounterMismatch) && w.counter_freeze.held_s > 0.0) {
      warnings->push_back(fmt::format(
          "{}:{}: {}: the energy counter did not advance for {:.1f} s ({}, lines {}-{}) while "
          "the power read {:.0f} W: it was frozen, its {:.1f} W is not believed and the window is "
          "measured from the {} ({:.1f} W; flagged counter_mismatch)",
          windows_path, w.line, w.kernel, w.counter_freeze.held_s, log, w.counter_freeze.from_line,
          w.counter_freeze.to_line, w.counter_freeze.power_w, w.counter_energy_j / w.duration_s,
          w.power_source == "instant_power" ? "instant power" : "averaged power", w.mean_power_w));
    } else if (w.flags & kFlagCounterMismatch) {
      warnings->push_back(
          fmt::format("{}:{}: {}: the energy counter gives {:.1f} W but the instant power {:.1f} W "
                      "({:+.1f}%; {}): the "
                      "counter is not believed (frozen or stepped?) and the window is measured "
                      "from the instant power "
                      "(flagged counter_mismatch)",
                      windows_path, w.line, w.kernel, w.counter_energy_j / w.duration_s,
                      w.mean_power_w, 100.0 * (w.counter_energy_j - w.energy_j) / w.energy_j, log));
    }
  }
}

// The windows of a capture without a power log: their times, no energy.
KernelEnergyReport Unmeasured(const std::vector<KernelWindow>& windows) {
  KernelEnergyReport r;
  r.power_source_name = "none";
  for (const KernelWindow& w : windows) {
    WindowEnergy e;
    e.kernel = w.kernel;
    e.line = w.line;
    e.start_s = w.start_s;
    e.end_s = w.end_s;
    e.duration_s = DurationS(w);
    for (double* v :
         {&e.energy_j, &e.mean_power_w, &e.papi_energy_j, &e.sma_max_power_w, &e.temp_drift_c,
          &e.cv, &e.f_core_mhz, &e.f_mem_mhz, &e.f_core_min_mhz, &e.f_core_max_mhz,
          &e.f_mem_min_mhz, &e.f_mem_max_mhz, &e.trapezoid_energy_j}) {
      *v = kNaN;
    }
    e.power_source = "none";
    r.windows.push_back(e);
  }
  return r;
}

// Windows shorter than twice the settle time are measured over their second half.
std::vector<KernelWindow> Settle(std::vector<KernelWindow> windows, double settle_ms,
                                 const std::string& path, std::vector<std::string>* warnings) {
  const double settle_s = settle_ms * 1e-3;
  for (KernelWindow& w : windows) {
    const double d = w.end_s - w.start_s;
    if (d >= 2.0 * settle_s) {
      DelayWindowStart(&w, settle_s);
    } else {
      DelayWindowStart(&w, 0.5 * d);
      if (settle_s > 0.0) {
        warnings->push_back(fmt::format(
            "{}:{}: {}: the window lasts {:.1f} ms, shorter than twice the settle time ({} ms): "
            "measured over its second half",
            path, w.line, w.kernel, d * 1e3, settle_ms));
      }
    }
  }
  return windows;
}

}  // namespace

namespace {

// The metrics a capture's counters are read for: those the description reads, its optional
// components', the units each may carry, and the columns kept from an export.
struct MetricSelection {
  explicit MetricSelection(const GpuDescription& g)
      : gpu(g),
        needed(NeededMetrics(g)),
        optional(NeededMetrics(g, /*optional=*/true)),
        roles(MetricRoles(g)),
        keep(needed.begin(), needed.end()) {
    keep.insert(optional.begin(), optional.end());
    keep.insert("gpu__time_duration.sum");  // the summed launches' duration weights
    keep.insert("Duration");
  }
  const GpuDescription& gpu;
  const std::vector<std::string> needed;
  const std::vector<std::string> optional;
  const std::map<std::string, MetricRole> roles;
  std::set<std::string> keep;
};

// A capture's power logs: primary = the power source, secondary = throttle reasons and limit;
// the GPU, noheader columns and clock offset are nvidia-smi's options, the power column is the
// one of the log that gives the power.
struct CaptureLogs {
  std::string nvml;  // the capture's nvml_power.csv, which takes nvml_options
  std::string primary, secondary;
  std::pair<double, double> secondary_range;  // read once, when both logs are there
  PowerLogOptions nvml_options, smi_options;
  const PowerLogOptions& OptionsOf(const std::string& log) const {
    return log == nvml ? nvml_options : smi_options;
  }
};

// Refuses a capture measured on another GPU than the first named one (unless --mixed-gpus).
void CheckSameGpu(const CaptureFiles& f, const CaptureOptions& options, CaptureGpu* first_gpu,
                  std::string* first_gpu_dir) {
  const CaptureGpu gpu = ReadCaptureGpu(f.dir);  // ingest/capture_gpu.h
  if (gpu.name.empty()) return;
  if (first_gpu->name.empty()) {
    *first_gpu = gpu, *first_gpu_dir = f.dir;
  } else if (gpu.name != first_gpu->name && !options.allow_mixed_gpus) {
    throw InputError(
        f.dir, 0, "",
        fmt::format("measured on {}, but {} was measured on {}: captures of different GPUs share "
                    "one description's peaks and counts, which fit one GPU only (give each GPU "
                    "its own run, or --mixed-gpus to combine them anyway)",
                    gpu.name, *first_gpu_dir, first_gpu->name));
  }
}

// Refuses a description (--gpu) of another GPU than the one the captures were recorded on, unless
// CaptureOptions::allow_other_gpu (then the report says so). Nothing to compare when no file of
// the captures names their GPU.
void CheckDescriptionFits(const GpuDescription& gpu, const CaptureOptions& options,
                          const std::string& dir, CaptureReport* r) {
  const CaptureGpu& on = r->recorded_on;
  if (on.name.empty() || DescriptionDescribes(gpu, on.name)) return;
  const std::string what = fmt::format(
      "{} was recorded on {}, but the GPU description {} is of another GPU ('{}')", dir,
      DescribeCaptureGpu(on), gpu.path.empty() ? std::string("given") : gpu.path, gpu.name);
  if (!options.allow_other_gpu) {
    throw InputError(on.source, 0, "",
                     what +
                         ": its counters, units and peaks turn counts into utilisations for "
                         "that GPU only. Give the description of " +
                         on.name +
                         " (microbench_specs/gpus/), or --allow-other-gpu to use this one anyway");
  }
  r->other_gpu = what + ": used anyway (--allow-other-gpu)";
  r->warnings.push_back(r->other_gpu);
}

// The capture's power logs as --capture-power picks them, with their reader options.
CaptureLogs ChooseLogs(const CaptureFiles& f, const CaptureOptions& options) {
  CaptureLogs logs;
  logs.nvml = f.nvml;
  if (options.power_log == CapturePowerLog::kNvml) {
    if (f.nvml.empty()) throw InputError(f.dir, 0, "", "--capture-power nvml: no nvml_power.csv");
    logs.primary = f.nvml, logs.secondary = f.smi;
  } else if (options.power_log == CapturePowerLog::kNvidiaSmi) {
    if (f.smi.empty()) {
      throw InputError(f.dir, 0, "", "--capture-power nvidia-smi: no nvidia_smi_power.csv");
    }
    logs.primary = f.smi;
  } else {
    logs.primary = f.nvml.empty() ? f.smi : f.nvml;
    logs.secondary = f.nvml.empty() ? std::string() : f.smi;
  }
  logs.smi_options.gpu = options.gpu_select;
  logs.smi_options.columns = options.smi_columns;
  logs.smi_options.utc_offset_h = options.utc_offset_h;
  (logs.primary == f.nvml ? logs.nvml_options : logs.smi_options).power_field = options.power_field;
  return logs;
}

// The secondary log only adds throttle reasons and the limit: when it does not cover every
// window (started late, stopped early), it is left out with a warning rather than failing.
// Its range is read once, for the windows and the idle windows.
void DropUncoveredSecondary(const std::vector<KernelWindow>& windows,
                            const std::string& windows_path, CaptureLogs* logs,
                            std::vector<std::string>* warnings) {
  if (logs->secondary.empty() || logs->primary.empty()) return;
  logs->secondary_range = LogRange(logs->secondary, logs->OptionsOf(logs->secondary));
  for (const KernelWindow& w : windows) {
    if (Covers(logs->secondary_range, {w})) continue;
    warnings->push_back(fmt::format(
        "{}: it covers [{:.3f}, {:.3f}] s but the window {}:{} ({}) runs [{:.3f}, {:.3f}] s: "
        "its throttle reasons and power limit are not used (windows are flagged by their "
        "clocks only; give the limit to predict/validate with --power-limit-w)",
        logs->secondary, logs->secondary_range.first, logs->secondary_range.second, windows_path,
        w.line, w.kernel, w.start_s, w.end_s));
    logs->secondary.clear();
    break;
  }
}

// Whether the counters come from ncu_raw.csv rather than ncu/'s exports. With both, the exports
// are used when every window has one, else the raw page; the other is named.
bool UseRawPage(const CaptureFiles& f, const std::vector<KernelWindow>& windows,
                std::vector<std::string>* warnings) {
  bool use_raw = !f.ncu_raw.empty();
  if (!f.ncu_raw.empty() && !f.ncu_dir.empty()) {
    const std::map<std::string, std::string> exports = ListExports(f.ncu_dir);
    bool all = true;
    for (const KernelWindow& w : windows)
      all = all && !ExportOf(exports, w.kernel, "", nullptr).empty();
    use_raw = !all;
    warnings->push_back(fmt::format(
        "{}: both ncu_raw.csv and ncu/ are present: {} is used ({}), {} is not", f.dir,
        use_raw ? f.ncu_raw : f.ncu_dir,
        use_raw ? "not every window has an export in ncu/" : "every window has an export",
        use_raw ? f.ncu_dir : f.ncu_raw));
  }
  return use_raw;
}

// Counters per window from the raw page, one launch per window in launch order (`out` has one
// entry per window).
void JoinRawPage(const CaptureFiles& f, const std::vector<KernelWindow>& windows,
                 const MetricSelection& metrics, OptionalMetrics* optional, CaptureReport* r,
                 std::vector<CaptureWindow>* out) {
  RefuseUnsortedWindows(windows, f.windows, f.ncu_raw);
  r->inputs.push_back(f.ncu_raw);
  std::vector<CounterLaunch> launches;  // with the metrics the description reads only
  ForEachCounterLaunch(f.ncu_raw, &metrics.keep,
                       [&](CounterLaunch&& l) { launches.push_back(std::move(l)); });
  const size_t first = SkipSetupLaunches(launches, windows, f.windows, &r->dropped_launches);
  const size_t n = launches.size() - first;
  RefuseShiftedJoin(launches, first, windows, f.windows, f.ncu_raw);
  RefuseLaunchCount(launches, first, windows, f.windows, f.ncu_raw);
  for (size_t i = 0; i < n; ++i) {
    const CounterLaunch& l = launches[first + i];
    const KernelWindow& w = windows[i];
    RefuseConfigMismatch(l, i, w, f.windows);
    WorkloadLaunches one(w.kernel, metrics.needed, metrics.optional, metrics.roles, metrics.gpu);
    one.Add(l);
    one.Finish(optional, &r->warnings);
    CaptureWindow& c = (*out)[i];
    c.counters_path = l.path;
    c.counters_line = l.line;
    c.counters_kernel = l.kernel;
    c.counters_launches = 1;
    c.counters_time_s = one.kernel_time_s();
    c.utilisations = Utilisations(one.Sum(), metrics.gpu);
  }
}

// Counters per window lent by another GPU's capture (CaptureOptions::counters_from), by benchmark
// name; the description must be the one they were read with.
void BorrowCounters(const CaptureFiles& f, const std::vector<KernelWindow>& windows,
                    const CaptureCounters& lent, const MetricSelection& metrics, CaptureReport* r,
                    std::vector<CaptureWindow>* out) {
  if (lent.gpu.components.size() != metrics.gpu.components.size()) {
    throw OptionError(fmt::format(
        "{}: the counters lent by {} were read with {} components, this description has {}: "
        "read the capture with the description the counters were read with "
        "(CaptureCounters::gpu)",
        f.dir, lent.uuid, lent.gpu.components.size(), metrics.gpu.components.size()));
  }
  for (size_t i = 0; i < windows.size(); ++i) {
    const auto it = lent.by_workload.find(windows[i].kernel);
    if (it == lent.by_workload.end()) {
      throw InputError(
          f.windows, windows[i].line, "kernel",
          fmt::format("no counters for benchmark '{}': the capture has none of its own (no "
                      "ncu_raw.csv, no ncu/) and the counters lent by {} ({}) have no window "
                      "of that name",
                      windows[i].kernel, lent.uuid.empty() ? "another GPU" : lent.uuid,
                      fmt::join(lent.captures, ", ")));
    }
    const CaptureWindow& c = it->second;
    CaptureWindow& o = (*out)[i];
    o.counters_path = c.counters_path;
    o.counters_line = c.counters_line;
    o.counters_kernel = c.counters_kernel;
    o.counters_launches = c.counters_launches;
    o.counters_time_s = c.counters_time_s;
    o.utilisations = c.utilisations;
  }
  r->warnings.push_back(fmt::format(
      "{}: no counters of its own: each window's counters are those of the same benchmark on {} "
      "({}), a GPU of the same model",
      f.dir, lent.uuid.empty() ? "another GPU" : lent.uuid, fmt::join(lent.captures, ", ")));
  for (const std::string& p : lent.inputs) {
    if (std::find(r->inputs.begin(), r->inputs.end(), p) == r->inputs.end()) r->inputs.push_back(p);
  }
}

// Counters per window from ncu/'s exports, one export per workload, each read once; the exports
// no window uses are named.
void ReadExports(const CaptureFiles& f, const std::vector<KernelWindow>& windows,
                 const MetricSelection& metrics, OptionalMetrics* optional, CaptureReport* r,
                 std::vector<CaptureWindow>* out) {
  const std::map<std::string, std::string> exports = ListExports(f.ncu_dir);
  std::map<std::string, CaptureWindow> done;  // export path -> its counters, read once
  std::set<std::string> used;
  for (size_t i = 0; i < windows.size(); ++i) {
    const KernelWindow& w = windows[i];
    const std::string export_path =
        ExportOf(exports, w.kernel, fmt::format("{}:{}", f.windows, w.line), &r->warnings);
    if (export_path.empty()) {
      throw InputError(f.windows, w.line, "kernel",
                       fmt::format("no counters for workload '{}': expected {}/{}.csv ({} has "
                                   "{} exports)",
                                   w.kernel, f.ncu_dir, w.kernel, f.ncu_dir, exports.size()));
    }
    used.insert(export_path);
    auto cached = done.find(export_path);
    if (cached == done.end()) {
      // Launch by launch, only the metrics the description reads: memory bounded by them,
      // not by the launches.
      WorkloadLaunches all(w.kernel, metrics.needed, metrics.optional, metrics.roles, metrics.gpu);
      ForEachCounterLaunch(export_path, &metrics.keep, [&](CounterLaunch&& l) { all.Add(l); });
      if (all.launches() == 0) throw InputError(export_path, 0, "", "no profiled launches");
      all.Finish(optional, &r->warnings);
      CaptureWindow c;
      c.counters_path = export_path;
      c.counters_line = all.first_line();
      c.counters_kernel =
          all.launches() == 1 ? all.first_kernel() : fmt::format("{} kernels", all.launches());
      c.counters_launches = static_cast<int>(all.launches());
      c.counters_time_s = all.kernel_time_s();
      c.utilisations = Utilisations(all.Sum(), metrics.gpu);
      cached = done.emplace(export_path, c).first;
      r->inputs.push_back(export_path);
    }
    (*out)[i] = cached->second;
  }
  for (const auto& [name, path] : exports) {
    if (!used.count(path)) r->unused_exports.push_back(path);
  }
}

// Each window's energy as it ran (its whole length, no settle trim: the energy of the run that a
// user pays for), from the source the settled measurement chose; NaN without a power log and for
// a window whose start lies before the log's first reading (its settled part may not).
std::vector<double> WholeWindowEnergiesJ(const CaptureFiles& f, const CaptureLogs& logs,
                                         const std::vector<KernelWindow>& windows,
                                         const KernelEnergyReport& measured,
                                         const KernelEnergyOptions& energy_options) {
  std::vector<double> energy_j(windows.size(), kNaN);
  if (logs.primary.empty()) return energy_j;
  std::vector<KernelWindow> covered;
  std::vector<size_t> index;
  for (size_t i = 0; i < windows.size(); ++i) {
    if (!Covers({measured.log_stats.first_time_s, measured.log_stats.last_time_s}, {windows[i]}))
      continue;
    covered.push_back(windows[i]);
    index.push_back(i);
  }
  if (covered.empty()) return energy_j;
  const KernelEnergyReport whole = MeasureKernelEnergiesWithReasons(
      logs.primary, logs.OptionsOf(logs.primary), "", {}, covered, f.windows, energy_options);
  for (size_t k = 0; k < index.size(); ++k) energy_j[index[k]] = whole.windows[k].energy_j;
  return energy_j;
}

// Adds the capture's benchmark windows, their counters in `out`, with their energies (settled,
// and `whole_energy_j` as they ran); the report's power limit is the highest any window saw.
void AddBenchmarkWindows(const CaptureFiles& f, const std::vector<KernelWindow>& windows,
                         const KernelEnergyReport& measured,
                         const std::vector<double>& whole_energy_j, std::vector<CaptureWindow>* out,
                         CaptureReport* r) {
  const size_t first_window = r->windows.size();
  for (size_t i = 0; i < windows.size(); ++i) {
    CaptureWindow& c = (*out)[i];
    c.capture = f.dir;
    c.workload = windows[i].kernel;
    c.kind = "benchmark";
    c.energy = measured.windows[i];
    c.whole_duration_s = DurationS(windows[i]);
    c.whole_energy_j = whole_energy_j[i];
    c.steps = windows[i].steps;
    c.launches = windows[i].launches;
    c.blocks = windows[i].blocks;
    c.threads = windows[i].threads;
    if (c.energy.power_limit_w) {
      r->power_limit_w =
          std::max(r->power_limit_w.value_or(*c.energy.power_limit_w), *c.energy.power_limit_w);
    }
    r->windows.push_back(std::move(c));
  }
  FlagToggleSweep(f.dir, f.windows, &r->windows, first_window, &r->warnings);
}

// Idle windows: measured the same way; those outside the log are skipped and named, those over
// a benchmark window (`benchmarks`) flagged overlap.
void AddIdleWindows(const CaptureFiles& f, const CaptureLogs& logs,
                    const KernelEnergyReport& measured, const std::vector<KernelWindow>& benchmarks,
                    double settle_ms, const KernelEnergyOptions& energy_options, CaptureReport* r) {
  if (f.idle_windows.empty()) return;
  if (logs.primary.empty()) {
    r->skipped_idle.push_back(
        fmt::format("{}: not measured: the capture has no power log", f.idle_windows));
    return;
  }
  const std::vector<KernelWindow> idle_all = ReadKernelWindows(f.idle_windows);
  // The primary log's range, as the measurement of the windows read it.
  const double first_s = measured.log_stats.first_time_s;
  const double last_s = measured.log_stats.last_time_s;
  std::vector<KernelWindow> idle;
  for (const KernelWindow& w : idle_all) {
    if (!Covers({first_s, last_s}, {w})) {
      r->skipped_idle.push_back(fmt::format(
          "{}:{}: {}: [{:.6f}, {:.6f}] s is not inside the power log's [{:.6f}, {:.6f}] s",
          f.idle_windows, w.line, w.kernel, w.start_s, w.end_s, first_s, last_s));
      continue;
    }
    idle.push_back(w);
  }
  if (idle.empty()) return;
  const std::string idle_secondary = !logs.secondary.empty() && Covers(logs.secondary_range, idle)
                                         ? logs.secondary
                                         : std::string();
  const KernelEnergyReport idle_measured = MeasureKernelEnergiesWithReasons(
      logs.primary, logs.OptionsOf(logs.primary), idle_secondary, logs.OptionsOf(idle_secondary),
      Settle(idle, settle_ms, f.idle_windows, &r->warnings), f.idle_windows, energy_options);
  const size_t first = r->windows.size();
  for (size_t i = 0; i < idle.size(); ++i) {
    CaptureWindow c;
    c.capture = f.dir;
    c.workload = idle[i].kernel;
    c.kind = "idle";
    c.energy = idle_measured.windows[i];
    r->windows.push_back(std::move(c));
  }
  FlagIdleOverBenchmarks(benchmarks, f.windows, f.idle_windows, idle, &r->windows, first,
                         &r->warnings);
}

// One capture directory: its windows' energies from the power logs, their counters, its idle
// windows; everything goes to `r`, the optional metrics some export lacks to `optional`.
// `fields` (not null): the utilisations come from the capture's field log through that set.
void IngestCapture(const CaptureFiles& f, const CaptureOptions& options,
                   const MetricSelection& metrics, const FieldSet* fields,
                   OptionalMetrics* optional, CaptureReport* r) {
  CaptureLogs logs = ChooseLogs(f, options);
  const std::vector<KernelWindow> windows = ReadKernelWindows(f.windows);
  if (windows.empty()) throw InputError(f.windows, 1, "", "no windows after the header");
  RefuseMixedMarks(windows, f.windows);
  KernelEnergyOptions energy_options = options.energy;
  energy_options.settle_ms = 0.0;  // applied here, per window
  DropUncoveredSecondary(windows, f.windows, &logs, &r->warnings);
  const KernelEnergyReport measured =
      logs.primary.empty() ? Unmeasured(windows)
                           : MeasureKernelEnergiesWithReasons(
                                 logs.primary, logs.OptionsOf(logs.primary), logs.secondary,
                                 logs.OptionsOf(logs.secondary),
                                 Settle(windows, options.settle_ms, f.windows, &r->warnings),
                                 f.windows, energy_options);
  NameUnreliableWindows(measured, f.windows, logs.primary, &r->warnings);
  r->power_sources.push_back(measured.power_source_name);
  r->power_logs.push_back(logs.primary);
  for (const std::string& p : {f.windows, logs.primary, logs.secondary, f.idle_windows}) {
    if (!p.empty()) r->inputs.push_back(p);
  }
  std::vector<CaptureWindow> out(windows.size());
  std::vector<uint32_t> field_flags(windows.size(), 0);
  if (fields != nullptr) {
    std::vector<std::string> said;  // Settle's warnings, given once above
    field_flags = JoinFieldLog(f, Settle(windows, options.settle_ms, f.windows, &said), *fields,
                               options.min_field_samples, &r->inputs, &out);
  } else if (f.ncu_raw.empty() && f.ncu_dir.empty() && options.counters_from) {
    BorrowCounters(f, windows, *options.counters_from, metrics, r, &out);
  } else if (UseRawPage(f, windows, &r->warnings)) {
    JoinRawPage(f, windows, metrics, optional, r, &out);
  } else {
    ReadExports(f, windows, metrics, optional, r, &out);
  }
  const size_t first = r->windows.size();
  AddBenchmarkWindows(f, windows, measured,
                      WholeWindowEnergiesJ(f, logs, windows, measured, energy_options), &out, r);
  for (size_t i = 0; i < windows.size(); ++i) {
    if (field_flags[i] == 0) continue;
    r->windows[first + i].energy.flags |= field_flags[i];
    r->warnings.push_back(fmt::format(
        "{}:{}: {}: {} field samples in the window, fewer than {} (flagged few_field_samples, left "
        "out of training)",
        f.windows, windows[i].line, windows[i].kernel, r->windows[first + i].counters_launches,
        options.min_field_samples));
  }
  AddIdleWindows(f, logs, measured, windows, options.settle_ms, energy_options, r);
}

}  // namespace

namespace {

// Both kinds of description: an ncu one (`fields` null) or a field set's.
CaptureReport IngestWith(const std::vector<std::string>& dirs, const GpuDescription& gpu,
                         const FieldSet* fields, const CaptureOptions& options) {
  CaptureReport r;
  r.gpu = gpu;
  const MetricSelection metrics(gpu);
  OptionalMetrics optional;
  std::set<std::string> seen_dirs;
  std::string first_gpu_dir;
  for (const std::string& dir_in : dirs) {
    const CaptureFiles f =
        FindFiles(dir_in, options.require_power_log, fields == nullptr && !options.counters_from);
    if (!seen_dirs.insert(fs::weakly_canonical(f.dir).string()).second) {
      throw OptionError(fmt::format("--capture {} is given twice", f.dir));
    }
    CheckSameGpu(f, options, &r.recorded_on, &first_gpu_dir);
    IngestCapture(f, options, metrics, fields, &optional, &r);
  }
  CheckDescriptionFits(gpu, options, first_gpu_dir, &r);
  ResolveOptionalMetrics(optional, &r);
  return r;
}

}  // namespace

CaptureCounters LendCounters(const CaptureReport& report) {
  CaptureCounters lent;
  lent.uuid = report.recorded_on.uuid;
  lent.gpu = report.gpu;
  for (const CaptureWindow& w : report.windows) {
    if (w.kind != "benchmark") continue;
    if (std::find(lent.captures.begin(), lent.captures.end(), w.capture) == lent.captures.end())
      lent.captures.push_back(w.capture);
    if (!w.counters_path.empty() &&
        std::find(lent.inputs.begin(), lent.inputs.end(), w.counters_path) == lent.inputs.end()) {
      lent.inputs.push_back(w.counters_path);
    }
    lent.by_workload.emplace(w.workload, w);
  }
  return lent;
}

CaptureReport IngestCaptures(const std::vector<std::string>& dirs, const GpuDescription& gpu,
                             const CaptureOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  if (dirs.empty()) throw OptionError("give at least one capture directory");
  if (!gpu.Check(&error)) throw OptionError(error);
  return IngestWith(dirs, gpu, nullptr, options);
}

CaptureReport IngestCaptures(const std::vector<std::string>& dirs, const FieldSet& fields,
                             const CaptureOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  if (dirs.empty()) throw OptionError("give at least one capture directory");
  if (!fields.Check(&error)) throw OptionError(error);
  return IngestWith(dirs, FieldSetDescription(fields), &fields, options);
}

CaptureReport IngestCapturesDescribedBy(const std::vector<std::string>& dirs,
                                        const std::string& description_path,
                                        const CaptureOptions& options) {
  if (IsFieldSetFile(description_path)) {
    return IngestCaptures(dirs, ReadFieldSet(description_path), options);
  }
  return IngestCaptures(dirs, ReadGpuDescription(description_path), options);
}

GpuDescription PredictionDescription(const CaptureReport& report,
                                     const std::string& description_path) {
  return IsFieldSetFile(description_path) ? report.gpu : ReadGpuDescription(description_path);
}

}  // namespace wattcal
