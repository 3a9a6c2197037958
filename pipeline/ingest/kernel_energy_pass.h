// The whole per-kernel energy pass of ingest/kernel_energy.h: the windows read (and settled),
// each log streamed, the launches measured from the best power source and aggregated.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ingest/kernel_energy.h"
#include "ingest/kernel_windows.h"
#include "ingest/power_log.h"

namespace wattcal {

// The whole pass: reads the windows, measures each from settle_ms after its start, streams the
// log, aggregates.
struct KernelEnergyReport {
  std::vector<WindowEnergy> windows;
  std::vector<KernelEnergy> kernels;
  // The power log's format and power column (PowerLogReader::power_field()).
  PowerLogFormat format = PowerLogFormat::kNvidiaSmi;
  std::string power_field;
  PowerLogSummary log_stats;
  // Where the windows' energies come from, and PowerSourceName() of it.
  PowerSource power_source = PowerSource::kInstantPower;
  std::string power_source_name;
  // Launches measured over their second half (settle_short_windows_by_half).
  int64_t half_settled_windows = 0;
};
// Uses only the power column (never the energy counter): power_source is instant_power for an
// instantaneous column, averaged_power otherwise. With options.settle_ms > 0 the log is read
// twice: each launch's mean_power_w (and its readings, CV, drift, clocks and flags) comes from
// its settled part, its start_s, duration_s, energy_j, papi_energy_j and trapezoid_energy_j
// from the whole launch, which also adds its sample_gap and overlap flags; the per-kernel
// means follow (energy and duration of whole launches, steady-state power).
KernelEnergyReport MeasureKernelEnergies(const std::string& log_path,
                                         const PowerLogOptions& log_options,
                                         const std::string& windows_path,
                                         const KernelEnergyOptions& options);

// The whole pass over two logs of one run, each optional but not both: `primary_log` an NVML
// raw log (energy counter, instant power, clocks), `secondary_log` an nvidia-smi log
// (clocks_event_reasons.active, power.limit, clocks). The power log is the primary when given,
// else the secondary; its energy comes from the best source it has (energy_counter, then
// instant_power, then averaged_power, which logs a warning naming the column). Clocks come from
// the power log when it has them, else from the other log; reasons and the power limit from
// whichever log has them (the secondary first). Each log is streamed once per use (the energy
// counter adds one pass), in constant memory. Every window must lie inside every log given:
// an InputError names the window's line and the log's range otherwise (skip, e.g., an idle
// window that ends after the last reading before calling). result.format, power_field and
// log_stats describe the power log.
KernelEnergyReport MeasureKernelEnergiesWithReasons(const std::string& primary_log,
                                                    const PowerLogOptions& primary_options,
                                                    const std::string& secondary_log,
                                                    const PowerLogOptions& secondary_options,
                                                    const std::string& windows_path,
                                                    const KernelEnergyOptions& options);
// The same on windows already read (and moved by their settle time: options.settle_ms is not
// applied again); `windows_path` names them in messages.
KernelEnergyReport MeasureKernelEnergiesWithReasons(const std::string& primary_log,
                                                    const PowerLogOptions& primary_options,
                                                    const std::string& secondary_log,
                                                    const PowerLogOptions& secondary_options,
                                                    const std::vector<KernelWindow>& windows,
                                                    const std::string& windows_path,
                                                    const KernelEnergyOptions& options);

}  // namespace wattcal
