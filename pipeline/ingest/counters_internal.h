// The counter readers' shared insides (ingest/counters.cc, counters_ncu.cc, counters_nvprof.cc):
// units, numbers with their decimal marks, the CSV start and table of an export, and the readers
// each tool's file gets. Internal to ingest/.
#pragma once

#include <fmt/format.h>
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <utility>

#include "ingest/counters.h"
#include "io/csv_reader.h"
#include "io/units.h"
#include "util/errors.h"
#include "util/strings.h"
#include "util/text_input.h"

namespace wattcal {
namespace counters_internal {

// ----------------------------------------------------------------------------------------
// Small string helpers.

// "n/a" in any case (ncu, nvprof) and "no data" (ncu 2025.3); `empty_is_absent` adds "" and "nan" (pandas' NaN in
// hw_perf.csv).
inline bool IsAbsent(const std::string& cell, bool empty_is_absent) {
  const std::string lower = ToLower(Trim(cell));
  if (lower == "n/a" || lower == "no data") return true;
  return empty_is_absent && (lower.empty() || lower == "nan");
}

// ----------------------------------------------------------------------------------------
// Units.

struct UnitPart {
  double multiply = 1.0;
  double divide = 1.0;
  std::string base;  // "byte", "second", "1/second" (hz), "%", "" (count) or a count unit
};

inline bool ParseUnitPart(const std::string& part, UnitPart* out) {
  *out = UnitPart();
  if (part.empty() || part == "1") return true;  // a plain count
  if (part == "%") {
    out->base = "%";
    return true;
  }
  // Bytes, times and frequencies from the unit table (io/units.h): bytes and seconds as they
  // are, frequencies in Hz (cycles per second; the table's are in MHz). "mhz" is mega:
  // frequencies match in any case, millihertz never occurs in these exports.
  const auto take = [out](const UnitFactor& factor, const char* base) {
    out->multiply = factor.multiply;
    out->divide = factor.divide;
    out->base = base;
    return true;
  };
  if (const Unit* unit = FindUnitWord(Dimension::kData, part)) {
    return take(unit->to_canonical, "byte");
  }
  if (const Unit* unit = FindUnitWord(Dimension::kTime, part)) {
    return take(unit->to_canonical, "second");
  }
  if (const Unit* unit = FindUnitWord(Dimension::kFrequency, part)) {
    static const Unit& kHertz = *FindUnitWord(Dimension::kFrequency, "Hz");
    return take(FactorBetween(*unit, kHertz), "cycle/second");  // a clock's frequency
  }
  const std::string lower = ToLower(part);
  // Count units keep their value; plurals ("cycles", "passes") are accepted.
  // "cluster" (thread-block clusters, launch__cluster_max_active), "sm" (ncu's "SM",
  // launch__sm_count) and "block" are in ncu 2025.3 raw pages.
  static const std::set<std::string> kCounts = {
      "cycle",   "inst",      "warp",        "thread", "block", "cluster", "register", "sector",
      "request", "wavefront", "transaction", "flop",   "sm",    "pass",    "launch",   "lane"};
  if (lower == "ratio") return true;  // a plain number
  std::string word = lower == "instruction" || lower == "instructions" ? "inst" : lower;
  for (const size_t plural : {0, 1, 2}) {
    if (word.size() <= plural) break;
    const std::string singular = word.substr(0, word.size() - plural);
    const char* ending[] = {"", "s", "es"};
    if (kCounts.count(singular) > 0 && EndsWith(word, ending[plural])) {
      out->base = singular;
      return true;
    }
  }
  return false;
}

inline std::string KnownUnitsText() {
  return fmt::format(
      "bytes ({}), times ({}), frequencies ({}), %, counts (\"\", cycle, inst, "
      "warp, thread, block, cluster, register, sector, request, wavefront, "
      "transaction, flop, sm, pass, launch, lane, ratio) and A/B of these",
      UnitWordList(Dimension::kData), UnitWordList(Dimension::kTime, true),
      UnitWordList(Dimension::kFrequency));
}

// ----------------------------------------------------------------------------------------
// Numbers with locale digit grouping.

enum class Decimal { kUnknown, kDot, kComma };

inline bool LooksNumeric(const std::string& s) {
  if (s.empty()) return false;
  bool digit = false;
  for (char c : s) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digit = true;
    } else if (c != '.' && c != ',' && c != '+' && c != '-' && c != 'e' && c != 'E') {
      return false;
    }
  }
  return digit;
}

// What a single value says about the decimal separator (FORMATS.md §2.1).
inline Decimal DecimalEvidence(const std::string& cell) {
  const std::string s = Trim(cell);
  if (!LooksNumeric(s)) return Decimal::kUnknown;
  if (s.find_first_of("eE") != std::string::npos) {
    return s.find('.') != std::string::npos && s.find(',') == std::string::npos ? Decimal::kDot
                                                                                : Decimal::kUnknown;
  }
  const size_t commas = std::count(s.begin(), s.end(), ',');
  const size_t dots = std::count(s.begin(), s.end(), '.');
  if (commas > 0 && dots > 0) {
    return s[s.find_last_of(".,")] == '.' ? Decimal::kDot : Decimal::kComma;
  }
  if (commas >= 2) return Decimal::kDot;  // comma groups digits
  if (dots >= 2) return Decimal::kComma;  // dot groups digits
  const char sep = commas == 1 ? ',' : dots == 1 ? '.' : '\0';
  if (sep == '\0') return Decimal::kUnknown;
  const size_t digits_after = s.size() - s.find(sep) - 1;
  if (digits_after == 3) return Decimal::kUnknown;  // "1,234" / "1.234": grouping or decimal
  return sep == '.' ? Decimal::kDot : Decimal::kComma;
}

inline bool AllDigits(const std::string& s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// Parses `cell` with '.' or ',' as the decimal separator (`decimal`, kUnknown = '.') and the
// other one as the digit-group separator (groups of three). False when not a number.
inline bool ParseGroupedNumber(const std::string& cell, Decimal decimal, double* value) {
  std::string s = Trim(cell);
  if (s.find_first_of("eE") != std::string::npos) {
    return s.find(',') == std::string::npos && ParseFiniteDouble(s, value);
  }
  std::string sign;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    sign = s.substr(0, 1);
    s = s.substr(1);
  }
  const char dec = decimal == Decimal::kComma ? ',' : '.';
  const char group = dec == '.' ? ',' : '.';
  if (std::count(s.begin(), s.end(), dec) > 1) return false;
  const size_t dec_pos = s.find(dec);
  const std::string integer = s.substr(0, dec_pos);
  const std::string fraction = dec_pos == std::string::npos ? "" : s.substr(dec_pos + 1);
  if (!AllDigits(fraction)) return false;
  std::string digits;
  size_t start = 0;
  bool first_group = true;
  while (true) {
    const size_t next = integer.find(group, start);
    const std::string piece =
        integer.substr(start, next == std::string::npos ? std::string::npos : next - start);
    if (!AllDigits(piece)) return false;
    const bool grouped = next != std::string::npos || !first_group;
    if (grouped) {
      if (first_group ? (piece.empty() || piece.size() > 3) : piece.size() != 3) return false;
    }
    digits += piece;
    first_group = false;
    if (next == std::string::npos) break;
    start = next + 1;
  }
  if (digits.empty() && fraction.empty()) return false;
  return ParseFiniteDouble(sign + (digits.empty() ? "0" : digits) + "." + fraction, value);
}

// ----------------------------------------------------------------------------------------
// Where the CSV starts.

enum class HeaderKind { kNcu, kNvprof, kHwPerf };

struct CsvStart {
  HeaderKind kind = HeaderKind::kNcu;
  int64_t line = 0;
};

inline CsvStart FindCsvStart(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, 0, "", "cannot open file");
  std::string text;
  int64_t line = 0;
  int64_t no_kernels_line = 0;  // ncu's "==WARNING== No kernels were profiled."
  while (std::getline(in, text)) {
    ++line;
    if (line == 1) StripUtf8ByteOrderMark(&text);
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (StartsWith(text, "==") && text.find("No kernels were profiled") != std::string::npos)
      no_kernels_line = line;
    if (StartsWith(text, "\"ID\",")) return {HeaderKind::kNcu, line};
    if (StartsWith(text, "\"Device\",\"Kernel\",")) return {HeaderKind::kNvprof, line};
    if (StartsWith(text, "Benchmark,Kernel,") || StartsWith(text, "\"Benchmark\",\"Kernel\",")) {
      return {HeaderKind::kHwPerf, line};
    }
  }
  if (no_kernels_line > 0) {
    throw InputError(
        path, no_kernels_line, "",
        "Nsight Compute profiled no kernels ('No kernels were profiled'): the program "
        "launched none that its filters (--nvtx-include, --kernel-name, ...) let through");
  }
  throw InputError(path, 0, "",
                   "no profiler CSV found: expected a header line starting with \"ID\", (Nsight "
                   "Compute --csv), \"Device\",\"Kernel\", (nvprof --csv) or Benchmark,Kernel, "
                   "(AccelWattch hw_perf.csv)");
}

// The CSV part of a counter export: the header, then data rows, skipping tool messages
// ("==PROF== ...") and repeated headers.
class CounterCsv {
 public:
  CounterCsv(const std::string& path, const CsvStart& start) : reader_(path) {
    std::vector<std::string> fields;
    while (reader_.Next(&fields)) {
      if (reader_.line() < start.line) continue;
      if (!fields.empty()) StripUtf8ByteOrderMark(&fields[0]);
      const char* first = start.kind == HeaderKind::kNcu      ? "ID"
                          : start.kind == HeaderKind::kNvprof ? "Device"
                                                              : "Benchmark";
      if (reader_.line() != start.line || fields.empty() || fields[0] != first) {
        reader_.Fail("", fmt::format("the CSV header on line {} is hidden inside a quoted field "
                                     "that starts before it (an unbalanced '\"' in the text "
                                     "before the CSV?); remove that text or write the profiler "
                                     "output with --log-file",
                                     start.line));
      }
      header_ = fields;
      header_line_ = reader_.line();
      return;
    }
    throw InputError(path, start.line, "", "the CSV header line could not be read");
  }

  const std::vector<std::string>& header() const { return header_; }
  int64_t header_line() const { return header_line_; }
  CsvReader& reader() { return reader_; }

  // Index of column `name`, or -1.
  int Column(const std::string& name) const {
    for (size_t j = 0; j < header_.size(); ++j) {
      if (header_[j] == name) return static_cast<int>(j);
    }
    return -1;
  }
  int RequireColumn(const std::string& name) {
    const int j = Column(name);
    if (j < 0) {
      throw InputError(reader_.path(), header_line_, name,
                       fmt::format("missing column \"{}\" in the header", name));
    }
    return j;
  }

  // Next data row with as many fields as the header; false at the end of the file.
  bool Next(std::vector<std::string>* fields) {
    while (reader_.Next(fields)) {
      if (!fields->empty() && StartsWith((*fields)[0], "==")) continue;  // tool message
      if (*fields == header_) continue;  // the header again (files appended with >>)
      if (fields->size() != header_.size()) {
        reader_.Fail("", fmt::format("{} row: expected {} fields as in the header on line {}, "
                                     "got {}",
                                     fields->size() < header_.size() ? "truncated" : "overlong",
                                     header_.size(), header_line_, fields->size()));
      }
      return true;
    }
    return false;
  }

 private:
  CsvReader reader_;
  std::vector<std::string> header_;
  int64_t header_line_ = 0;
};

// ----------------------------------------------------------------------------------------
// Aggregation over launches.

struct MetricAccumulator {
  double mean = 0.0;
  double weight = 0.0;  // launches (or invocations) contributing
  std::string base;     // kind of quantity, from the unit
  int64_t line = 0;     // first line with a value
};

struct KernelAccumulator {
  KernelCounters record;
  std::map<std::string, MetricAccumulator> metrics;
  std::set<std::string> launch_keys;
  int rows = 0;
};

// The decimal separator of a file, decided from all its values (see counters.h).
class DecimalDetector {
 public:
  void Observe(const std::string& cell, int64_t line) {
    const Decimal d = DecimalEvidence(cell);
    if (d == Decimal::kDot && dot_line_ == 0) {
      dot_line_ = line;
      dot_example_ = Trim(cell);
    } else if (d == Decimal::kComma && comma_line_ == 0) {
      comma_line_ = line;
      comma_example_ = Trim(cell);
    }
  }
  Decimal Decide(const std::string& path, const std::string& field) const {
    if (dot_line_ > 0 && comma_line_ > 0) {
      throw InputError(
          path, std::max(dot_line_, comma_line_), field,
          fmt::format("inconsistent decimal separators: line {} has '{}' (decimal point '.') "
                      "but line {} has '{}' (decimal comma ',')",
                      dot_line_, dot_example_, comma_line_, comma_example_));
    }
    return comma_line_ > 0 ? Decimal::kComma : Decimal::kDot;
  }

 private:
  int64_t dot_line_ = 0, comma_line_ = 0;
  std::string dot_example_, comma_example_;
};

class CounterTable {
 public:
  explicit CounterTable(std::string path) : path_(std::move(path)) {}

  KernelAccumulator& Kernel(const std::string& benchmark, const std::string& kernel, int64_t line) {
    const std::string key = benchmark + '\x1f' + kernel;
    auto it = index_.find(key);
    if (it == index_.end()) {
      it = index_.emplace(key, kernels_.size()).first;
      kernels_.emplace_back();
      KernelCounters& r = kernels_.back().record;
      r.kernel = kernel;
      r.benchmark = benchmark;
      r.path = path_;
      r.line = line;
    }
    return kernels_[it->second];
  }

  // Adds one value (already in base units) of `metric` with weight `weight`.
  void Add(KernelAccumulator* k, const std::string& metric, double value, double weight,
           const std::string& base, CsvReader& reader, const std::string& unit_field,
           const std::string& unit_text) {
    MetricAccumulator& m = k->metrics[metric];
    if (m.weight == 0.0) {
      m.base = base;
      m.line = reader.line();
    } else if (m.base != base) {
      reader.Fail(unit_field, fmt::format("metric '{}' is in '{}' ({}) here but was {} on line {}",
                                          metric, unit_text, base.empty() ? "a plain count" : base,
                                          m.base.empty() ? "a plain count" : m.base, m.line));
    }
    m.weight += weight;
    m.mean += weight * (value - m.mean) / m.weight;  // exact for identical values
    numeric_lines_.emplace(metric, reader.line());
  }

  // A non-numeric value of a metric without a unit: a text attribute, left out.
  void AddText(const std::string& metric, const std::string& text, const std::string& field,
               int64_t line) {
    text_cells_.emplace(metric, TextCell{text, field, line});
  }

  // Final records; launches from `launches_of`; each record's metric kinds in `bases` when
  // given.
  std::vector<KernelCounters> Finish(
      const std::function<int(const KernelAccumulator&)>& launches_of,
      std::vector<std::map<std::string, std::string>>* bases = nullptr) {
    for (const auto& [metric, cell] : text_cells_) {
      const auto numeric = numeric_lines_.find(metric);
      if (numeric == numeric_lines_.end()) continue;
      throw InputError(path_, cell.line, cell.field,
                       fmt::format("expected a number for metric '{}', got '{}' (the metric is "
                                   "numeric on line {})",
                                   metric, cell.text, numeric->second));
    }
    std::vector<KernelCounters> out;
    out.reserve(kernels_.size());
    for (KernelAccumulator& k : kernels_) {
      if (bases != nullptr) bases->emplace_back();
      for (const auto& [name, m] : k.metrics) {
        if (m.weight == 0.0) continue;
        k.record.metrics[name] = m.mean;
        if (bases != nullptr) bases->back()[name] = m.base;
      }
      k.record.launches = launches_of(k);
      out.push_back(std::move(k.record));
    }
    return out;
  }

  bool empty() const { return kernels_.empty(); }

 private:
  struct TextCell {
    std::string text;
    std::string field;
    int64_t line;
  };
  std::string path_;
  std::vector<KernelAccumulator> kernels_;
  std::map<std::string, size_t> index_;
  std::map<std::string, int64_t> numeric_lines_;  // metric -> first line with a number
  std::map<std::string, TextCell> text_cells_;    // metric -> first text value
};

// Nsight Compute (counters_ncu.cc): the details table (one row per launch and metric) and the
// raw table (one row per launch), each launch with its counters.
std::vector<CounterLaunch> ReadNcuDetailsLaunches(const std::string& path, const CsvStart& start);
std::vector<CounterLaunch> ReadNcuRawLaunches(const std::string& path, const CsvStart& start);
// The raw table's launches one by one (of the kernels in `keep`, all when null).
void StreamNcuRawLaunches(const std::string& path, const CsvStart& start,
                          const std::set<std::string>* keep,
                          const std::function<void(CounterLaunch&&)>& sink);
// "(x, y, z)".
std::string Dim3Text(const std::array<int64_t, 3>& d);

// nvprof --metrics and AccelWattch's hw_perf.csv (counters_nvprof.cc): one record per kernel,
// with each metric's base unit in `bases`.
std::vector<KernelCounters> ReadNvprof(const std::string& path, const CsvStart& start,
                                       std::vector<std::map<std::string, std::string>>* bases);
std::vector<KernelCounters> ReadHwPerf(const std::string& path, const CsvStart& start,
                                       std::vector<std::map<std::string, std::string>>* bases);

// ReadCounters for Nsight Compute: the launches of each kernel name averaged, provided they
// share one launch configuration; with MixedLaunchConfigs::kSum a kernel launched with several
// is summed (SumCounterLaunches) and its summed counters divided by its launches.
class KernelAverager {
 public:
  explicit KernelAverager(MixedLaunchConfigs mixed) : mixed_(mixed) {}

  void Add(const CounterLaunch& launch) {
    const auto [it, inserted] = index_.emplace(launch.kernel, kernels_.size());
    if (inserted) {
      kernels_.emplace_back(launch.kernel);
      kernels_.back().record.kernel = launch.kernel;
      kernels_.back().record.path = launch.path;
      kernels_.back().record.line = launch.line;
    }
    Kernel& k = kernels_[it->second];
    if (launch.has_launch_config) {
      const auto config = std::make_pair(launch.grid, launch.block);
      if (k.configs.empty()) {
        k.first_config_line = launch.line;
      } else if (k.configs.count(config) == 0 && mixed_ == MixedLaunchConfigs::kError) {
        const auto& first = *k.configs.begin();
        throw InputError(
            launch.path, launch.line, first.first != launch.grid ? "Grid Size" : "Block Size",
            fmt::format("kernel '{}' runs with grid {} and block {} here but with grid {} and "
                        "block {} on line {}: these are different workloads, and averaging "
                        "them by kernel name would mix their counters: give each workload its "
                        "own window and export (wattcal-ingest --capture, one ncu/<workload>.csv "
                        "per workload), or ingest the counters alone (--activity), which sums a "
                        "kernel's launches",
                        launch.kernel, Dim3Text(launch.grid), Dim3Text(launch.block),
                        Dim3Text(first.first), Dim3Text(first.second), k.first_config_line));
      }
      k.configs.insert(config);
    }
    ++k.record.launches;
    k.sum.Add(launch);
    for (const auto& [name, value] : launch.metrics) {
      Mean& m = k.metrics[name];
      m.weight += 1.0;
      m.mean += (value - m.mean) / m.weight;  // exact for identical values
      if (m.base.empty()) {
        const auto b = launch.metric_base.find(name);
        if (b != launch.metric_base.end()) m.base = b->second;
      }
    }
    for (const auto& entry : launch.unknown_units) k.record.unknown_units.insert(entry);
  }

  std::vector<KernelCounters> Finish() {
    std::vector<KernelCounters> out;
    out.reserve(kernels_.size());
    for (Kernel& k : kernels_) {
      if (k.configs.size() > 1) {  // kSum: the kernel's launches summed, counts per launch
        KernelCounters summed = k.sum.Result();
        const double n = static_cast<double>(summed.launches);
        for (auto& [name, value] : summed.metrics) {
          if (IsSummedCounter(name, k.metrics[name].base))
            value /= n;  // per launch, as the averaged kernels
        }
        summed.launch_configs = static_cast<int>(k.configs.size());
        out.push_back(std::move(summed));
        continue;
      }
      for (const auto& [name, m] : k.metrics) k.record.metrics[name] = m.mean;
      out.push_back(std::move(k.record));
    }
    return out;
  }

 private:
  struct Mean {
    double mean = 0.0;
    double weight = 0.0;
    std::string base;
  };
  struct Kernel {
    explicit Kernel(const std::string& name) : sum(name) {}
    KernelCounters record;
    std::map<std::string, Mean> metrics;
    std::set<std::pair<std::array<int64_t, 3>, std::array<int64_t, 3>>> configs;
    int64_t first_config_line = 0;
    CounterLaunchSum sum;
  };
  MixedLaunchConfigs mixed_;
  std::vector<Kernel> kernels_;
  std::map<std::string, size_t> index_;
};

}  // namespace counters_internal
}  // namespace wattcal
