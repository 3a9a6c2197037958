#include "ingest/kernel_energy_pass.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "ingest/internal/energy_counter.h"
#include "util/errors.h"
#include "util/logging.h"

namespace wattcal {

namespace {

// `windows` with each start moved settle_ms later (with settle_short_windows_by_half, a window
// shorter than twice that by half its length; counted in *half_settled).
std::vector<KernelWindow> SettleWindows(std::vector<KernelWindow> windows,
                                        const std::string& windows_path,
                                        const KernelEnergyOptions& options,
                                        int64_t* half_settled = nullptr) {
  if (options.settle_ms > 0.0) {
    const double settle_s = options.settle_ms * 1e-3;
    for (KernelWindow& w : windows) {
      const double d = w.end_s - w.start_s;
      if (options.settle_short_windows_by_half && !(d >= 2.0 * settle_s)) {
        DelayWindowStart(&w, 0.5 * d);
        if (half_settled != nullptr) ++*half_settled;
        continue;
      }
      if (!(w.end_s - w.start_s > settle_s)) {
        throw InputError(windows_path, w.line, "end",
                         fmt::format("the launch of '{}' lasts {} ms, not longer than the settle "
                                     "time of {} ms: nothing is left to measure",
                                     w.kernel, (w.end_s - w.start_s) * 1e3, options.settle_ms));
      }
      DelayWindowStart(&w, settle_s);
    }
  }
  return windows;
}

// A launch as MeasureKernelEnergies reports it: `w`, its settled part, keeps the steady-state
// mean power (what training reads), its readings, CV, temperature drift, clocks and their flags;
// the whole launch gives the start, duration and energies (MTSM, PAPI-style, trapezoid), and a
// sample gap or an overlap anywhere in it.
void ReportWholeLaunch(const WindowEnergy& whole, WindowEnergy* w) {
  w->start_s = whole.start_s;
  w->duration_s = whole.duration_s;
  w->energy_j = whole.energy_j;
  w->papi_energy_j = whole.papi_energy_j;
  w->trapezoid_energy_j = whole.trapezoid_energy_j;
  w->flags |= whole.flags & (kFlagSampleGap | kFlagOverlap);
  if (whole.max_gap_s > w->max_gap_s) {
    w->max_gap_s = whole.max_gap_s;
    w->gap_from_line = whole.gap_from_line;
    w->gap_to_line = whole.gap_to_line;
  }
}

}  // namespace

KernelEnergyReport MeasureKernelEnergies(const std::string& log_path,
                                         const PowerLogOptions& log_options,
                                         const std::string& windows_path,
                                         const KernelEnergyOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  const std::vector<KernelWindow> launches =
      ReadKernelWindows(windows_path, log_options.utc_offset_h);
  KernelEnergyReport result;
  const std::vector<KernelWindow> windows =
      SettleWindows(launches, windows_path, options, &result.half_settled_windows);
  PowerLogReader log(log_path, log_options);
  result.windows = MeasureWindows(&log, windows, windows_path, options);
  if (options.settle_ms > 0.0) {
    // The steady state gives the power; a launch's energy and duration are the whole launch's.
    PowerLogReader again(log_path, log_options);
    const std::vector<WindowEnergy> whole = MeasureWindows(&again, launches, windows_path, options);
    for (size_t i = 0; i < whole.size(); ++i) ReportWholeLaunch(whole[i], &result.windows[i]);
  }
  result.kernels = AggregateKernelEnergies(result.windows, options);
  result.format = log.format();
  result.power_field = log.power_field();
  result.log_stats = log.stats();
  result.power_source = log.power_kind() == PowerKind::kInstant ? PowerSource::kInstantPower
                                                                : PowerSource::kAveragedPower;
  result.power_source_name = PowerSourceName(result.power_source);
  return result;
}

KernelEnergyReport MeasureKernelEnergiesWithReasons(const std::string& primary_log,
                                                    const PowerLogOptions& primary_options,
                                                    const std::string& secondary_log,
                                                    const PowerLogOptions& secondary_options,
                                                    const std::string& windows_path,
                                                    const KernelEnergyOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  const PowerLogOptions& power_options = primary_log.empty() ? secondary_options : primary_options;
  int64_t half_settled = 0;
  const std::vector<KernelWindow> windows =
      SettleWindows(ReadKernelWindows(windows_path, power_options.utc_offset_h), windows_path,
                    options, &half_settled);
  KernelEnergyReport result =
      MeasureKernelEnergiesWithReasons(primary_log, primary_options, secondary_log,
                                       secondary_options, windows, windows_path, options);
  result.half_settled_windows = half_settled;
  return result;
}

KernelEnergyReport MeasureKernelEnergiesWithReasons(const std::string& primary_log,
                                                    const PowerLogOptions& primary_options,
                                                    const std::string& secondary_log,
                                                    const PowerLogOptions& secondary_options,
                                                    const std::vector<KernelWindow>& windows,
                                                    const std::string& windows_path,
                                                    const KernelEnergyOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  if (primary_log.empty() && secondary_log.empty()) {
    throw OptionError(
        "no power log: give the primary (NVML raw) log, the secondary (nvidia-smi) log or both");
  }
  const bool primary = !primary_log.empty();
  const std::string& power_path = primary ? primary_log : secondary_log;
  const PowerLogOptions& power_options = primary ? primary_options : secondary_options;

  PowerLogReader log(power_path, power_options);
  KernelEnergyReport result;
  result.windows = MeasureWindows(&log, windows, windows_path, options);
  result.format = log.format();
  result.power_field = log.power_field();
  result.log_stats = log.stats();

  // The energy: the counter, else the power column.
  bool counter = false;
  if (log.has_energy_counter()) {
    // The counter is cross-checked against an instantaneous power column, and against any
    // power column for a freeze: a frozen or stepped counter must not give a window a wrong
    // power silently.
    PowerLogReader again(power_path, power_options);
    counter = kernel_energy_internal::UseEnergyCounter(
        &again, log.power_kind() == PowerKind::kInstant, windows, &result.windows);
    if (!counter) {
      LogWarning(
          fmt::format("{}: the energy counter changes fewer than twice in the log: the "
                      "window energies come from the power column '{}' instead",
                      power_path, log.power_field()));
    }
  }
  if (counter) {
    result.power_source = PowerSource::kEnergyCounter;
  } else if (log.power_kind() == PowerKind::kInstant) {
    result.power_source = PowerSource::kInstantPower;
  } else {
    result.power_source = PowerSource::kAveragedPower;
    LogWarning(fmt::format(
        "{}: the window energies come from the power column '{}', {}: it lags the load and "
        "reads low on short windows (8% low on average over 1.5 s windows on an H100). Log "
        "the instantaneous power (nvidia-smi power.draw.instant, NVML "
        "NVML_FI_DEV_POWER_INSTANT) or the energy counter "
        "(nvmlDeviceGetTotalEnergyConsumption) instead",
        power_path, log.power_field(),
        log.power_kind() == PowerKind::kAveraged
            ? "a 1-s average"
            : "which may be a 1-s average (it is on Ampere (except GA100) and newer GPUs)"));
  }
  result.power_source_name = PowerSourceName(result.power_source);
  // A window whose counter is not believed is measured from the power column.
  const char* column_source =
      PowerSourceName(log.power_kind() == PowerKind::kInstant ? PowerSource::kInstantPower
                                                              : PowerSource::kAveragedPower);
  for (WindowEnergy& w : result.windows) {
    w.power_source =
        (w.flags & kFlagCounterMismatch) ? column_source : result.power_source_name.c_str();
  }

  // Reasons, the power limit and missing clocks from the other log.
  if (primary && !secondary_log.empty()) {
    PowerLogReader other(secondary_log, secondary_options);
    const std::vector<WindowEnergy> o = MeasureWindows(&other, windows, windows_path, options);
    for (size_t i = 0; i < windows.size(); ++i) {
      WindowEnergy& w = result.windows[i];
      if (other.has_clock_reasons()) {
        w.clock_reasons = o[i].clock_reasons;
        w.has_clock_reasons = o[i].has_clock_reasons;
      }
      if (other.has_power_limit()) w.power_limit_w = o[i].power_limit_w;
      if (!log.has_core_clock() && other.has_core_clock()) {
        w.f_core_mhz = o[i].f_core_mhz;
        w.f_core_min_mhz = o[i].f_core_min_mhz;
        w.f_core_max_mhz = o[i].f_core_max_mhz;
      }
      if (!log.has_memory_clock() && other.has_memory_clock()) {
        w.f_mem_mhz = o[i].f_mem_mhz;
        w.f_mem_min_mhz = o[i].f_mem_min_mhz;
        w.f_mem_max_mhz = o[i].f_mem_max_mhz;
      }
      ApplyClockFlags(options, &w);
    }
  }
  result.kernels = AggregateKernelEnergies(result.windows, options);
  return result;
}

}  // namespace wattcal
