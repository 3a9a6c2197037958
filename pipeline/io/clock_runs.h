// Power and run time of whole workloads at locked core clocks, without per-unit counters: what
// a user measures with `nvidia-smi -lgc` and NVML (or any begin/end energy monitor), and the
// input of the activity-free DVFS model (clocks/vf_fit.h).
//
// ReadClockRuns reads three shapes, told apart by their header:
//   - wattcal's tidy table (WriteClockRunsCsv):
//       workload,f_core_mhz[,f_core_requested_mhz],power_w | energy_j + time_s[,...]
//     clocks in mhz/ghz/khz, power in w/mw, energy in j/mj, time in s/ms/us, each named by the
//     column's suffix (f_core_ghz, energy_mj, time_ms); other columns are ignored.
//   - EnergAIzer's NVML table (workload,energy,time,avg_freq[,temp]): energy J and time ms per
//     iteration; the workload's name ends in _freq<MHz>_iter<N>.csv, the requested clock; avg_freq
//     is the clock the GPU held (below the request when the power cap held it down).
//   - the nsfcac DCGM means (application,sm_app_clock,power_usage,run_time,...): W and s at the
//     application clock; its total_energy_consumption is not used (it disagrees with
//     power x time by up to 10x on some rows), energy is power x time.
// Several rows of one workload at one requested clock (repeats) are merged: their mean power,
// time and clock, with a warning naming both lines (ClockRunTable::warnings, also logged). Every
// value is checked against its physical bound (util/bounds.h), and every clock against what a GPU
// core clock can be (kCoreClockMinMhz .. kCoreClockMaxMhz: 1.05 under f_core_mhz is a clock in
// GHz, and the error says to name the column f_core_ghz); errors name file, line and column.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace wattcal {

// The range of a GPU core clock, MHz: what any GPU locks or boosts to (the A100 idles at 210 MHz,
// the fastest boost clocks are under 3 GHz), far inside the physical bound of a frequency.
constexpr double kCoreClockMinMhz = 50.0;
constexpr double kCoreClockMaxMhz = 5000.0;

struct ClockRun {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  std::string workload;
  double f_requested_mhz = kNaN;  // the clock asked for (= f_core_mhz when the file has no other)
  double f_core_mhz = kNaN;       // the clock it ran at
  double power_w = kNaN;          // mean board power
  double time_s = kNaN;           // run time (per iteration, or of the whole run): NaN if unknown
  double energy_j = kNaN;         // power x time: NaN if the time is unknown
  std::string path;               // the file it was read from
  int64_t line = 0;               // first line of the row (or of its first repeat)
  int repeats = 1;                // rows merged into this one

  // The GPU held a lower clock than asked for (by more than 1%): the power cap held it down.
  bool HeldBelowRequest() const { return f_core_mhz < 0.99 * f_requested_mhz; }
};

struct ClockRunTable {
  std::string path;    // the files read, " + " between them
  std::string format;  // "wattcal", "energaizer" or "nsfcac"
  // In workload order of first appearance, each workload's rows by requested clock.
  std::vector<ClockRun> runs;
  bool has_time = false;   // every row has a run time
  int merged_repeats = 0;  // rows merged into an earlier one
  // "FILE:LINE: ..." for every repeat merged, naming the line it repeats.
  std::vector<std::string> warnings;

  std::vector<std::string> Workloads() const;
  // The distinct requested clocks, ascending.
  std::vector<double> RequestedClocks() const;
};

// Reads one table (any of the three shapes); InputError naming file, line and column.
ClockRunTable ReadClockRuns(const std::string& path);
// Reads several (e.g. the nsfcac SPEC and HPC files) as one; a workload in two files is
// refused, naming both.
ClockRunTable ReadClockRuns(const std::vector<std::string>& paths);

// The tidy table: workload,f_core_requested_mhz,f_core_mhz,power_w,time_s,energy_j (empty cells
// for an unknown time and energy), rows as in `table`.
std::string WriteClockRunsCsv(const ClockRunTable& table);

}  // namespace wattcal
