// Per-kernel energy from a power log and kernel launch windows (Arafa et al., seed 003).
//
// MTSM (Multi-Threaded Synchronized Monitoring): a launch's energy is the integral of the
// board power over exactly its window [start, end]. The readings are joined piecewise-linearly
// (trapezoids between consecutive readings, on their timestamps: the sampling period is never
// assumed) and the power at the window's edges is interpolated between the readings around
// them. With readings evenly spaced and the window on reading times, this is the paper's Eq. 2
// (E = elapsed / N x sum of P_i) with the trapezoid's end correction.
// Beside it, the two estimates the paper compares against:
//   PAPI-style  the last reading at or before the window's end x the duration (PAPI's NVML
//               component reads the power once, when the kernel finishes);
//   SMA-style   the maximum reading inside the window ("the maximum reading between the two
//               steady states").
// Quality indicators per launch: readings inside the window, the temperature drift (last -
// first reading inside) and the coefficient of variation of the readings inside.
//
// Launches are then aggregated per kernel name and, when the log has clocks, per (core,
// memory) clock pair rounded to 1 MHz; per-instruction energy follows the paper's Eq. 1,
// E_instr = (E_total - E_overhead) / N.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ingest/kernel_windows.h"
#include "ingest/power_log.h"

namespace wattcal {

struct KernelEnergyOptions {
  // Launches with fewer power readings than this inside their window are flagged
  // `too_few_samples` (their energy rests on interpolation across a reading gap).
  int min_samples = 3;
  // Launches whose temperature changes by more than this inside the window, degrees Celsius,
  // are flagged `temp_drift` (static power grows with temperature).
  double max_temp_drift_c = 5.0;
  // Launches whose readings inside the window have a coefficient of variation (population
  // standard deviation / mean) above this are flagged `high_cv` (no steady state).
  double max_cv = 0.1;
  // Drop flagged launches before aggregating (they are still counted in `flags` and
  // `excluded_launches`).
  bool exclude_flagged = false;
  // Settle time, ms: each launch is measured from this long after its start to its end, so
  // that the steady-state power is measured (AccelWattch §4.1/§6 measures steady state; the
  // sensor's lag and rise otherwise bias short windows low). With settle_ms > 0 a launch's
  // start_s and duration_s are those of the measured part, and a window not longer than
  // settle_ms is an InputError naming its line. Applied by MeasureKernelEnergies.
  double settle_ms = 0.0;

  // False (with a message naming the field, its value and the rule) when a field is invalid.
  bool Check(std::string* error) const;
};

// Why a launch's energy is doubtful (bit set).
enum WindowFlag : uint32_t {
  kFlagTooFewSamples = 1u << 0,  // "too_few_samples": readings inside < min_samples
  kFlagTempDrift = 1u << 1,      // "temp_drift": |temperature drift| > max_temp_drift_c
  kFlagHighCv = 1u << 2,         // "high_cv": coefficient of variation > max_cv
  kFlagOverlap = 1u << 3,        // "overlap": the window overlaps another launch's window
};

// "too_few_samples;high_cv" ("" for none), in the order of WindowFlag.
std::string WindowFlagsToString(uint32_t flags);

// One launch's energy.
struct WindowEnergy {
  // Kernel name, from the windows file.
  std::string kernel;
  // 1-based line of the launch in the windows file.
  int64_t line = 0;
  // Window start and end, seconds (the power log's time base).
  double start_s = 0.0;
  double end_s = 0.0;
  // end_s - start_s, seconds.
  double duration_s = 0.0;
  // MTSM energy: integral of the piecewise-linear power over [start_s, end_s], joules.
  double energy_j = 0.0;
  // energy_j / duration_s, watts (the interpolated power at start_s for an empty window).
  double mean_power_w = 0.0;
  // Readings with start_s <= time_s <= end_s.
  int64_t samples = 0;
  // PAPI-style energy: the last reading at or before end_s x duration_s, joules.
  double papi_energy_j = 0.0;
  // SMA-style: the largest reading inside the window, watts (NaN without readings inside).
  double sma_max_power_w = 0.0;
  // Temperature of the last reading inside minus the first, degrees Celsius (NaN when the log
  // has no temperature or no reading is inside).
  double temp_drift_c = 0.0;
  // Coefficient of variation of the readings inside (population sd / mean; NaN for fewer
  // than 2 readings or a zero mean).
  double cv = 0.0;
  // Median core and memory clocks of the readings inside, MHz (without readings inside: the
  // clocks of the last reading at or before end_s); NaN when the log has no clocks.
  double f_core_mhz = 0.0;
  double f_mem_mhz = 0.0;
  // WindowFlag bits.
  uint32_t flags = 0;
};

// Measures every window in one streaming pass over `log` (constant memory in the log's
// length). Windows may come in any order and may overlap: each is measured on its own against
// the board power (overlapping ones, whose energies then count shared power twice, are
// flagged `overlap`). A window that starts before the log's first reading or ends after its
// last one is an InputError naming `windows_path`, the window's line and the log's range
// (an overhang of at most 1 us, rounding between time bases, is integrated at the edge
// reading's power instead).
// Returns the launches in the order of `windows`.
std::vector<WindowEnergy> MeasureWindows(PowerLogReader* log,
                                         const std::vector<KernelWindow>& windows,
                                         const std::string& windows_path,
                                         const KernelEnergyOptions& options);

// A kernel's launches aggregated (at one clock pair).
struct KernelEnergy {
  // Kernel name.
  std::string kernel;
  // The group's core and memory clocks, MHz, rounded to 1 MHz; NaN when the log has none.
  double f_core_mhz = 0.0;
  double f_mem_mhz = 0.0;
  // Launches aggregated (after exclusions).
  int64_t launches = 0;
  // Mean launch duration, seconds.
  double duration_s = 0.0;
  // Mean MTSM energy per launch, joules, and its sample standard deviation over the launches
  // (NaN for fewer than 2).
  double energy_j = 0.0;
  double energy_j_sd = 0.0;
  // Mean of the launches' mean powers, watts, and its sample standard deviation.
  double mean_power_w = 0.0;
  double mean_power_w_sd = 0.0;
  // Readings inside the aggregated launches' windows, in total.
  int64_t samples = 0;
  // Mean PAPI-style energy per launch, joules.
  double papi_energy_j = 0.0;
  // Mean of the launches' SMA-style maximum readings, watts (NaN when no launch had one).
  double sma_max_power_w = 0.0;
  // Mean temperature drift per launch, degrees Celsius (NaN when unknown).
  double temp_drift_c = 0.0;
  // Mean coefficient of variation of the launches' readings (NaN when unknown).
  double cv = 0.0;
  // Flags of all the group's launches with their counts, "too_few_samples:2;high_cv:1"
  // (excluded launches included).
  std::string flags;
  // Launches dropped by KernelEnergyOptions::exclude_flagged.
  int64_t excluded_launches = 0;
};

// Groups launches by kernel name and (rounded) clock pair, sorted by kernel name, then core
// clock, then memory clock. A group whose launches were all excluded stays, with launches = 0
// and NaN means, so that its flags are reported.
std::vector<KernelEnergy> AggregateKernelEnergies(const std::vector<WindowEnergy>& windows,
                                                  const KernelEnergyOptions& options);

// Per-instruction energy (Arafa Eq. 1) from a kernel with the instruction block (`with`) and
// its overhead twin without it (`without`), each executing `instructions` more/fewer
// instructions per launch: E_instr = (E_total - E_overhead) / N.
struct InstructionEnergy {
  // (with.energy_j - without.energy_j) / instructions, joules per instruction (MTSM); NaN
  // when either kernel has no launches.
  double energy_j = 0.0;
  // Spread over repetitions: sqrt(sd_with^2 + sd_without^2) / N, the standard deviation of
  // one repetition's estimate, joules (NaN when either sd is unknown).
  double energy_j_sd = 0.0;
  // Standard error of energy_j: sqrt(sd_with^2 / n_with + sd_without^2 / n_without) / N.
  double energy_j_se = 0.0;
  // The same Eq. 1 on the PAPI-style energies, joules per instruction.
  double papi_energy_j = 0.0;
  // The inputs: mean energies per launch, joules, and the instruction count.
  double total_energy_j = 0.0;
  double overhead_energy_j = 0.0;
  double instructions = 0.0;
  int64_t launches_with = 0;
  int64_t launches_without = 0;
};

// Throws OptionError when `instructions` is not a finite number > 0.
InstructionEnergy PerInstructionEnergy(const KernelEnergy& with, const KernelEnergy& without,
                                       double instructions);

// CSV of aggregated kernels, header
//   kernel,launches,duration_s,energy_j,mean_power_w,samples,f_core_mhz,f_mem_mhz,
//   energy_j_sd,mean_power_w_sd,papi_energy_j,sma_max_power_w,temp_drift_c,cv,flags,
//   excluded_launches
// numbers as %.9g, NaN as an empty cell, one row per KernelEnergy in the given order.
std::string KernelEnergiesToCsv(const std::vector<KernelEnergy>& kernels);

// CSV of launches, header
//   kernel,line,start_s,end_s,duration_s,energy_j,mean_power_w,samples,papi_energy_j,
//   sma_max_power_w,temp_drift_c,cv,f_core_mhz,f_mem_mhz,flags
// times as %.6f, other numbers as %.9g, NaN as an empty cell.
std::string WindowEnergiesToCsv(const std::vector<WindowEnergy>& windows);

// The whole pass: reads the windows, moves each start settle_ms later, streams the log once,
// aggregates.
struct KernelEnergyResult {
  std::vector<WindowEnergy> windows;
  std::vector<KernelEnergy> kernels;
  // The log's format and power column (PowerLogReader::power_field()).
  PowerLogFormat format = PowerLogFormat::kNvidiaSmi;
  std::string power_field;
  PowerLogStats log_stats;
};
KernelEnergyResult MeasureKernelEnergies(const std::string& log_path,
                                         const PowerLogOptions& log_options,
                                         const std::string& windows_path,
                                         const KernelEnergyOptions& options);

}  // namespace wattcal
