// Field logs: the DCGM profiling fields and device readings a cluster records, as the tools write
// them, and their means over a window (of an application, a capture or a job) for a field set
// (io/field_set.h). Two formats (docs/fields.md shows both):
//
//   dcgmi dmon   `dcgmi dmon -e 1002,1005,...,155 -d <ms>` text: a `#Entity SMACT DRAMA ...`
//     header, an `ID ... W` units line (both repeated every few rows), rows `GPU 0  0.512 ...`
//     (GPU-I and GPU-CI rows for MIG instances), `N/A` for a value DCGM does not have. dmon
//     prints no time: either every line carries a leading timestamp (moreutils `ts`, as for
//     power logs, ingest/power_log.h), or FieldLogOptions::dmon_interval_ms gives the -d delay
//     and an entity's k-th row is at dmon_start_s + k x delay.
//   dcgm-exporter  Prometheus text, `DCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="GPU-...",
//     GPU_I_ID="1",...} 0.512 [timestamp_ms]`, `# HELP`/`# TYPE` lines: one file whose lines
//     carry timestamps, or a directory of scrapes (one file each) whose lines carry none and
//     whose names are their times (epoch seconds `1764400000.5.prom`, or
//     `2026-11-29T10:00:00.prom`).
//
//   gpm-csv  wattcal-capture --fields gpm's gpm_fields.csv: `timestamp_us,NVML_GPM_METRIC_...`
//     then one row per sampling tick, each value the metric over the interval since the previous
//     row, an empty cell where NVML refused it; one series ("GPU").
//
// Columns are named canonically (DCGM_FI_PROF_SM_ACTIVE for SMACT, DCGM_FI_DEV_POWER_USAGE for
// POWER); a column wattcal does not know keeps its printed name. Every problem is an InputError
// naming FILE:LINE and the column.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace wattcal {

// One entity's samples (a GPU, or a MIG instance of one).
struct FieldSeries {
  // "GPU 0", "GPU-I 1" (dmon); "GPU-<uuid>" or "GPU-<uuid>/GPU_I_ID=1" (exporter).
  std::string entity;
  // The GPU index ("0"); "" when the log does not say (a dmon GPU-I row).
  std::string gpu;
  // The GPU's UUID (exporter); "".
  std::string uuid;
  // The MIG instance (dmon GPU-I id, exporter GPU_I_ID); "" for a whole GPU.
  std::string mig_instance;
  // Per sample: time in seconds, its source line, and one value per FieldLog::fields column
  // (NaN where the tool printed N/A or did not print the field).
  std::vector<double> time_s;
  std::vector<int64_t> line;
  std::vector<std::vector<double>> values;
};

struct FieldLog {
  std::string path;
  // "dcgmi-dmon", "dcgm-exporter" or "gpm-csv".
  std::string format;
  // The columns, canonical names where known (io/field_set.h KnownFields).
  std::vector<std::string> fields;
  std::vector<FieldSeries> series;

  // The column of `field` (a canonical name); -1 when the log has none.
  int FieldIndex(const std::string& field) const;
  // The series of a GPU (its index or UUID) and MIG instance ("" = the whole GPU); nullptr
  // when the log holds none.
  const FieldSeries* Find(const std::string& gpu, const std::string& mig_instance = "") const;
};

struct FieldLogOptions {
  // dcgmi dmon logs without timestamps: the -d delay between an entity's rows, ms (0: such a
  // log is an InputError).
  double dmon_interval_ms = 0.0;
  // dcgmi dmon logs without timestamps: the time of each entity's first row, seconds.
  double dmon_start_s = 0.0;
  // Hours the logging machine's clock was ahead of UTC; subtracted from ts-prefixed dmon
  // timestamps and scrape-file names (local time without a zone). Exporter timestamps are UTC.
  double utc_offset_h = 0.0;

  // False, with a sentence naming the field, its value and the rule, when invalid.
  bool Check(std::string* error) const;
};

// Reads a dcgmi dmon log, a dcgm-exporter file, or a directory of exporter scrapes (the format
// is recognised from the first line that is not blank). Throws InputError (FILE:LINE: COLUMN:
// message) and OptionError when `options` fail Check().
FieldLog ReadFieldLog(const std::string& path, const FieldLogOptions& options = {});

// Flags of a window's field means (FieldWindowMeans::flags).
inline constexpr const char* kFieldFlagFewSamples = "few_field_samples";
inline constexpr const char* kFieldFlagNaCells = "field_na_cells";
inline constexpr const char* kFieldFlagOutsideLog = "outside_field_log";

struct FieldWindowMeans {
  // Samples of the series whose time lies in the window.
  int samples = 0;
  // Per wanted column: the mean over the samples that have a value (NaN when none has).
  std::map<std::string, double> means;
  // Per wanted column: the samples in the window without a value (N/A).
  std::map<std::string, int> na_cells;
  // kFieldFlag*: fewer samples than asked for; N/A cells among them; the window reaches
  // before the series' first sample or after its last.
  std::vector<std::string> flags;
};

// The mean of each `wanted` column over the samples of `series` with start_s <= t <= end_s,
// averaged like the power of a window. A wanted column the log lacks is an InputError naming
// the log and the column (a missing field is never a silent zero).
FieldWindowMeans AverageFieldWindow(const FieldLog& log, const FieldSeries& series, double start_s,
                                    double end_s, const std::vector<std::string>& wanted,
                                    int min_samples);

}  // namespace wattcal
