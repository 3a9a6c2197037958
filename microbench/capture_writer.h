// The files of a capture directory, written exactly as wattcal-ingest --capture reads them
// (pipeline/ingest/capture.h; datasets/h100_capture/README.md). The real run (runner.cc) and
// the CPU tests write through this code, so what the tests ingest is what a GPU run writes.
//
//   windows.csv       kernel,start_us,end_us,launches,iters,blocks,threads,lanes
//   idle_windows.csv  kernel,start_us,end_us
//   nvml_power.csv    timestamp_us,power_mw,power_instant_mw,energy_mj,sm_clock_mhz,
//                     mem_clock_mhz,temperature_c,clocks_event_reasons,power_limit_mw
//                     (a value NVML did not give is written N/A)
//   capture.json      the GPU, driver, limits, clocks, versions and the effective options
//   ncu_raw.csv       Nsight Compute's stdout, as it printed it (runner.cc)
//   profile_plan.csv  name,iters: the launches the counters run profiles, in window order
//   gpm_fields.csv    --fields gpm: timestamp_us and one column per GPM metric (FieldLogHeader)
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace wattcal::capture {

// One measured benchmark window (one benchmark launched back to back).
struct WindowRecord {
  std::string kernel;  // the benchmark's name
  int64_t start_us = 0;
  int64_t end_us = 0;
  int64_t launches = 0;
  int64_t iters = 0;
  int64_t blocks = 0;
  int64_t threads = 0;
  int64_t lanes = 32;
};

struct IdleRecord {
  std::string kernel;  // idle_before, idle_after
  int64_t start_us = 0;
  int64_t end_us = 0;
};

// One NVML reading. Negative values (and has_clocks_event_reasons = false) are "not given".
struct PowerSample {
  int64_t timestamp_us = 0;      // Unix epoch, the clock of windows.csv
  int64_t power_mw = -1;         // nvmlDeviceGetPowerUsage (a 1-s average on Ampere+)
  int64_t power_instant_mw = -1; // NVML_FI_DEV_POWER_INSTANT
  int64_t energy_mj = -1;        // nvmlDeviceGetTotalEnergyConsumption (cumulative)
  int64_t sm_clock_mhz = -1;
  int64_t mem_clock_mhz = -1;
  int64_t temperature_c = -1;
  bool has_clocks_event_reasons = false;
  uint64_t clocks_event_reasons = 0;  // nvmlDeviceGetCurrentClocksEventReasons bitmask
  int64_t power_limit_mw = -1;        // nvmlDeviceGetEnforcedPowerLimit
};

std::string WindowsCsv(const std::vector<WindowRecord>& windows);
std::string IdleWindowsCsv(const std::vector<IdleRecord>& idle);
// Which optional columns nvml_power.csv has: those the first reading gave (a GPU whose NVML
// refuses a field gets no column for it, rather than a column of N/A that a reader might pick
// as its power source). timestamp_us and power_mw are always there.
struct PowerColumns {
  bool power_instant = true;
  bool energy = true;
  bool sm_clock = true;
  bool mem_clock = true;
  bool temperature = true;
  bool clocks_event_reasons = true;
  bool power_limit = true;

  static PowerColumns Of(const PowerSample& probe);
};
std::string PowerLogHeader(const PowerColumns& columns = PowerColumns());
std::string PowerLogLine(const PowerSample& s, const PowerColumns& columns = PowerColumns());

// One reading of field metrics (NVML GPM, --fields): the metrics over the interval that ends at
// timestamp_us (since the previous reading), in the order recorded; NaN where NVML refused one.
struct FieldSample {
  int64_t timestamp_us = 0;
  std::vector<double> values;
};

// gpm_fields.csv, the field log of a capture recorded with --fields gpm:
//   timestamp_us,NVML_GPM_METRIC_SM_UTIL,NVML_GPM_METRIC_INTEGER_UTIL,...
// one row per sampling tick, each value the metric over the interval since the previous row
// (percent 0..100, MiB/s for the PCIe/NVLink rates; nvml.h nvmlGpmMetricId_t), empty where NVML
// refused it. pipeline/ingest/field_log.h reads it (format "gpm-csv").
std::string FieldLogHeader(const std::vector<std::string>& names);
std::string FieldLogLine(const FieldSample& s);

// One profiled launch of the counters run.
struct ProfileEntry {
  std::string name;
  int64_t iters = 0;
};
std::string ProfilePlanCsv(const std::vector<ProfileEntry>& entries);
// Throws std::runtime_error naming the file and line.
std::vector<ProfileEntry> ReadProfilePlan(const std::string& path);

// Writes `content` to `path` through a temporary file renamed into place; throws
// std::runtime_error naming the path on failure.
void WriteTextFile(const std::string& path, const std::string& content);

// nvml_power.csv, appended one sample at a time (the sampler thread's file).
class PowerLogWriter {
 public:
  // Throws std::runtime_error.
  PowerLogWriter(const std::string& path, const PowerColumns& columns);
  ~PowerLogWriter();
  PowerLogWriter(const PowerLogWriter&) = delete;
  PowerLogWriter& operator=(const PowerLogWriter&) = delete;
  void Append(const PowerSample& s);
  void Flush();
  int64_t samples() const { return samples_; }

 private:
  std::FILE* file_ = nullptr;
  PowerColumns columns_;
  int64_t samples_ = 0;
};

// What capture.json records about the GPU and the run.
struct CaptureInfo {
  std::string gpu_name;
  std::string gpu_uuid;
  std::string pci_bus_id;
  std::string driver_version;
  int cuda_driver_version = 0;   // cudaDriverGetVersion
  int cuda_runtime_version = 0;  // cudaRuntimeGetVersion
  int compute_capability = 0;    // major * 10 + minor
  int sm_count = 0;
  int64_t power_limit_mw = -1;
  int64_t max_sm_clock_mhz = -1;
  int64_t max_mem_clock_mhz = -1;
  int64_t idle_sm_clock_mhz = -1;
  int64_t idle_mem_clock_mhz = -1;
  std::string ncu_version;
};

// capture.json: the info, the effective options and the wattcal version.
nlohmann::json CaptureJson(const CaptureInfo& info, const nlohmann::json& options);

}  // namespace wattcal::capture
