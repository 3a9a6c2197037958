// Per-kernel performance counters from the profilers' CSV exports (Nsight Compute details and
// raw pages, nvprof --metrics/--events, AccelWattch's hw_perf.csv), with every value
// normalised to base units, and the writer of a Nsight Compute details page.
//
// Recognised from the content (FORMATS.md §2-3, samples/ncu, samples/nvprof,
// samples/accelwattch):
//
// * Where the CSV starts. The application's stdout and the tool's own lines (==PROF==,
//   ==PID==) may come first, as in `ncu --csv app | tee x.csv`. The CSV header is the first
//   line that begins with "ID", (Nsight Compute), "Device","Kernel", (nvprof) or
//   Benchmark,Kernel, (hw_perf.csv), quoted as the tools quote it. Later lines that begin
//   with "==" (tool messages) and repeats of the header line (files appended with >>) are
//   skipped.
// * Nsight Compute details page (long: one row per launch x metric): the 2020 12-column
//   header and the newer one (no Kernel Time; Block Size, Grid Size, Device, CC; NVTX and
//   rule columns). Rule rows (empty Metric Name) are skipped. A launch is one (Process ID,
//   ID) pair. A metric name repeated within one launch in another section (newer ncu prints
//   "Memory Throughput" in Speed Of Light as % and again in Memory Workload Analysis as
//   byte/second) keeps the plain name for the first occurrence; later ones are stored as
//   "SECTION/NAME".
// * Nsight Compute raw page (wide: one row per launch, one column per metric); its second
//   line is the units row, which is required (units are never guessed).
// * nvprof: "Device","Kernel","Invocations","Metric Name"|"Event Name",...,"Avg": the Avg
//   column is taken, weighted by Invocations when one kernel's metric appears in several
//   rows. Values carry unit suffixes (24.048094GB/s, 2.753000KB/s, 48.898767%); prefixes
//   are SI (K = 1000), which the K20c sample confirms: 5 sysmem write transactions of
//   32 B over the kernel time implied by its dram_write_throughput give the printed
//   2.758 KB/s, where K = 1024 would give 2.89. Utilisation levels ("Low (1)", "Mid (5)",
//   "Max (10)") become the number in parentheses, on nvprof's 0-10 scale (NOT a
//   percentage); a range "Low (1..3)" becomes its midpoint.
// * AccelWattch hw_perf.csv: one row per (Benchmark, Kernel), every other column a metric
//   named by its header (counts, Pipeline_Duty as a fraction, Elapsed_Cycles in cycles);
//   empty and nan cells (pandas' NaN) are absent values.
//
// Numbers. Nsight Compute groups digits and follows the locale ("1,215,000,000.00",
// "2.508.800", "65,77"). The decimal separator is decided once per file from the values
// that settle it: a separator followed by other than exactly three digits, a separator
// repeated within one value (grouping), or both separators in one value (the last one is
// the decimal). A file whose values settle it both ways is an error. When nothing settles
// it, the decimal separator is '.', so "1,234" reads 1234 and "1.234" reads 1.234. Digit
// groups must have three digits. "n/a" (any case) is an absent value.
//
// Units (Metric Unit column, raw units row, nvprof suffixes) are normalised to bytes,
// seconds, per-second rates, percent, and counts as counts: byte/Kbyte/Mbyte/Gbyte/Tbyte
// and B/KB/MB/GB/TB (SI), KiB/MiB/GiB (1024); nsecond/usecond/msecond/second and
// ns/us/ms/s; hz/khz/mhz/ghz (per second); "%"; count units (cycle, inst, warp, thread,
// block, register, sector, request, wavefront, transaction, ...) keep their value; "A/B"
// combines two of these. An unknown unit is an InputError naming the Metric Unit field.
// A value that is not a number is an error when its metric has a unit; with no unit it is
// a text attribute (e.g. "Function Cache Configuration" = "CachePreferNone",
// device__attribute_display_name) and is left out, unless the same metric is numeric
// elsewhere in the file.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace wattcal {

// The counters of one kernel, averaged over its profiled launches.
struct KernelCounters {
  // Kernel name as printed (demangled with arguments when the tool did so).
  std::string kernel;
  // hw_perf.csv's Benchmark column (kernels are keyed by benchmark and kernel there);
  // empty for the other formats.
  std::string benchmark;
  // Profiled launches aggregated into this record (nvprof: the Invocations column;
  // hw_perf.csv: rows, each already a per-kernel average).
  int launches = 0;
  // Metric name -> mean over the launches that report it ("n/a" launches do not count).
  // Bytes in bytes, times in seconds, rates per second, percentages in percent, counts as
  // counts, nvprof levels on their 0-10 scale.
  std::map<std::string, double> metrics;
  // File these counters came from, and the first line of this kernel in it.
  std::string path;
  int64_t line = 0;
};

enum class CounterFormat { kNcuDetails, kNcuRaw, kNvprofMetrics, kAccelWattchHwPerf };

// "ncu-details", "ncu-raw", "nvprof", "accelwattch-hw-perf".
const char* CounterFormatName(CounterFormat format);

// Reads every kernel of a counter export, in order of first appearance; the format is
// recognised from the content and returned in `detected` when given. Throws InputError
// (FILE:LINE: FIELD: MESSAGE) for malformed input: no CSV header found, a missing
// required column, a truncated row, an unknown unit, a non-numeric value with a unit, a
// metric whose unit changes kind between rows, inconsistent decimal separators, or a
// header without data rows.
std::vector<KernelCounters> ReadCounters(const std::string& path,
                                         CounterFormat* detected = nullptr);

// A unit of the tools' exports and its conversion to wattcal's base units:
// value_in_base_units = value * multiply / divide.
struct CounterUnit {
  double multiply = 1.0;
  double divide = 1.0;
  // Kind of quantity after conversion, e.g. "byte", "second", "byte/second", "1/second",
  // "%", "cycle", "" (plain count); used to reject a metric whose kind changes.
  std::string base;
};

// Parses a unit as written by ncu ("Kbyte", "usecond", "cycle/nsecond", "register/thread",
// "%", "") or nvprof ("GB/s", "KB/s", "%"). Returns false for an unknown unit.
bool ParseCounterUnit(const std::string& unit, CounterUnit* parsed);

// The unit Nsight Compute prints (with --print-units base) for a metric, as used by
// NcuDetailsCsv: "nsecond" for gpu__time_* and display "Duration", "byte" for *bytes*,
// "byte/second" for *bytes*.per_second, "%" for pct, "cycle" for *cycles*, "inst" for
// instruction counts, "" otherwise.
std::string NcuBaseUnitForMetric(const std::string& metric);

// A Nsight Compute details page (the newer header without rule columns, every field
// quoted, section "Command line profiler metrics") holding `kernels`: each kernel is
// written as `launches` (at least 1) identical launches, one row per metric in name order,
// values in the unit of NcuBaseUnitForMetric chosen so that ReadCounters gives back exactly
// the same doubles. The virtual GPU writes its counters with it.
std::string NcuDetailsCsv(const std::vector<KernelCounters>& kernels);

}  // namespace wattcal
