// A kernel's activity as AccelWattch's Eq. 12 needs it: which category of instruction mix it
// runs (AccelWattch §4.5), on how many SMs (k) with how many active lanes per warp (y), at which
// V-F pair, for how long (T_elapsedTime of AccelWattch Eq. 11), and its event counts (the a_i of
// AccelWattch Eq. 11), optionally with its measured mean power. wattcal-ingest
// --accelwattch-activity writes it from counter exports and a sweep description; any other tool can
// write it too:
//
//   kernel,benchmark,category,active_sms,lanes_per_warp,f_core_mhz,f_mem_mhz,elapsed_s,
//   launches,mean_power_w,<counter>,<counter>,...
//
// Columns are matched by name (any order after `kernel`); `benchmark`, `category`,
// `launches` and `mean_power_w` may be absent, and so may `f_mem_mhz` (0 = not known).
// The elapsed time may be given as elapsed_ms, elapsed_us or elapsed_ns and the power as
// mean_power_mw instead; they are converted (one column per quantity, never guessed).
// Every other column is an event counter: the count per launch (empty where the kernel lacks
// it). category is "" or one of AccelWattch's nine (sweep.h). Every problem is an InputError
// naming FILE:LINE and the field.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace wattcal {

struct KernelActivity {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  std::string kernel;
  std::string benchmark;
  std::string category;
  int active_sms = 0;       // k of AccelWattch Eq. 10, >= 1
  int lanes_per_warp = 0;   // y of AccelWattch Eq. 10, >= 1
  double f_core_mhz = 0.0;  // the pair the counts were taken at
  double f_mem_mhz = 0.0;   // 0 = not known
  double elapsed_s = 0.0;   // T_elapsedTime of AccelWattch Eq. 11 (> 0)
  int launches = 0;
  double mean_power_w = kNaN;            // measured; NaN when not given
  std::map<std::string, double> events;  // counter -> count per launch (present ones only)
  int64_t line = 0;
};

struct ActivityTable {
  std::string path;
  std::vector<std::string> counters;  // the counter columns, in file order
  std::vector<KernelActivity> kernels;
  int num_kernels() const { return static_cast<int>(kernels.size()); }
};

// True when the header of `path` (its first line) names kernel, active_sms, lanes_per_warp
// and an elapsed time: an activity table rather than a per-kernel component table.
bool LooksLikeActivityTable(const std::string& path);

// Throws InputError for a missing required column or one named twice, a row with the wrong
// number of fields, a kernel named twice, a count that is not a finite number >= 0, SMs or
// lanes < 1 or not integers, clocks or elapsed time <= 0, an unknown category, or no rows.
ActivityTable ReadActivityTable(const std::string& path);

}  // namespace wattcal
