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
// block, cluster, SM, register, sector, request, wavefront, transaction, ...) keep their
// value; "A/B" combines two of these. A Nsight Compute metric whose unit is unknown does not
// fail the read: its value is left out and the unit kept (CounterLaunch::unknown_units,
// KernelCounters::unknown_units), and asking for it (LaunchMetric) is an InputError naming
// the file, the launch's line, the metric and its unit. ncu 2025.3 raw pages carry every
// launch__* and device__attribute_* column whether asked for or not, so one odd unit among
// ~300 columns must not make the file unreadable.
//
// Nsight Compute rows. ncu quotes every field, so after the header a line that does not
// start with '"' is not a row of the table: it is the application's output or a tool
// message, wherever it appears (`ncu --csv app | tee x.csv` mixes them), and is skipped. A
// quoted line whose first field is not a launch ID (a whole number; empty on the raw
// units row) and whose width differs from the header is skipped too. A row that starts
// like a table row but is short is an error ("truncated row"), except that a details page
// with rule columns may leave them out: ncu 2025.3 ends a metric row right after its value
// ("...,"Metric Value",") and only rule rows fill "Rule Name" .. "Estimated Speedup". A
// skipped line that opens a quoted field running over later lines is an error, not a
// silent loss of the rows it swallowed. "no data" (ncu 2025.3) is an absent value like n/a.
//
// Appended exports (`cat a.csv b.csv > c.csv`): a header line after the first starts a new
// part with its own columns (and, on a raw page, its own units row). Launches of all parts
// are read in file order; on a details page a launch is (part, Process ID, ID), since IDs
// restart at 0 in each export.
// A value that is not a number is an error when its metric has a unit; with no unit it is
// a text attribute (e.g. "Function Cache Configuration" = "CachePreferNone",
// device__attribute_display_name) and is left out, unless the same metric is numeric
// elsewhere in the file.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
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
  // Metrics left out of `metrics` because their unit is unknown: metric -> unit as written.
  std::map<std::string, std::string> unknown_units;
  // Distinct launch configurations (grid x block) summed into this record: 1 (or 0 when not
  // given) unless ReadCounters summed a kernel launched with several (MixedLaunchConfigs::kSum).
  int launch_configs = 1;
};

// What ReadCounters does with a kernel name launched with several configurations (Grid Size or
// Block Size): an error (they are different workloads that a join by name would mix), or its
// launches summed (SumCounterLaunches), counts then divided by the launches: the kernel's work
// over the whole export, for utilisations that need no windows (wattcal-ingest --activity).
enum class MixedLaunchConfigs { kError, kSum };

enum class CounterFormat { kNcuDetails, kNcuRaw, kNvprofMetrics, kAccelWattchHwPerf };

// "ncu-details", "ncu-raw", "nvprof", "accelwattch-hw-perf".
const char* CounterFormatName(CounterFormat format);

// Reads every kernel of a counter export, in order of first appearance; the format is
// recognised from the content and returned in `detected` when given. Launches of one kernel
// name are averaged. Throws InputError (FILE:LINE: FIELD: MESSAGE) for malformed input: no
// CSV header found, a missing required column, a truncated row, a non-numeric value with a
// unit, a metric whose unit changes kind between rows, inconsistent decimal separators, a
// header without data rows, or (Nsight Compute) two launches of one kernel name with
// different Grid Size or Block Size, which are different workloads (unless `mixed` is kSum),
// read per launch with ReadCounterLaunches (wattcal-ingest --capture). Metrics with an unknown
// unit are left out and listed in KernelCounters::unknown_units. With `keep`, an Nsight Compute
// export's other metrics are not parsed (the launch columns always are).
std::vector<KernelCounters> ReadCounters(const std::string& path, CounterFormat* detected = nullptr,
                                         MixedLaunchConfigs mixed = MixedLaunchConfigs::kError,
                                         const std::set<std::string>* keep = nullptr);

// One profiled launch: one row of a raw page, one (Process ID, ID) of a details page, one
// nvprof record (the mean of its Invocations) or one hw_perf.csv record.
struct CounterLaunch {
  // Kernel Name as printed.
  std::string kernel;
  // hw_perf.csv's Benchmark column; empty for the other formats.
  std::string benchmark;
  // The "ID" column (-1 when the format has none).
  int64_t id = -1;
  // File, and the launch's first line in it.
  std::string path;
  int64_t line = 0;
  // Launches this record stands for: 1, but nvprof's Invocations (its metrics are their
  // mean).
  int64_t launches = 1;
  // True when "Grid Size" and "Block Size" were given ("(1056, 1, 1)").
  bool has_launch_config = false;
  std::array<int64_t, 3> grid{{0, 0, 0}};
  std::array<int64_t, 3> block{{0, 0, 0}};
  // Metric name -> value in base units, as ReadCounters ("n/a" cells absent).
  std::map<std::string, double> metrics;
  // Metric name -> kind of its base unit (CounterUnit::base: "byte", "second", "%",
  // "byte/second", "" for a plain count, ...), for every entry of `metrics`.
  std::map<std::string, std::string> metric_base;
  // Metric name -> unit text that could not be read; the value is not in `metrics`.
  std::map<std::string, std::string> unknown_units;
};

// Reads every launch of a counter export, in file order, never merging launches; the
// format is recognised as by ReadCounters. Throws InputError as ReadCounters, except that
// launches of one kernel name with different configurations are not an error.
std::vector<CounterLaunch> ReadCounterLaunches(const std::string& path,
                                               CounterFormat* detected = nullptr);

// The launches of a counter export, in file order, to `sink`, each with only the metrics in
// `keep` (every metric when null). A Nsight Compute raw page is streamed in two passes (the
// decimal separator is decided from the whole file first), so memory is bounded by one row and
// the metrics kept, not by the launches; the other formats are read whole, then filtered.
// Throws InputError as ReadCounterLaunches.
void ForEachCounterLaunch(const std::string& path, const std::set<std::string>* keep,
                          const std::function<void(CounterLaunch&&)>& sink,
                          CounterFormat* detected = nullptr);

// The value of `metric` in `launch`. Throws InputError "PATH:LINE: METRIC: unknown unit
// 'cluster' ..." when its unit was unknown, or "PATH:LINE: METRIC: no value in this launch ..."
// when absent: no such column, or an n/a cell (LINE: the launch's first line).
double LaunchMetric(const CounterLaunch& launch, const std::string& metric);

// True when SumCounterLaunches sums `metric` of kind `base` over launches: counts, bytes,
// seconds, cycles and the other count units (no '/', not "%", not an nvprof level), except
// ratios by name (*.ratio, *.pct*, *per_second*, *per_cycle*) and the device and launch
// configuration attributes (device__attribute_*, launch__*), which describe a launch rather
// than work done.
bool IsSummedCounter(const std::string& metric, const std::string& base);

// The counters of a workload made of several launches (of one or several kernels): metrics
// that IsSummedCounter are summed over the launches that report them (nvprof records count
// launch.launches times); the others (percentages, rates, ratios, attributes) are averaged
// weighted by each launch's duration (gpu__time_duration.sum, else the details page's
// "Duration", times launch.launches; equal weights when a launch lacks it). Returns kernel =
// `name`, launches = the launches summed, path/line of the first launch; metrics with an
// unknown unit in any launch go to unknown_units. Throws InputError when a metric's kind
// differs between two launches or a summed metric is negative in a launch (naming its line),
// std::invalid_argument when `launches` is empty.
KernelCounters SumCounterLaunches(const std::string& name,
                                  const std::vector<CounterLaunch>& launches);

// SumCounterLaunches one launch at a time: the same result, in memory bounded by the metrics
// rather than the launches (an export of a whole training step, 10^5 launches).
class CounterLaunchSum {
 public:
  explicit CounterLaunchSum(std::string name);
  // Throws InputError when a metric's kind differs from an earlier launch's, or a summed
  // metric (a count, byte count or time) is negative in this launch.
  void Add(const CounterLaunch& launch);
  int64_t launches() const { return count_; }
  // As SumCounterLaunches; std::invalid_argument when nothing was added.
  KernelCounters Result() const;

 private:
  struct Total {
    bool seen = false;
    bool summed = false;
    std::string base;
    int64_t first_line = 0;
    double sum = 0.0;
    double timed_mean = 0.0, timed_weight = 0.0;  // weighted by each launch's duration
    double equal_mean = 0.0, equal_weight = 0.0;  // equal weights (a launch without duration)
  };
  std::string name_;
  std::string path_;
  int64_t line_ = 0;
  int64_t count_ = 0;
  bool timed_ = true;
  std::map<std::string, Total> totals_;
  std::map<std::string, std::string> unknown_units_;
};

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
