// One power value per workload, read from a CSV column: the measured power of one GPU (the
// `<arch>_W` columns of AccelWattch's measured_power_by_arch.csv), or a model's estimated
// totals (the `sim_total_W` column of AccelWattch's per_kernel_*.csv, or a tidy
// `kernel,power_w` file). Inputs of the relative-architecture comparison (compare.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace wattcal {

struct WorkloadPower {
  // File the values came from and the column read (as spelled in the header).
  std::string path;
  std::string column;
  // Workloads with a value, in file order (unique).
  std::vector<std::string> workloads;
  // Power of each workload, W (> 0), converted from the column's unit.
  std::vector<double> power_w;
  // Line of each workload's row.
  std::vector<int64_t> lines;
  // Workloads whose cell is empty (not run on this GPU), in file order.
  std::vector<std::string> not_run;

  int size() const { return static_cast<int>(workloads.size()); }
  // Index of `workload`, or -1.
  int Find(const std::string& workload) const;
};

// Reads one power column of a CSV whose first column names the workload (`kernel_id`,
// `kernel`, `workload` or `benchmark`).
//
// `column` picks the power column: its exact header name, or a name without its unit
// (`volta_qv100` finds `volta_qv100_W`). Empty picks `sim_total_W`, else `power_w`, else
// `power_mw`. The unit comes from the header's suffix: `_W`/`_w` watts, `_mW`/`_mw`
// milliwatts (converted); a column without one of these suffixes is refused, never guessed.
// An empty cell means "not run" (listed in not_run); any other cell must be a finite number
// > 0. Throws InputError naming FILE:LINE and the field for a missing or ambiguous column, a
// short row, a repeated workload, a bad number, or a file without any value.
WorkloadPower ReadWorkloadPower(const std::string& path, const std::string& column = "");

}  // namespace wattcal
