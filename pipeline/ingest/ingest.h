// The ingest stage's library entry point: raw measurement dumps -> tidy tables.
//
//   power log + kernel windows            -> per-kernel energy (MTSM, Arafa et al.)
//   counters  + GPU description           -> per-kernel utilisations (TPDS Eqs. 7-8)
//   both                                  -> the measured tidy table calibrate/validate read
//   instruction pairs (with / without)    -> energy per instruction (Arafa Eq. 1)
//   counters  + sweep description         -> AccelWattch's activity table (MICRO'21 Eqs. 10-13;
//   (+ power log)                            accelwattch_activity.h)
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "ingest/counters.h"
#include "ingest/kernel_energy_pass.h"
#include "ingest/power_log.h"
#include "io/gpu_description.h"

namespace wattcal {

struct IngestInputs {
  // Power log (nvidia-smi CSV, raw NVML samples, dcgmi dmon); empty: counters only.
  std::string power_log;
  // Kernel launch windows (kernel,start_us,end_us); required with a power log.
  std::string windows;
  // Nsight Compute / nvprof / AccelWattch counter export; empty: energy only.
  std::string counters;
  // GPU description for the utilisations; required with counters.
  std::string gpu_description;
  // Pairs of kernels for per-instruction energy (kernel,overhead_kernel,instructions).
  std::string instructions;
  // An already tabular corpus (gpmTOOL training/real/prediction file or tidy CSV) to convert
  // to the tidy form.
  std::string corpus;
  // A per-kernel measured power table, AccelWattch's hw_power_validation_*.csv
  // (",mean HW_power,st_dev,var,#samples": kernel, W, W, W^2, count).
  std::string kernel_power;
  // An AccelWattch microbenchmark run list (ubench.cfg), and the GPU's SM count and warp size
  // for the lines that omit them.
  std::string ubench;
  int ubench_sm_count = 80;
  int ubench_warp_size = 32;
  // A sweep description (wattcal-synth's sweep.csv: kernel,benchmark,category,active_sms,
  // lanes_per_warp,f_core_mhz,f_mem_mhz,...) for AccelWattch's activity table; needs counters.
  std::string description;
};

struct IngestOptions {
  // How the power log is read (GPU selection, power field, noheader columns, clock offset).
  PowerLogOptions log;
  // How windows are measured, flagged and aggregated.
  KernelEnergyOptions energy;
  // The V-F pair the whole log ran at, MHz, for a log without clock columns (NaN = not stated).
  // Without clocks and without a stated pair, a kernel launched in several windows is an
  // InputError: its launches may come from several V-F pairs, and averaging them would be wrong.
  double f_core_mhz = std::numeric_limits<double>::quiet_NaN();
  double f_mem_mhz = std::numeric_limits<double>::quiet_NaN();
  // Build IngestReport::windows_csv (the per-launch table). False leaves it empty: formatting
  // one row per launch costs time that is wasted when nobody writes the table (--windows-out).
  bool windows_table = true;
  // Build IngestReport::counters_csv (every counter of every kernel). False lets an export be
  // read for the description's metrics alone: an export of 10^5 launches of 300 metrics is
  // then parsed for the ~40 it needs (--counters-table unset, no AccelWattch description).
  bool counters_table = true;
  bool Check(std::string* error) const;
};

struct IngestReport {
  KernelEnergyReport energy;  // empty without a power log
  GpuDescription gpu;         // set with counters
  // Per kernel: utilisations in the description's component order (with counters).
  std::vector<std::pair<std::string, std::vector<double>>> utilisations;
  std::string kernels_csv;       // per (kernel, V-F pair) energy table
  std::string windows_csv;       // per launch (empty unless IngestOptions::windows_table)
  std::string tidy_csv;          // measured tidy table (power log + counters)
  std::string activity_csv;      // utilisations only (counters)
  std::string instructions_csv;  // energy per instruction (instruction pairs)
  std::string counters_csv;      // every counter of every kernel: kernel,launches,metric,value
  std::string corpus_tidy_csv;   // the converted corpus
  std::string kernel_power_csv;  // kernel,mean_power_w,power_sd_w,power_var_w2,samples
  std::string ubench_csv;        // benchmark,iterations,active_sms,lanes_per_warp
  std::string accelwattch_activity_csv;  // AccelWattch's activity table (with a description)
  std::string summary;                   // for the terminal
};

// Reads, measures, joins. Throws InputError (file:line:field) for bad data, including a
// kernel of the windows file that has no counters and an instruction pair naming a kernel
// that was not measured, and OptionError for missing companion inputs.
IngestReport Ingest(const IngestInputs& inputs, const IngestOptions& options);

// The key kernels are matched by across tools: the name without a leading "void " and
// without its argument list ("void k(float*, int)" -> "k").
std::string KernelKey(const std::string& name);

}  // namespace wattcal
