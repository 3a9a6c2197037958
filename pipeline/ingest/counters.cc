#include "ingest/counters.h"

#include <fmt/format.h>

#include <algorithm>
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

#include "io/csv_reader.h"
#include "util/errors.h"

namespace wattcal {
namespace {

// ----------------------------------------------------------------------------------------
// Small string helpers.

std::string Trim(const std::string& s) {
  const size_t first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  const size_t last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

std::string ToLower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void StripByteOrderMark(std::string* s) {
  if (StartsWith(*s, "\xEF\xBB\xBF")) s->erase(0, 3);
}

// "n/a" in any case (ncu, nvprof); `empty_is_absent` adds "" and "nan" (pandas' NaN in
// hw_perf.csv).
bool IsAbsent(const std::string& cell, bool empty_is_absent) {
  const std::string lower = ToLower(Trim(cell));
  if (lower == "n/a") return true;
  return empty_is_absent && (lower.empty() || lower == "nan");
}

// ----------------------------------------------------------------------------------------
// Units.

struct UnitPart {
  double multiply = 1.0;
  double divide = 1.0;
  std::string base;  // "byte", "second", "1/second" (hz), "%", "" (count) or a count unit
};

bool ParseUnitPart(const std::string& part, UnitPart* out) {
  *out = UnitPart();
  if (part.empty() || part == "1") return true;  // a plain count
  if (part == "%") {
    out->base = "%";
    return true;
  }
  // Bytes: SI prefixes (ncu's Kbyte = 1000 bytes, nvprof's KB/s likewise), IEC with "i".
  static const std::pair<const char*, double> kBytePrefixes[] = {
      {"", 1.0},
      {"K", 1e3},
      {"k", 1e3},
      {"M", 1e6},
      {"G", 1e9},
      {"T", 1e12},
      {"P", 1e15},
      {"Ki", 1024.0},
      {"Mi", 1024.0 * 1024.0},
      {"Gi", 1024.0 * 1024.0 * 1024.0},
      {"Ti", 1024.0 * 1024.0 * 1024.0 * 1024.0}};
  for (const char* word : {"byte", "bytes", "B"}) {
    if (!EndsWith(part, word)) continue;
    const std::string prefix = part.substr(0, part.size() - std::string(word).size());
    for (const auto& [p, factor] : kBytePrefixes) {
      if (prefix == p) {
        out->multiply = factor;
        out->base = "byte";
        return true;
      }
    }
  }
  // Seconds.
  static const std::pair<const char*, double> kSeconds[] = {
      {"second", 1.0},    {"seconds", 1.0}, {"sec", 1.0},     {"s", 1.0},    {"msecond", 1e3},
      {"msec", 1e3},      {"ms", 1e3},      {"usecond", 1e6}, {"usec", 1e6}, {"us", 1e6},
      {"\xC2\xB5s", 1e6}, {"nsecond", 1e9}, {"nsec", 1e9},    {"ns", 1e9}};
  for (const auto& [word, divisor] : kSeconds) {
    if (part == word) {
      out->divide = divisor;
      out->base = "second";
      return true;
    }
  }
  // Frequencies (per second). "mhz" is mega: millihertz never occurs in these exports.
  static const std::pair<const char*, double> kHertz[] = {
      {"hz", 1.0}, {"khz", 1e3}, {"mhz", 1e6}, {"ghz", 1e9}};
  const std::string lower = ToLower(part);
  for (const auto& [word, factor] : kHertz) {
    if (lower == word) {
      out->multiply = factor;
      out->base = "cycle/second";  // a clock's frequency
      return true;
    }
  }
  // Count units keep their value; plurals ("cycles", "passes") are accepted.
  static const std::set<std::string> kCounts = {
      "cycle",     "inst",        "warp", "thread", "block", "register", "sector", "request",
      "wavefront", "transaction", "flop", "sm",     "pass",  "launch",   "lane"};
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

const char* KnownUnitsText() {
  return "bytes (byte, Kbyte, Mbyte, Gbyte, Tbyte, B, KB, MB, GB, TB, KiB, MiB, GiB), times "
         "(nsecond, usecond, msecond, second, ns, us, ms, s), frequencies (hz, khz, mhz, "
         "ghz), %, counts (\"\", cycle, inst, warp, thread, block, register, sector, "
         "request, wavefront, transaction, flop, sm, pass, launch, lane, ratio) and A/B of these";
}

// ----------------------------------------------------------------------------------------
// Numbers with locale digit grouping.

enum class Decimal { kUnknown, kDot, kComma };

bool LooksNumeric(const std::string& s) {
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
Decimal DecimalEvidence(const std::string& cell) {
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

bool AllDigits(const std::string& s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// Parses `cell` with '.' or ',' as the decimal separator (`decimal`, kUnknown = '.') and the
// other one as the digit-group separator (groups of three). False when not a number.
bool ParseGroupedNumber(const std::string& cell, Decimal decimal, double* value) {
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

CsvStart FindCsvStart(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, 0, "", "cannot open file");
  std::string text;
  int64_t line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (line == 1) StripByteOrderMark(&text);
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (StartsWith(text, "\"ID\",")) return {HeaderKind::kNcu, line};
    if (StartsWith(text, "\"Device\",\"Kernel\",")) return {HeaderKind::kNvprof, line};
    if (StartsWith(text, "Benchmark,Kernel,") || StartsWith(text, "\"Benchmark\",\"Kernel\",")) {
      return {HeaderKind::kHwPerf, line};
    }
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
      if (!fields.empty()) StripByteOrderMark(&fields[0]);
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

  // Final records; launches from `launches_of`.
  std::vector<KernelCounters> Finish(
      const std::function<int(const KernelAccumulator&)>& launches_of) {
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
      for (const auto& [name, m] : k.metrics) {
        if (m.weight > 0.0) k.record.metrics[name] = m.mean;
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

// Parses one ncu value cell with its unit and adds it; handles n/a and text attributes.
void AddNcuValue(CounterTable* table, KernelAccumulator* k, const std::string& metric,
                 const std::string& unit_text, const CounterUnit& unit, const std::string& cell,
                 Decimal decimal, CsvReader& reader, const std::string& value_field,
                 const std::string& unit_field) {
  if (IsAbsent(cell, false)) return;
  double value = 0.0;
  if (!ParseGroupedNumber(cell, decimal, &value)) {
    if (Trim(unit_text).empty()) {
      table->AddText(metric, cell, value_field, reader.line());
      return;
    }
    if (Trim(cell).empty())
      reader.Fail(value_field, fmt::format("empty value of metric '{}'", metric));
    reader.Fail(value_field, fmt::format("expected a number in '{}' for metric '{}', got '{}'",
                                         unit_text, metric, cell));
  }
  table->Add(k, metric, value * unit.multiply / unit.divide, 1.0, unit.base, reader, unit_field,
             unit_text);
}

CounterUnit UnitOrFail(const std::string& text, CsvReader& reader, const std::string& field,
                       const std::string& metric) {
  CounterUnit unit;
  if (!ParseCounterUnit(Trim(text), &unit)) {
    reader.Fail(field, fmt::format("unknown unit '{}' of metric '{}'; known: {}", text, metric,
                                   KnownUnitsText()));
  }
  return unit;
}

// ----------------------------------------------------------------------------------------
// Nsight Compute details page.

std::vector<KernelCounters> ReadNcuDetails(const std::string& path, const CsvStart& start) {
  Decimal decimal = Decimal::kDot;
  {
    CounterCsv csv(path, start);
    const int value_col = csv.RequireColumn("Metric Value");
    DecimalDetector detector;
    std::vector<std::string> f;
    while (csv.Next(&f)) detector.Observe(f[value_col], csv.reader().line());
    decimal = detector.Decide(path, "Metric Value");
  }
  CounterCsv csv(path, start);
  const int id_col = csv.RequireColumn("ID");
  const int kernel_col = csv.RequireColumn("Kernel Name");
  const int metric_col = csv.RequireColumn("Metric Name");
  const int unit_col = csv.RequireColumn("Metric Unit");
  const int value_col = csv.RequireColumn("Metric Value");
  const int pid_col = csv.Column("Process ID");
  const int section_col = csv.Column("Section Name");
  const bool has_rules = csv.Column("Rule Name") >= 0;
  CsvReader& reader = csv.reader();

  CounterTable table(path);
  std::map<std::string, std::string> launch_kernel;           // launch -> kernel name
  std::map<std::string, int64_t> launch_line;                 // launch -> first line
  std::map<std::string, std::set<std::string>> launch_names;  // launch -> metric keys
  std::vector<std::string> f;
  while (csv.Next(&f)) {
    const std::string& metric = f[metric_col];
    if (metric.empty()) {
      if (has_rules) continue;  // a rule's guidance row
      reader.Fail("Metric Name", "empty metric name");
    }
    const std::string& kernel = f[kernel_col];
    if (kernel.empty()) reader.Fail("Kernel Name", "empty kernel name");
    if (f[id_col].empty()) reader.Fail("ID", "empty launch ID");
    const std::string launch = (pid_col >= 0 ? f[pid_col] : "") + '\x1f' + f[id_col];
    const auto [it, inserted] = launch_kernel.emplace(launch, kernel);
    if (inserted) {
      launch_line[launch] = reader.line();
    } else if (it->second != kernel) {
      reader.Fail("Kernel Name", fmt::format("launch ID {} is kernel '{}' here but '{}' on line {}",
                                             f[id_col], kernel, it->second, launch_line[launch]));
    }
    KernelAccumulator& k = table.Kernel("", kernel, reader.line());
    k.launch_keys.insert(launch);
    // Keys used in this launch, and (section, name) pairs marked by a leading '\x1e'.
    std::set<std::string>& seen = launch_names[launch];
    const std::string section = section_col >= 0 ? f[section_col] : "";
    if (!seen.insert('\x1e' + section + '\x1f' + metric).second) {
      reader.Fail("Metric Name",
                  fmt::format("metric '{}' appears twice in launch ID {}{}", metric, f[id_col],
                              section.empty() ? "" : " section '" + section + "'"));
    }
    std::string key = metric;
    if (!seen.insert(key).second) {
      key = section + "/" + metric;
      if (!seen.insert(key).second) {
        reader.Fail("Metric Name", fmt::format("metric '{}' of section '{}' appears twice in "
                                               "launch ID {}",
                                               metric, section, f[id_col]));
      }
    }
    const CounterUnit unit = UnitOrFail(f[unit_col], reader, "Metric Unit", key);
    AddNcuValue(&table, &k, key, f[unit_col], unit, f[value_col], decimal, reader, "Metric Value",
                "Metric Unit");
  }
  if (table.empty()) {
    throw InputError(path, csv.header_line(), "", "no metric rows after the Nsight Compute header");
  }
  return table.Finish(
      [](const KernelAccumulator& k) { return static_cast<int>(k.launch_keys.size()); });
}

// ----------------------------------------------------------------------------------------
// Nsight Compute raw page.

bool IsNcuLeadingColumn(const std::string& name) {
  static const std::set<std::string> kLeading = {
      "ID",          "Process ID", "Process Name", "Host Name",     "Kernel Name",
      "Kernel Time", "Context",    "Stream",       "Block Size",    "Grid Size",
      "Device",      "CC",         "Section Name", "Function Name", "Demangled Name"};
  return kLeading.count(name) > 0 || name.find(':') != std::string::npos;  // NVTX columns
}

std::vector<KernelCounters> ReadNcuRaw(const std::string& path, const CsvStart& start) {
  CounterCsv csv(path, start);
  const int id_col = csv.RequireColumn("ID");
  const int kernel_col = csv.RequireColumn("Kernel Name");
  const std::vector<std::string> header = csv.header();
  CsvReader& reader = csv.reader();
  std::vector<std::string> units;
  if (!csv.Next(&units)) {
    throw InputError(path, csv.header_line(), "",
                     "no rows after the Nsight Compute raw-page header");
  }
  if (!Trim(units[id_col]).empty() || !Trim(units[kernel_col]).empty()) {
    reader.Fail("ID",
                "expected the units row (empty ID and Kernel Name cells) on the line after "
                "the raw-page header; units are needed to convert the values");
  }
  const int64_t units_line = reader.line();
  std::vector<int> metric_cols;
  std::vector<CounterUnit> unit_of(header.size());
  for (size_t j = 0; j < header.size(); ++j) {
    if (IsNcuLeadingColumn(header[j])) continue;
    if (header[j].empty())
      reader.Fail(fmt::format("column {}", j + 1), "empty metric name in the header");
    unit_of[j] = UnitOrFail(units[j], reader, header[j], header[j]);
    metric_cols.push_back(static_cast<int>(j));
  }
  if (metric_cols.empty()) reader.Fail("", "the raw-page header has no metric columns");

  Decimal decimal = Decimal::kDot;
  {
    CounterCsv pass1(path, start);
    DecimalDetector detector;
    std::vector<std::string> f;
    while (pass1.Next(&f)) {
      if (pass1.reader().line() == units_line) continue;
      for (int j : metric_cols) detector.Observe(f[j], pass1.reader().line());
    }
    decimal = detector.Decide(path, "");
  }

  CounterTable table(path);
  std::vector<std::string> f;
  while (csv.Next(&f)) {
    const std::string& kernel = f[kernel_col];
    if (kernel.empty()) reader.Fail("Kernel Name", "empty kernel name");
    KernelAccumulator& k = table.Kernel("", kernel, reader.line());
    ++k.rows;
    for (int j : metric_cols) {
      AddNcuValue(&table, &k, header[j], units[j], unit_of[j], f[j], decimal, reader, header[j],
                  header[j]);
    }
  }
  if (table.empty()) throw InputError(path, units_line, "", "no kernel rows after the units row");
  return table.Finish([](const KernelAccumulator& k) { return k.rows; });
}

// ----------------------------------------------------------------------------------------
// nvprof.

// nvprof's utilisation levels: "Idle (0)", "Low (1)", "Mid (5)", "High (8)", "Max (10)",
// and ranges "Low (1..3)" (-> midpoint).
bool ParseNvprofLevel(const std::string& cell, double* level) {
  const std::string s = Trim(cell);
  const size_t open = s.find('(');
  if (open == std::string::npos || s.back() != ')') return false;
  const std::string word = ToLower(Trim(s.substr(0, open)));
  static const std::set<std::string> kWords = {"idle", "low", "mid", "high", "max"};
  if (kWords.count(word) == 0) return false;
  const std::string inside = s.substr(open + 1, s.size() - open - 2);
  const size_t dots = inside.find("..");
  double a = 0.0, b = 0.0;
  if (dots == std::string::npos) {
    if (!AllDigits(Trim(inside)) || !ParseFiniteDouble(inside, &a)) return false;
    *level = a;
    return true;
  }
  const std::string lo = Trim(inside.substr(0, dots)), hi = Trim(inside.substr(dots + 2));
  if (!AllDigits(lo) || !AllDigits(hi) || !ParseFiniteDouble(lo, &a) ||
      !ParseFiniteDouble(hi, &b)) {
    return false;
  }
  *level = 0.5 * (a + b);
  return true;
}

// Splits "24.048094GB/s" into "24.048094" and "GB/s".
void SplitUnitSuffix(const std::string& cell, std::string* number, std::string* suffix) {
  const std::string s = Trim(cell);
  size_t cut = s.size();
  while (cut > 0) {
    const char c = s[cut - 1];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '/' || c == '%') {
      --cut;
    } else {
      break;
    }
  }
  // An exponent's 'e' belongs to the number: "1.5e+09" has no suffix.
  *number = Trim(s.substr(0, cut));
  *suffix = s.substr(cut);
}

std::vector<KernelCounters> ReadNvprof(const std::string& path, const CsvStart& start) {
  CounterCsv csv(path, start);
  const int kernel_col = csv.RequireColumn("Kernel");
  const int invocations_col = csv.RequireColumn("Invocations");
  int name_col = csv.Column("Metric Name");
  if (name_col < 0) name_col = csv.Column("Event Name");
  if (name_col < 0) {
    throw InputError(path, csv.header_line(), "Metric Name",
                     "missing column \"Metric Name\" (nvprof --metrics) or \"Event Name\" "
                     "(nvprof --events) in the header");
  }
  const std::string name_field = csv.header()[name_col];
  const int avg_col = csv.RequireColumn("Avg");
  CsvReader& reader = csv.reader();

  Decimal decimal = Decimal::kDot;
  {
    CounterCsv pass1(path, start);
    DecimalDetector detector;
    std::vector<std::string> f;
    std::string number, suffix;
    while (pass1.Next(&f)) {
      SplitUnitSuffix(f[avg_col], &number, &suffix);
      detector.Observe(number, pass1.reader().line());
    }
    decimal = detector.Decide(path, "Avg");
  }

  CounterTable table(path);
  std::vector<std::string> f;
  while (csv.Next(&f)) {
    const std::string& kernel = f[kernel_col];
    if (kernel.empty()) reader.Fail("Kernel", "empty kernel name");
    const std::string& metric = f[name_col];
    if (metric.empty()) reader.Fail(name_field, "empty metric name");
    double invocations = 0.0;
    if (!AllDigits(Trim(f[invocations_col])) ||
        !ParseFiniteDouble(f[invocations_col], &invocations) || invocations < 1.0) {
      reader.Fail("Invocations",
                  fmt::format("expected a positive whole number, got '{}'", f[invocations_col]));
    }
    KernelAccumulator& k = table.Kernel("", kernel, reader.line());
    const std::string& cell = f[avg_col];
    if (IsAbsent(cell, false)) continue;
    double value = 0.0;
    if (ParseNvprofLevel(cell, &value)) {
      table.Add(&k, metric, value, invocations, "level", reader, "Avg", "level");
      continue;
    }
    std::string number, suffix;
    SplitUnitSuffix(cell, &number, &suffix);
    CounterUnit unit;
    if (!ParseCounterUnit(suffix, &unit)) {
      reader.Fail("Avg", fmt::format("unknown unit '{}' in '{}' of metric '{}'; known: {}", suffix,
                                     cell, metric, KnownUnitsText()));
    }
    if (!ParseGroupedNumber(number, decimal, &value)) {
      reader.Fail("Avg", fmt::format("expected a number for metric '{}', got '{}'", metric, cell));
    }
    table.Add(&k, metric, value * unit.multiply / unit.divide, invocations, unit.base, reader,
              "Avg", suffix);
  }
  if (table.empty())
    throw InputError(path, csv.header_line(), "", "no metric rows after the nvprof header");
  return table.Finish([](const KernelAccumulator& k) {
    double most = 0.0;
    for (const auto& entry : k.metrics) most = std::max(most, entry.second.weight);
    return static_cast<int>(most);
  });
}

// ----------------------------------------------------------------------------------------
// AccelWattch hw_perf.csv.

std::vector<KernelCounters> ReadHwPerf(const std::string& path, const CsvStart& start) {
  CounterCsv csv(path, start);
  const std::vector<std::string> header = csv.header();
  CsvReader& reader = csv.reader();
  for (size_t j = 2; j < header.size(); ++j) {
    if (Trim(header[j]).empty()) reader.Fail(fmt::format("column {}", j + 1), "empty column name");
  }
  CounterTable table(path);
  std::vector<std::string> f;
  while (csv.Next(&f)) {
    if (f[0].empty()) reader.Fail("Benchmark", "empty benchmark name");
    if (f[1].empty()) reader.Fail("Kernel", "empty kernel name");
    KernelAccumulator& k = table.Kernel(f[0], f[1], reader.line());
    ++k.rows;
    for (size_t j = 2; j < header.size(); ++j) {
      if (IsAbsent(f[j], true)) continue;
      double value = 0.0;
      if (!ParseFiniteDouble(f[j], &value)) {
        reader.Fail(header[j], fmt::format("expected a number, got '{}'", f[j]));
      }
      table.Add(&k, header[j], value, 1.0, "", reader, header[j], "");
    }
  }
  if (table.empty())
    throw InputError(path, csv.header_line(), "", "no kernel rows after the hw_perf header");
  return table.Finish([](const KernelAccumulator& k) { return k.rows; });
}

// ----------------------------------------------------------------------------------------
// Writing.

std::string Quote(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

// Shortest "%.{15,16,17}g" text that reads back as exactly `value`.
std::string ExactText(double value) {
  char buffer[64];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    double back = 0.0;
    if (ParseFiniteDouble(buffer, &back) && back == value) break;
  }
  return buffer;
}

// A value y in `unit` with y * multiply / divide == value exactly, when one exists near
// value * divide / multiply.
bool ExactInUnit(double value, const CounterUnit& unit, double* y) {
  double candidate = value * unit.divide / unit.multiply;
  double down = candidate, up = candidate;
  for (int step = 0; step < 16; ++step) {
    for (double c : {down, up}) {
      if (c * unit.multiply / unit.divide == value) {
        *y = c;
        return true;
      }
    }
    down = std::nextafter(down, -HUGE_VAL);
    up = std::nextafter(up, HUGE_VAL);
  }
  return false;
}

}  // namespace

const char* CounterFormatName(CounterFormat format) {
  switch (format) {
    case CounterFormat::kNcuDetails:
      return "ncu-details";
    case CounterFormat::kNcuRaw:
      return "ncu-raw";
    case CounterFormat::kNvprofMetrics:
      return "nvprof";
    case CounterFormat::kAccelWattchHwPerf:
      return "accelwattch-hw-perf";
  }
  return "unknown";
}

bool ParseCounterUnit(const std::string& unit, CounterUnit* parsed) {
  const std::string text = Trim(unit);
  const size_t slash = text.find('/');
  UnitPart numerator, denominator;
  if (slash == std::string::npos) {
    if (!ParseUnitPart(text, &numerator)) return false;
    parsed->multiply = numerator.multiply;
    parsed->divide = numerator.divide;
    parsed->base = numerator.base;
    return true;
  }
  if (text.find('/', slash + 1) != std::string::npos) return false;
  const std::string top = Trim(text.substr(0, slash)), bottom = Trim(text.substr(slash + 1));
  if (top.empty() || bottom.empty() || !ParseUnitPart(top, &numerator) ||
      !ParseUnitPart(bottom, &denominator)) {
    return false;
  }
  // Plain counts, percentages and frequencies are never denominators; a frequency is never
  // a numerator.
  if (denominator.base.empty() || denominator.base == "%" || numerator.base == "%" ||
      denominator.base.find('/') != std::string::npos ||
      numerator.base.find('/') != std::string::npos) {
    return false;
  }
  parsed->multiply = numerator.multiply * denominator.divide;
  parsed->divide = numerator.divide * denominator.multiply;
  parsed->base = (numerator.base.empty() ? "1" : numerator.base) + "/" + denominator.base;
  return true;
}

std::vector<KernelCounters> ReadCounters(const std::string& path, CounterFormat* detected) {
  const CsvStart start = FindCsvStart(path);
  CounterFormat format = CounterFormat::kNcuDetails;
  std::vector<KernelCounters> kernels;
  switch (start.kind) {
    case HeaderKind::kNcu: {
      const bool details = CounterCsv(path, start).Column("Metric Name") >= 0;
      format = details ? CounterFormat::kNcuDetails : CounterFormat::kNcuRaw;
      kernels = details ? ReadNcuDetails(path, start) : ReadNcuRaw(path, start);
      break;
    }
    case HeaderKind::kNvprof:
      format = CounterFormat::kNvprofMetrics;
      kernels = ReadNvprof(path, start);
      break;
    case HeaderKind::kHwPerf:
      format = CounterFormat::kAccelWattchHwPerf;
      kernels = ReadHwPerf(path, start);
      break;
  }
  if (detected != nullptr) *detected = format;
  return kernels;
}

std::string NcuBaseUnitForMetric(const std::string& metric) {
  const std::string lower = ToLower(metric);
  if (StartsWith(lower, "gpu__time") || lower == "duration") return "nsecond";
  if (lower.find("pct") != std::string::npos) return "%";
  const bool per_second = EndsWith(lower, ".per_second");
  if (lower.find("bytes") != std::string::npos) return per_second ? "byte/second" : "byte";
  if (lower.find("cycles") != std::string::npos) return per_second ? "cycle/second" : "cycle";
  if (per_second) return "1/second";
  if (lower.find("inst") != std::string::npos) return "inst";
  return "";
}

std::string NcuDetailsCsv(const std::vector<KernelCounters>& kernels) {
  std::string out =
      "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\","
      "\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"Section Name\","
      "\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n";
  int64_t id = 0;
  for (const KernelCounters& k : kernels) {
    if (k.kernel.empty()) throw std::invalid_argument("NcuDetailsCsv: a kernel without a name");
    if (k.metrics.empty()) {
      throw std::invalid_argument("NcuDetailsCsv: kernel '" + k.kernel + "' has no metrics");
    }
    // Each metric's text once, then the same rows for every launch.
    std::vector<std::pair<std::string, std::string>> rows;  // (unit, value text)
    for (const auto& [metric, value] : k.metrics) {
      if (!std::isfinite(value)) {
        throw std::invalid_argument(fmt::format(
            "NcuDetailsCsv: metric '{}' of kernel '{}' is not finite", metric, k.kernel));
      }
      std::string unit_text = NcuBaseUnitForMetric(metric);
      CounterUnit unit;
      ParseCounterUnit(unit_text, &unit);
      double y = value;
      if (!ExactInUnit(value, unit, &y)) {
        // No exact representation in the tool's unit: write the base unit (factor 1).
        unit_text = unit.base == "second" ? "second" : "";
        y = value;
      }
      rows.emplace_back(unit_text, ExactText(y));
    }
    const int launches = std::max(1, k.launches);
    for (int launch = 0; launch < launches; ++launch, ++id) {
      size_t r = 0;
      for (const auto& entry : k.metrics) {
        const auto& [unit_text, value_text] = rows[r++];
        out += fmt::format(
            "\"{}\",\"1\",\"wattcal\",\"localhost\",{},\"1\",\"7\",\"\",\"\",\"0\",\"\","
            "\"Command line profiler metrics\",{},{},{}\n",
            id, Quote(k.kernel), Quote(entry.first), Quote(unit_text), Quote(value_text));
      }
    }
  }
  return out;
}

}  // namespace wattcal
