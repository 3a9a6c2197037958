// Power-sample logs, streamed in constant memory: nvidia-smi --query-gpu CSV (every real
// shape: with or without a header, with or without units, [N/A] values, headers repeated by
// appended runs, several GPUs in one log), raw NVML sample CSV (timestamp_us,power_mw,...) and
// DCGM `dcgmi dmon` tables. The format is recognised from the first line that is not blank.
//
// Every reading comes out with its time in seconds and its power in watts, whatever the log's
// units (W/mW/kW, MHz/GHz/kHz are recognised from the header or the value and converted; an
// unknown unit is an InputError naming FILE:LINE and the column). Nothing is resampled: the
// readings come out as logged, repeated values included (nvidia-smi polled faster than the
// sensor refreshes repeats a reading for tens of rows), and no sampling period is assumed.
//
// Formats (see shared/FORMATS.md §1 and §4):
//
//   nvidia-smi  `nvidia-smi --query-gpu=timestamp,power.draw,... --format=csv[,noheader][,nounits]`
//     Header names are matched by canonical query name (`clocks.current.sm [MHz]` is
//     clocks.sm, `clocks.current.memory [MHz]` is clocks.mem, ...). The power column is
//     PowerLogOptions::power_field, or by default power.draw.instant, else power.draw, else
//     power.draw.average (the choice is reported by power_field(); one log never mixes two).
//     Optional: clocks_event_reasons.active (or the older clocks_throttle_reasons.active), a
//     hex bitmask `0x0000000000000004`, and enforced.power.limit (else power.limit).
//     Timestamps `YYYY/MM/DD HH:MM:SS.mmm` are local time without a zone: they are read as UTC
//     and PowerLogOptions::utc_offset_h is subtracted. `[N/A]`, `[Not Supported]`, `N/A` are
//     missing values: a row whose power is missing is skipped and counted (an empty power cell
//     or NaN is counted apart, PowerLogSummary, and named in a warning), a missing clock or
//     temperature is NaN. A header line repeated mid-file (runs appended with `>>`) is
//     accepted; a later header may even list other columns, as long as it keeps a power
//     column of the same kind. Several GPUs: rows are told apart by the `index`, `uuid` or
//     `pci.bus_id` column and PowerLogOptions::gpu picks one.
//   NVML raw    a comma-separated header `timestamp_us,power_mw[,...]`; the time column may be
//     timestamp_ns/_us/_ms/_s and the power column power_uw/_mw/_w/_kw, or the instantaneous
//     power_instant_uw/_mw/_w/_kw (NVML_FI_DEV_POWER_INSTANT), which the automatic choice
//     prefers; optional columns f_core_mhz (or sm_clock_mhz), f_mem_mhz (or mem_clock_mhz),
//     temperature_c, energy_mj (or energy_uj, energy_j: nvmlDeviceGetTotalEnergyConsumption,
//     a cumulative counter), power_limit_mw (or _w), clocks_event_reasons (or
//     clocks_throttle_reasons, clock_reasons: the NVML bitmask, hex "0x..." or decimal), and
//     gpu (or index, uuid) to tell several GPUs apart. Units come from the names' suffixes.
//   dcgmi dmon  `dcgmi dmon -e 155,157,100,101,150 -d <ms>` output: a `#Entity POWER ...` line,
//     an `ID W ...` units line (both repeated every few rows), rows `GPU 0   61.364 ...`, `N/A`
//     for blanks. Power is POWINST (field 157, instantaneous) when present, else POWER (155,
//     a running average); SMCLK (100), MMCLK (101) and TMPTR (150) fill the clocks and the
//     temperature. dmon prints no time of its own: either every line carries a leading
//     timestamp (e.g. piped through moreutils `ts '%Y-%m-%dT%H:%M:%.S'`, or `ts %.s` for epoch
//     seconds), or PowerLogOptions::dmon_interval_ms gives the -d delay and the k-th row of
//     the chosen GPU is placed at dmon_start_s + k * dmon_interval_ms / 1000.
//
// Times must be non-decreasing along the chosen GPU's rows: a backwards jump is an InputError
// naming its line. A log must end with an end-of-line: a last line without one was cut (the
// logger was still writing, or the file was truncated) and is an InputError naming it.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace wattcal {

// One power reading, in SI-prefixed units named in each field.
struct PowerSample {
  // Time of the reading, seconds. nvidia-smi and ts-prefixed dmon logs: seconds since the Unix
  // epoch (UTC, after subtracting PowerLogOptions::utc_offset_h); raw NVML logs: the log's own
  // time base converted to seconds; dmon without timestamps: dmon_start_s + k * interval.
  double time_s = 0.0;
  // Board power, watts.
  double power_w = 0.0;
  // Core (SM) clock, MHz; NaN when the log has no such column or the value is missing.
  double f_core_mhz = std::numeric_limits<double>::quiet_NaN();
  // Memory clock, MHz; NaN when absent.
  double f_mem_mhz = std::numeric_limits<double>::quiet_NaN();
  // GPU temperature, degrees Celsius; NaN when absent.
  double temperature_c = std::numeric_limits<double>::quiet_NaN();
  // Cumulative energy counter, joules (NVML raw energy_mj/_uj/_j: energy since the driver
  // loaded; the energy between two readings is their difference). NaN when the log has no
  // counter (nvidia-smi, dmon) or the value is missing. On the H100 capture the counter is
  // refreshed about every 100 ms: consecutive readings repeat it.
  double energy_j = std::numeric_limits<double>::quiet_NaN();
  // Clock event (throttle) reasons in force, the NVML bitmask (kClockReason* bits); 0 and
  // has_clock_reasons = false when the log has no such column or the value is missing.
  uint64_t clock_reasons = 0;
  bool has_clock_reasons = false;
  // Power limit in force, watts (nvidia-smi enforced.power.limit or power.limit, NVML raw
  // power_limit_mw); NaN when absent.
  double power_limit_w = std::numeric_limits<double>::quiet_NaN();
  // 1-based line of the log the reading comes from.
  int64_t line = 0;
};

enum class PowerLogFormat { kNvidiaSmi, kNvmlRaw, kDcgmiDmon };

// Bits of NVML's clock event reasons (nvmlClocksEventReasons, formerly
// nvmlClocksThrottleReasons; nvidia-smi clocks_event_reasons.active prints the same mask).
constexpr uint64_t kClockReasonGpuIdle = 0x1;
constexpr uint64_t kClockReasonApplicationsClocksSetting = 0x2;
constexpr uint64_t kClockReasonSwPowerCap = 0x4;
constexpr uint64_t kClockReasonHwSlowdown = 0x8;
constexpr uint64_t kClockReasonSyncBoost = 0x10;
constexpr uint64_t kClockReasonSwThermalSlowdown = 0x20;
constexpr uint64_t kClockReasonHwThermalSlowdown = 0x40;
constexpr uint64_t kClockReasonHwPowerBrakeSlowdown = 0x80;
constexpr uint64_t kClockReasonDisplayClockSetting = 0x100;

// What a power column measures. On Ampere (except GA100) and newer GPUs nvidia-smi power.draw
// and power.draw.average, NVML nvmlDeviceGetPowerUsage (raw power_mw) and DCGM POWER (155) are
// 1-second averages (shared/FORMATS.md §1.2; measured 8-13% low over 2 s windows on the H100
// capture); power.draw.instant, NVML_FI_DEV_POWER_INSTANT (raw power_instant_mw) and DCGM
// POWINST (157) are instantaneous.
enum class PowerKind { kInstant, kAveraged, kUnknown };

// "instant", "averaged" or "unknown".
const char* PowerKindName(PowerKind kind);

// "nvidia-smi", "nvml-raw" or "dcgmi-dmon".
const char* PowerLogFormatName(PowerLogFormat format);

struct PowerLogOptions {
  // The GPU to read when the log holds several: an nvidia-smi `index`, `uuid` or `pci.bus_id`
  // value, a raw log's gpu/index/uuid value, or a DCGM GPU entity id ("0" for `GPU 0`).
  // "" = the log must hold one GPU (a second one is an InputError saying so).
  std::string gpu;
  // The power column: an nvidia-smi query name (`power.draw`, `power.draw.instant`,
  // `power.draw.average`, with or without ` [W]`), a raw column name (`power_mw`), or a dmon
  // short name (`POWER`, `POWINST`). "" = automatic (instant readings preferred:
  // power.draw.instant, power_instant_mw, POWINST).
  std::string power_field;
  // Column names of an nvidia-smi `--format=csv,noheader` log, in query order (e.g. the
  // --query-gpu list). Required for such logs; ignored when the log has a header line.
  std::vector<std::string> columns;
  // Hours the logging machine's clock was ahead of UTC; subtracted from nvidia-smi and
  // ts-prefixed dmon timestamps (local time without a zone) to get UTC epoch seconds.
  double utc_offset_h = 0.0;
  // dcgmi dmon logs without timestamps: the `-d` delay between rows, milliseconds (0 = none:
  // such a log is then an InputError). Ignored when the lines carry timestamps.
  double dmon_interval_ms = 0.0;
  // dcgmi dmon logs without timestamps: time of the first row, seconds, in the time base of
  // the kernel windows it will be matched with.
  double dmon_start_s = 0.0;
  // nvidia-smi and raw NVML logs: quote-free lines are split without libcsv (CsvReader's fast
  // path, same results). False reads every line through libcsv: for tests comparing the two.
  bool csv_fast_path = true;

  // False (with a message naming the field, its value and the rule) when a field is invalid.
  bool Check(std::string* error) const;
};

// What a reader saw, for reports and manifests.
struct PowerLogSummary {
  // Readings returned by Next().
  int64_t samples = 0;
  // Rows of the chosen GPU skipped because their power value was [N/A], [Not Supported], N/A.
  int64_t missing_power_rows = 0;
  // Rows of the chosen GPU skipped because their power cell was empty, and the first one's line
  // (0 when none). Counted apart from [N/A]: an empty cell is not what nvidia-smi writes.
  int64_t empty_power_rows = 0;
  int64_t first_empty_power_line = 0;
  // Rows of the chosen GPU skipped because their power value was NaN, and the first one's line.
  int64_t nan_power_rows = 0;
  int64_t first_nan_power_line = 0;
  // Header lines seen after the first one (runs appended to one file, dmon's repeats).
  int64_t repeated_headers = 0;
  // Rows of other GPUs (or DCGM entities) skipped.
  int64_t other_gpu_rows = 0;
  // Times of the first and the last reading returned, seconds (NaN before the first): the
  // range the log covers, known after one pass without reading it again.
  double first_time_s = std::numeric_limits<double>::quiet_NaN();
  double last_time_s = std::numeric_limits<double>::quiet_NaN();
};

// Streams a power log in constant memory. Throws InputError (FILE:LINE: FIELD: message) for
// anything it cannot read, and OptionError when `options` fail Check().
class PowerLogReader {
 public:
  PowerLogReader(const std::string& path, const PowerLogOptions& options);
  ~PowerLogReader();
  PowerLogReader(const PowerLogReader&) = delete;
  PowerLogReader& operator=(const PowerLogReader&) = delete;

  // Reads the next reading. Returns false at the end of the log; throws InputError at the end
  // when the log held no usable reading at all.
  bool Next(PowerSample* sample);

  PowerLogFormat format() const;
  // The power column in use, as the log names it without its unit (`power.draw.instant`,
  // `power_mw`, `POWINST`).
  const std::string& power_field() const;
  // What the power column measures: nvidia-smi power.draw.instant, raw power_instant_*, dmon
  // POWINST are kInstant; power.draw, power.draw.average, dmon POWER are kAveraged; a raw
  // power_* column is kAveraged when a power_instant_* column stands beside it (the H100
  // capture's NVML log) and kUnknown otherwise (instant on GA100 and older GPUs).
  PowerKind power_kind() const;
  // Whether the log has an energy counter (raw energy_mj/_uj/_j), clock event reasons, and a
  // power limit column.
  bool has_energy_counter() const;
  bool has_clock_reasons() const;
  bool has_power_limit() const;
  // Whether the log has a core clock, memory clock and temperature column.
  bool has_core_clock() const;
  bool has_memory_clock() const;
  bool has_temperature() const;
  const std::string& path() const;
  const PowerLogSummary& stats() const;

 private:
  class Parser;
  class CsvParser;
  class DmonParser;
  // Defined beside each parser (power_log_csv.cc, power_log_dmon.cc).
  static std::unique_ptr<Parser> MakeCsvParser(const std::string& path,
                                               const PowerLogOptions& options,
                                               PowerLogSummary* stats, PowerLogFormat format,
                                               bool has_header);
  static std::unique_ptr<Parser> MakeDmonParser(const std::string& path,
                                                const PowerLogOptions& options,
                                                PowerLogSummary* stats);
  std::unique_ptr<Parser> parser_;
  std::string path_;
  PowerLogSummary stats_;
  bool done_ = false;
  bool have_time_ = false;
  double last_time_s_ = 0.0;
  int64_t last_time_line_ = 0;
};

// "N rows with an empty power cell and M with NaN were skipped (FILE:LINE first)", or "" when
// the log had neither. PowerLogReader logs it as a warning at the end of the log; the ingest
// summary repeats it.
std::string EmptyOrNanPowerNote(const std::string& path, const PowerLogSummary& stats);

// Parses an nvidia-smi timestamp `YYYY/MM/DD HH:MM:SS[.fff]` (also `YYYY-MM-DD`, and `T`
// between date and time) read as UTC into seconds since the Unix epoch. Returns false when
// `text` is not such a timestamp.
bool ParseSmiTimestamp(const char* text, size_t length, double* epoch_s);

}  // namespace wattcal
