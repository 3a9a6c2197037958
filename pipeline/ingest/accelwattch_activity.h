// AccelWattch's activity table: per kernel of a sweep description, what AccelWattch Eqs. 10-13 of
// the MICRO'21 paper need to estimate its power, in one row: the harness's description (benchmark,
// instruction-mix category, active SMs k, lanes per warp y, clocks), the elapsed time
// T_elapsedTime of AccelWattch Eq. 11, the activity factors a_i (every counter of the kernel, per
// launch, base units) and the measured power P_meas of AccelWattch Eq. 13.
//
//   kernel,benchmark,category,active_sms,lanes_per_warp,f_core_mhz,f_mem_mhz,elapsed_s,
//   launches,mean_power_w,<metric>,<metric>,...
//
// One row per description row, in description order. Metric columns: every metric any of
// these kernels reports, sorted by name; a cell is the metric's mean over the kernel's
// profiled launches (KernelCounters::metrics), empty where the kernel lacks it. elapsed_s is
// gpu__time_duration.sum (seconds, mean per launch) or, without it, the kernel's mean launch
// window length from the windows file. mean_power_w is the kernel's MTSM mean power from the
// power log (launch-weighted over its clock groups; empty when all its launches were excluded,
// or when no power log is given). launches is the counters' profiled launches. Numbers are
// %.17g, empty cells for unknown values; fields are quoted (RFC 4180) only when needed.
// Kernels are matched by KernelKey (ingest.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ingest/counters.h"
#include "ingest/kernel_energy_pass.h"

namespace wattcal {

struct AccelWattchActivity {
  // The table.
  std::string csv;
  // Rows (description kernels) and metric columns.
  int kernels = 0;
  int metrics = 0;
  // Kernels of the counters that the description lacks (ignored, with one warning).
  int ignored_counter_kernels = 0;
};

// Builds the table. `energy` is null without a power log; `windows_path` ("" for none) is read
// only for kernels whose counters lack gpu__time_duration.sum. Throws InputError naming the
// description's FILE:LINE for a kernel without counters, without elapsed time (no
// gpu__time_duration.sum and no window), or, with a power log, without a launch window; and
// naming the counters' line for two kernels with the same KernelKey.
AccelWattchActivity AccelWattchActivityTable(const std::string& description_path,
                                             const std::vector<KernelCounters>& counters,
                                             const std::string& counters_path,
                                             const KernelEnergyReport* energy,
                                             const std::string& windows_path);

}  // namespace wattcal
