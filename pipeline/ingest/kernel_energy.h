// Per-kernel energy from a power log and kernel launch windows (Arafa et al., seed 003).
//
// MTSM (Multi-Threaded Synchronized Monitoring): a launch's energy is the integral of the
// board power over exactly its window [start, end]. The readings are joined piecewise-linearly
// (trapezoids between consecutive readings, on their timestamps: the sampling period is never
// assumed) and the power at the window's edges is interpolated between the readings around
// them. With readings evenly spaced and the window on reading times, this is Arafa Eq. 2
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
// memory) clock pair rounded to 1 MHz; per-instruction energy follows Arafa Eq. 1,
// E_instr = (E_total - E_overhead) / N.
//
// Clocks, reasons and limits are step functions: a reading's value holds until the next
// reading. A window's clock is the time-weighted mean over the window, with the smallest and
// largest value in force during it; its clock event reasons are the OR of the masks in force
// during it. A GPU at its power limit lowers its clock by itself inside a window (the H100
// capture: 1485-1980 MHz inside one 1.5 s window, reason 0x4), so a window's clock is then not
// one number: such windows are flagged `clock_moved` and `power_cap`.
//
// MeasureKernelEnergiesWithReasons (ingest/kernel_energy_pass.h) takes the energy from the best
// source a log offers:
//   energy_counter  NVML's cumulative energy counter (raw energy_mj): E = E(end) - E(start).
//                   The counter is refreshed only every ~100 ms (readings repeat it), so E(t)
//                   is interpolated linearly between its change points: each change is placed
//                   midway between the last reading of the old value and the first of the
//                   new; an edge before the first or after the last change extrapolates the
//                   nearest segment. Measured on the H100 capture (1.5-1.6 s windows): the
//                   change point's placement (first new reading, midpoint or last old one)
//                   moves a window's power by < 0.1%; the instant-power trapezoid is on
//                   average 1.5% (ubench_random) and 1.8% (mix_random) lower than the counter
//                   over whole windows (max 6.4%: the instant readings lag the rise at a
//                   window's start), and 0.5% / 0.8% higher with the first 300 ms skipped
//                   (settle_ms = 300; mean |difference| 0.65% / 1.3%, max 1.8% / 5.9%).
//   instant_power   the MTSM trapezoid of an instantaneous power column;
//   averaged_power  the trapezoid of a 1-s averaged column (nvidia-smi power.draw, NVML
//                   power_mw on Ampere and newer), with a warning: it lags the load and reads
//                   7.4-8.4% low on average on the capture's 1.5 s windows (-27% to +57% per
//                   window: high right after a hotter window).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
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
  // Settle time, ms: each launch's power is measured from this long after its start to its
  // end, so that the steady-state power is measured (AccelWattch §4.1/§6 measures steady state;
  // the sensor's lag and rise otherwise bias short windows low). A window not longer than
  // settle_ms is an InputError naming its line. MeasureKernelEnergies reports the settled
  // mean_power_w and the whole launch's start_s, duration_s and energy_j (a launch's energy is
  // all of it); MeasureKernelEnergiesWithReasons (windows file) measures the settled part only.
  double settle_ms = 0.0;
  // With settle_ms > 0: a launch not longer than twice settle_ms is measured over its second
  // half instead (as capture directories measure theirs, CaptureOptions::settle_ms), and is no
  // error; counted in KernelEnergyReport::half_settled_windows.
  bool settle_short_windows_by_half = false;
  // Launches whose core or memory clock ranges over more than this fraction of its largest
  // value inside the window ((max - min) / max) are flagged `clock_moved`.
  double max_clock_range_frac = 0.01;

  // False (with a message naming the field, its value and the rule) when a field is invalid.
  bool Check(std::string* error) const;
};

// Why a launch's energy is doubtful (bit set).
enum WindowFlag : uint32_t {
  kFlagTooFewSamples = 1u << 0,    // "too_few_samples": readings inside < min_samples
  kFlagTempDrift = 1u << 1,        // "temp_drift": |temperature drift| > max_temp_drift_c
  kFlagHighCv = 1u << 2,           // "high_cv": coefficient of variation > max_cv
  kFlagOverlap = 1u << 3,          // "overlap": the window overlaps another launch's window
  kFlagClockMoved = 1u << 4,       // "clock_moved": (max - min) / max clock > max_clock_range_frac
  kFlagPowerCap = 1u << 5,         // "power_cap": SW power cap reason (0x4) in force
  kFlagThermal = 1u << 6,          // "thermal": SW (0x20) or HW (0x40) thermal slowdown in force
  kFlagHwSlowdown = 1u << 7,       // "hw_slowdown": HW slowdown (0x8) or HW power brake (0x80)
  kFlagSampleGap = 1u << 8,        // "sample_gap": no reading for > kSampleGapPeriods sampling
                                   // periods inside the window or across its edges
  kFlagCounterMismatch = 1u << 9,  // "counter_mismatch": the energy counter disagrees with the
                                   // instant power beyond kCounterMismatchFrac; the window's
                                   // energy is then the power column's
  kFlagDataToggle =
      1u << 10,  // "data_toggle": a window of wattcal-capture's toggle sweep whose data
                 // toggle another share of bits than the rest of the suite's data
                 // (50% for random, 0% for zeros): power the counters do not see
  kFlagMetricAbsent =
      1u << 11,  // "metric_absent": the window's counter export lacks an optional component's
                 // metric that other exports have; its utilisation of it was counted as 0
  kFlagFewFieldSamples =
      1u << 12,  // "few_field_samples": the window's utilisations come from a field log with
                 // fewer samples in it than CaptureOptions::min_field_samples
};

// A gap between two readings longer than this many typical sampling periods (the median of the
// log's first gaps), and than kSampleGapMinS, flags the windows it touches `sample_gap`: their
// energy rests on interpolation across the gap (a -56% window was seen with a 3 s gap across
// its start).
inline constexpr double kSampleGapPeriods = 5.0;
inline constexpr double kSampleGapMinS = 0.05;

// The energy counter's window energy and the instant-power trapezoid differ by at most 6.4%
// over whole 1.5 s windows on the H100 capture (5.9% with the first 300 ms skipped); beyond
// this fraction the counter is not believed (a frozen or stepped counter) and the instant
// power gives the energy.
inline constexpr double kCounterMismatchFrac = 0.10;

// NVML's energy counter repeats its value between refreshes (every ~0.1 s on the H100 capture,
// no value held for more than 0.21 s in its four logs). A value held for longer than
// max(kCounterFrozenMinS, kCounterFrozenPeriods x the log's typical hold, the median of its first
// holds) while the power column read more than kCounterFrozenMinPowerW is a frozen counter:
// every window over the freeze is measured from the power column and flagged counter_mismatch,
// whatever the error (a 10 s freeze once gave three windows one made-up 450.6 W, 7-10% off).
inline constexpr double kCounterFrozenMinS = 1.0;
inline constexpr double kCounterFrozenPeriods = 10.0;
inline constexpr double kCounterFrozenMinPowerW = 1.0;

// Where the energy counter was frozen (WindowEnergy::counter_freeze).
struct CounterFreeze {
  // How long the log's readings showed one value, s (0: no freeze over the window).
  double held_s = 0.0;
  // Log lines of the first and the last reading showing it.
  int64_t from_line = 0;
  int64_t to_line = 0;
  // The power column's mean over those readings, W.
  double power_w = 0.0;
};

// Where a window's energy comes from, best first.
enum class PowerSource { kEnergyCounter, kInstantPower, kAveragedPower };

// "energy_counter", "instant_power" or "averaged_power".
const char* PowerSourceName(PowerSource source);

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
  // Energy of the window, joules: the energy counter's difference when power_source is
  // "energy_counter", else the MTSM integral of the piecewise-linear power over
  // [start_s, end_s].
  double energy_j = 0.0;
  // energy_j / duration_s, watts (the interpolated power at start_s for an empty window); from
  // MeasureKernelEnergies with a settle time, the mean over the settled part of the launch.
  double mean_power_w = 0.0;
  // Readings with start_s <= time_s <= end_s.
  int64_t samples = 0;
  // PAPI-style energy: the last reading at or before end_s x duration_s, joules.
  double papi_energy_j = 0.0;
  // SMA-style: the largest reading inside the window, watts (NaN without readings inside).
  double sma_max_power_w = std::numeric_limits<double>::quiet_NaN();
  // Temperature of the last reading inside minus the first, degrees Celsius (NaN when the log
  // has no temperature or no reading is inside).
  double temp_drift_c = std::numeric_limits<double>::quiet_NaN();
  // Coefficient of variation of the readings inside (population sd / mean; NaN for fewer
  // than 2 readings or a zero mean).
  double cv = std::numeric_limits<double>::quiet_NaN();
  // Time-weighted mean core and memory clocks over the window, MHz (each reading's clock held
  // until the next reading; for an empty window the clock in force at start_s); NaN when the
  // log has no clocks.
  double f_core_mhz = std::numeric_limits<double>::quiet_NaN();
  double f_mem_mhz = std::numeric_limits<double>::quiet_NaN();
  // WindowFlag bits.
  uint32_t flags = 0;
  // Smallest and largest clock in force during the window, MHz (NaN when unknown).
  double f_core_min_mhz = std::numeric_limits<double>::quiet_NaN();
  double f_core_max_mhz = std::numeric_limits<double>::quiet_NaN();
  double f_mem_min_mhz = std::numeric_limits<double>::quiet_NaN();
  double f_mem_max_mhz = std::numeric_limits<double>::quiet_NaN();
  // OR of the clock event reasons (kClockReason* bits) in force during the window;
  // has_clock_reasons is false when no log gave reasons for it.
  uint64_t clock_reasons = 0;
  bool has_clock_reasons = false;
  // Lowest power limit in force during the window, watts (unset when no log gives one).
  std::optional<double> power_limit_w;
  // PowerSourceName() of the source of energy_j.
  std::string power_source;
  // MTSM trapezoid of the power column over the window, joules: energy_j itself unless the
  // energy counter is the source (then the two can be compared).
  double trapezoid_energy_j = 0.0;
  // The longest time without a reading inside the window or across its edges, s, and the log
  // lines of the readings around it (0 when the window had no gap).
  double max_gap_s = 0.0;
  int64_t gap_from_line = 0;
  int64_t gap_to_line = 0;
  // With counter_mismatch: the energy the counter gave, J (energy_j is the power column's).
  double counter_energy_j = std::numeric_limits<double>::quiet_NaN();
  // With counter_mismatch because the counter was frozen over the window: where (else held_s 0).
  CounterFreeze counter_freeze;
};

// Sets the clock_moved, power_cap, thermal and hw_slowdown flags from the window's clocks and
// reasons (clearing any set before).
void ApplyClockFlags(const KernelEnergyOptions& o, WindowEnergy* e);

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
  double f_core_mhz = std::numeric_limits<double>::quiet_NaN();
  double f_mem_mhz = std::numeric_limits<double>::quiet_NaN();
  // Launches aggregated (after exclusions).
  int64_t launches = 0;
  // Mean launch duration, seconds.
  double duration_s = 0.0;
  // Mean MTSM energy per launch, joules.
  double energy_j = 0.0;
  // Its sample standard deviation over the launches, joules (NaN for fewer than 2).
  double energy_j_sd = std::numeric_limits<double>::quiet_NaN();
  // Mean of the launches' mean powers, watts, and its sample standard deviation.
  double mean_power_w = 0.0;
  double mean_power_w_sd = 0.0;
  // Readings inside the aggregated launches' windows, in total.
  int64_t samples = 0;
  // Mean PAPI-style energy per launch, joules.
  double papi_energy_j = 0.0;
  // Mean of the launches' SMA-style maximum readings, watts (NaN when no launch had one).
  double sma_max_power_w = std::numeric_limits<double>::quiet_NaN();
  // Mean temperature drift per launch, degrees Celsius (NaN when unknown).
  double temp_drift_c = std::numeric_limits<double>::quiet_NaN();
  // Mean coefficient of variation of the launches' readings (NaN when unknown).
  double cv = std::numeric_limits<double>::quiet_NaN();
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
  double energy_j = std::numeric_limits<double>::quiet_NaN();
  // Spread over repetitions: sqrt(sd_with^2 + sd_without^2) / N, the standard deviation of
  // one repetition's estimate, joules (NaN when either sd is unknown).
  double energy_j_sd = std::numeric_limits<double>::quiet_NaN();
  // Standard error of energy_j: sqrt(sd_with^2 / n_with + sd_without^2 / n_without) / N.
  double energy_j_se = 0.0;
  // The same Arafa Eq. 1 on the PAPI-style energies, joules per instruction.
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
//   sma_max_power_w,temp_drift_c,cv,f_core_mhz,f_mem_mhz,flags,f_core_min_mhz,
//   f_core_max_mhz,f_mem_min_mhz,f_mem_max_mhz,clock_reasons,power_limit_w,power_source,
//   trapezoid_energy_j
// times as %.6f, other numbers as %.9g, NaN as an empty cell, clock_reasons as hex "0x4"
// (empty when unknown).
std::string WindowEnergiesToCsv(const std::vector<WindowEnergy>& windows);

}  // namespace wattcal
