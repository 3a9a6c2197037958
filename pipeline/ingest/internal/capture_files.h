// A capture directory's files (windows.csv, the power logs, the counter exports) and the export
// of each workload (capture_files.cc). Internal to ingest/.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace wattcal {
namespace capture_internal {

// The files of a capture directory, paths (empty when absent).
struct CaptureFiles {
  std::string dir, windows, idle_windows, nvml, smi, ncu_raw, ncu_dir;
  // gpm_fields.csv (wattcal-capture --fields gpm), "" when absent.
  std::string fields;
};

// The files of capture directory `dir_in`; InputError when it is no capture directory (no
// windows.csv, no counters unless `require_counters` is false, or, `require_power_log`, no power
// log).
CaptureFiles FindFiles(const std::string& dir_in, bool require_power_log,
                       bool require_counters = true);

// The exports of ncu/: relative path without ".csv" (a workload "suite/app" may live in
// ncu/suite/app.csv) -> path, in name order.
std::map<std::string, std::string> ListExports(const std::string& ncu_dir);

// The export of a workload: its own name, else, for an explicit run of a workload ("gemm_run2"),
// the export of that workload (ncu/gemm.csv), which is named in `warnings`. A workload whose name
// merely starts with another's ("dram_ld_l2_half" and ncu/dram_ld.csv) shares nothing. Empty
// when none.
std::string ExportOf(const std::map<std::string, std::string>& exports, const std::string& workload,
                     const std::string& where, std::vector<std::string>* warnings);

}  // namespace capture_internal
}  // namespace wattcal
