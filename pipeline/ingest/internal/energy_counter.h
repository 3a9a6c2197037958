// The NVML energy counter as a window's power source (ingest/kernel_energy.h, power source
// energy_counter), and the two ways it is caught lying: a frozen counter and one that disagrees
// with the instant power. Internal to ingest/ (kernel_energy.cc).
#pragma once

#include <vector>

#include "ingest/kernel_energy.h"
#include "ingest/kernel_windows.h"
#include "ingest/power_log.h"

namespace wattcal {
namespace kernel_energy_internal {

// Replaces each window's energy in `measured` (the power column's trapezoid, as MeasureWindows
// gave it, in the order of `windows`) by the energy counter's, read from `log` in one pass. The
// counter is linear between its change points (each placed midway between the last reading of
// the old value and the first of the new) and extrapolated from the nearest segment before the
// first and after the last change. A window keeps its trapezoid, flagged counter_mismatch with
// the counter's energy in counter_energy_j, when
//   - the counter was frozen over any part of it: one value held for more than
//     max(kCounterFrozenMinS, kCounterFrozenPeriods x the typical hold) while the power column
//     read more than kCounterFrozenMinPowerW (WindowEnergy::counter_freeze says where), whatever
//     the error it causes; or
//   - `check_mismatch` (the power column is instantaneous) and the two differ by more than
//     kCounterMismatchFrac.
// Returns false, leaving `measured` as it was, when the counter changes fewer than twice (no
// segment to interpolate on). A counter that goes backwards is an InputError naming its line.
bool UseEnergyCounter(PowerLogReader* log, bool check_mismatch,
                      const std::vector<KernelWindow>& windows,
                      std::vector<WindowEnergy>* measured);

}  // namespace kernel_energy_internal
}  // namespace wattcal
