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
#include "util/strings.h"

namespace wattcal {
namespace {

// ----------------------------------------------------------------------------------------
// Small string helpers.

void StripByteOrderMark(std::string* s) {
  if (StartsWith(*s, "\xEF\xBB\xBF")) s->erase(0, 3);
}

// "n/a" in any case (ncu, nvprof) and "no data" (ncu 2025.3); `empty_is_absent` adds "" and "nan" (pandas' NaN in
// hw_perf.csv).
bool IsAbsent(const std::string& cell, bool empty_is_absent) {
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
  // "cluster" (thread-block clusters, launch__cluster_max_active), "sm" (ncu's "SM",
  // launch__sm_count) and "block" are in ncu 2025.3 raw pages.
  static const std::set<std::string> kCounts = {
      "cycle", "inst",   "warp",   "thread", "block",     "cluster",     "register",
      "sector", "request", "wavefront", "transaction", "flop", "sm", "pass", "launch", "lane"};
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
         "ghz), %, counts (\"\", cycle, inst, warp, thread, block, cluster, register, sector, "
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
  int64_t no_kernels_line = 0;  // ncu's "==WARNING== No kernels were profiled."
  while (std::getline(in, text)) {
    ++line;
    if (line == 1) StripByteOrderMark(&text);
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (StartsWith(text, "==") && text.find("No kernels were profiled") != std::string::npos) no_kernels_line = line;
    if (StartsWith(text, "\"ID\",")) return {HeaderKind::kNcu, line};
    if (StartsWith(text, "\"Device\",\"Kernel\",")) return {HeaderKind::kNvprof, line};
    if (StartsWith(text, "Benchmark,Kernel,") || StartsWith(text, "\"Benchmark\",\"Kernel\",")) {
      return {HeaderKind::kHwPerf, line};
    }
  }
  if (no_kernels_line > 0) {
    throw InputError(path, no_kernels_line, "",
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

// ----------------------------------------------------------------------------------------
// Nsight Compute: the table, read in parts (one per header line: appended exports).

// A launch ID: a whole number.
bool IsLaunchId(const std::string& cell) { return !cell.empty() && AllDigits(cell); }

// What a physical line starts with, to tell rows of the table (every field quoted) from the
// application's output and the tool's messages.
enum class LineStart : char { kBlank, kQuote, kOther };

std::vector<LineStart> ScanLineStarts(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, 0, "", "cannot open file");
  std::vector<LineStart> starts(1, LineStart::kBlank);  // index = line number; 0 unused
  std::string text;
  while (std::getline(in, text)) {
    if (starts.size() == 1) StripByteOrderMark(&text);
    const size_t first = text.find_first_not_of(" \t\r");
    starts.push_back(first == std::string::npos ? LineStart::kBlank
                     : text[first] == '"'        ? LineStart::kQuote
                                                 : LineStart::kOther);
  }
  return starts;
}

struct NcuRow {
  int64_t line = 0;
  std::vector<std::string> fields;  // as many as the part's header
};

struct NcuPart {
  int64_t header_line = 0;
  std::vector<std::string> header;
  std::vector<NcuRow> rows;

  int Column(const std::string& name) const {
    for (size_t j = 0; j < header.size(); ++j) {
      if (header[j] == name) return static_cast<int>(j);
    }
    return -1;
  }
  int RequireColumn(const std::string& path, const std::string& name) const {
    const int j = Column(name);
    if (j < 0) {
      throw InputError(path, header_line, name,
                       fmt::format("missing column \"{}\" in the header", name));
    }
    return j;
  }
};

// True when the columns of `header` from `present` on are all rule columns, which ncu 2025.3
// leaves out of metric rows ("...,"Metric Value",").
bool OnlyRuleColumnsMissing(const std::vector<std::string>& header, size_t present) {
  static const std::set<std::string> kRuleColumns = {
      "Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type",
      "Estimated Speedup"};
  if (present == 0 || present >= header.size()) return false;
  for (size_t j = present; j < header.size(); ++j) {
    if (kRuleColumns.count(header[j]) == 0) return false;
  }
  return true;
}

// The rows of a Nsight Compute CSV (counters.h: "Nsight Compute rows", "Appended exports"), in
// file order, one at a time: `on_row(part_index, part, row)` with the part's header (`part`'s
// rows stay empty: nothing is kept, so memory is bounded by one row).
void StreamNcuRows(const std::string& path, const CsvStart& start,
                   const std::function<void(size_t, const NcuPart&, NcuRow&)>& on_row,
                   std::vector<NcuPart>* headers) {
  const std::vector<LineStart> starts = ScanLineStarts(path);
  const auto start_of = [&starts](int64_t line) {
    return line < static_cast<int64_t>(starts.size()) ? starts[line] : LineStart::kOther;
  };
  CounterCsv csv(path, start);
  CsvReader& reader = csv.reader();
  std::vector<NcuPart>& parts = *headers;
  parts.assign(1, NcuPart());
  parts[0].header_line = csv.header_line();
  parts[0].header = csv.header();
  // A line skipped as not a row must not have opened a quoted field that ran over the lines
  // after it: those would be rows lost without a word.
  int64_t skipped = 0;
  const auto check_skipped = [&](int64_t next_line) {
    if (skipped == 0) return;
    for (int64_t l = skipped + 1; l < next_line && l < static_cast<int64_t>(starts.size()); ++l) {
      if (starts[l] == LineStart::kBlank) continue;
      throw InputError(path, skipped, "",
                       fmt::format("this line is not a row of the Nsight Compute table, and a "
                                   "'\"' in it opens a field that runs over line {} and after; "
                                   "remove the line or write the profiler output with "
                                   "--log-file",
                                   l));
    }
    skipped = 0;
  };
  std::vector<std::string> fields;
  while (reader.Next(&fields)) {
    const int64_t line = reader.line();
    check_skipped(line);
    if (start_of(line) != LineStart::kQuote) {  // application output, ==PROF== messages
      skipped = line;
      continue;
    }
    if (!fields.empty() && fields[0].find('\n') != std::string::npos) {
      reader.Fail("", fmt::format("a field runs over several lines ('{}'): a '\"' in a line "
                                  "that is not a row of the table (the application's output?) "
                                  "opened it, and it swallows the rows after it; remove that "
                                  "line or write the profiler output with --log-file",
                                  fields[0].substr(0, fields[0].find('\n'))));
    }
    if (!fields.empty() && fields[0] == "ID") {  // the header of another export
      parts.emplace_back();
      parts.back().header_line = line;
      parts.back().header = fields;
      continue;
    }
    NcuPart& part = parts.back();
    const size_t width = part.header.size();
    if (fields.size() != width) {
      const bool table_row = fields.empty() || fields[0].empty() || IsLaunchId(fields[0]);
      if (!table_row) {  // quoted output of the application
        skipped = line;
        continue;
      }
      if (fields.size() < width && OnlyRuleColumnsMissing(part.header, fields.size())) {
        fields.resize(width);
      } else {
        reader.Fail("", fmt::format("{} row: expected {} fields as in the header on line {}, "
                                    "got {}",
                                    fields.size() < width ? "truncated" : "overlong", width,
                                    part.header_line, fields.size()));
      }
    }
    NcuRow row{line, std::move(fields)};
    on_row(parts.size() - 1, part, row);
    fields = std::move(row.fields);
  }
  check_skipped(static_cast<int64_t>(starts.size()));
}

// The same, every row kept (the details page groups rows by launch).
std::vector<NcuPart> ReadNcuParts(const std::string& path, const CsvStart& start) {
  std::vector<NcuPart> headers;
  std::vector<std::vector<NcuRow>> rows;
  StreamNcuRows(path, start, [&](size_t p, const NcuPart&, NcuRow& row) {
    if (rows.size() <= p) rows.resize(p + 1);
    rows[p].push_back(std::move(row));
  }, &headers);
  for (size_t p = 0; p < headers.size() && p < rows.size(); ++p) headers[p].rows = std::move(rows[p]);
  return headers;
}

int64_t ParseLaunchId(const std::string& cell, const std::string& path, int64_t line) {
  if (cell.empty()) throw InputError(path, line, "ID", "empty launch ID");
  if (!IsLaunchId(cell) || cell.size() > 18) {
    throw InputError(path, line, "ID",
                     fmt::format("expected a launch ID (a whole number), got '{}'", cell));
  }
  return std::stoll(cell);
}

// "(1056, 1, 1)" -> {1056, 1, 1}.
bool ParseDim3(const std::string& cell, std::array<int64_t, 3>* dims) {
  const std::string s = Trim(cell);
  if (s.size() < 2 || s.front() != '(' || s.back() != ')') return false;
  const std::string inside = s.substr(1, s.size() - 2);
  size_t begin = 0;
  for (int i = 0; i < 3; ++i) {
    const size_t comma = inside.find(',', begin);
    if ((i < 2) != (comma != std::string::npos)) return false;
    const std::string piece = Trim(inside.substr(begin, comma == std::string::npos
                                                            ? std::string::npos
                                                            : comma - begin));
    if (piece.empty() || piece.size() > 18 || !AllDigits(piece)) return false;
    (*dims)[i] = std::stoll(piece);
    begin = comma + 1;
  }
  return true;
}

// Grid Size and Block Size of `row`, when the part has both columns and they are filled.
void ReadLaunchConfig(const std::string& path, const NcuPart& part, const NcuRow& row,
                      CounterLaunch* launch) {
  const int grid_col = part.Column("Grid Size");
  const int block_col = part.Column("Block Size");
  if (grid_col < 0 || block_col < 0) return;
  const std::string& grid = row.fields[grid_col];
  const std::string& block = row.fields[block_col];
  if (Trim(grid).empty() && Trim(block).empty()) return;
  if (!ParseDim3(grid, &launch->grid)) {
    throw InputError(path, row.line, "Grid Size",
                     fmt::format("expected \"(X, Y, Z)\", got '{}'", grid));
  }
  if (!ParseDim3(block, &launch->block)) {
    throw InputError(path, row.line, "Block Size",
                     fmt::format("expected \"(X, Y, Z)\", got '{}'", block));
  }
  launch->has_launch_config = true;
}

std::string Dim3Text(const std::array<int64_t, 3>& d) {
  return fmt::format("({}, {}, {})", d[0], d[1], d[2]);
}

// The checks that span a whole file: a metric's kind never changes, and a metric that is
// numeric somewhere is never text elsewhere.
class NcuValueChecks {
 public:
  explicit NcuValueChecks(std::string path) : path_(std::move(path)) {}

  void Numeric(const std::string& metric, const std::string& base, const std::string& unit_text,
               int64_t line, const std::string& unit_field) {
    const auto [it, inserted] = kinds_.emplace(metric, std::make_pair(base, line));
    if (!inserted && it->second.first != base) {
      const std::string& was = it->second.first;
      throw InputError(path_, line, unit_field,
                       fmt::format("metric '{}' is in '{}' ({}) here but was {} on line {}",
                                   metric, unit_text, base.empty() ? "a plain count" : base,
                                   was.empty() ? "a plain count" : was, it->second.second));
    }
  }
  void Text(const std::string& metric, const std::string& text, const std::string& field,
            int64_t line) {
    text_cells_.emplace(metric, TextCell{text, field, line});
  }
  void Finish() const {
    for (const auto& [metric, cell] : text_cells_) {
      const auto numeric = kinds_.find(metric);
      if (numeric == kinds_.end()) continue;
      throw InputError(path_, cell.line, cell.field,
                       fmt::format("expected a number for metric '{}', got '{}' (the metric is "
                                   "numeric on line {})",
                                   metric, cell.text, numeric->second.second));
    }
  }

 private:
  struct TextCell {
    std::string text;
    std::string field;
    int64_t line;
  };
  std::string path_;
  std::map<std::string, std::pair<std::string, int64_t>> kinds_;  // metric -> (base, line)
  std::map<std::string, TextCell> text_cells_;                     // metric -> first text
};

// Parses one ncu value cell and stores it in `launch`. `unit` is null when the unit text is
// unknown: the value is then left out and the unit kept. n/a and "no data" are absent; a
// non-number without a unit is a text attribute.
void AddNcuValue(CounterLaunch* launch, NcuValueChecks* checks, const std::string& metric,
                 const std::string& unit_text, const CounterUnit* unit, const std::string& cell,
                 Decimal decimal, int64_t line, const std::string& value_field,
                 const std::string& unit_field) {
  if (IsAbsent(cell, false)) return;
  if (unit == nullptr) {
    launch->unknown_units[metric] = Trim(unit_text);
    return;
  }
  double value = 0.0;
  if (!ParseGroupedNumber(cell, decimal, &value)) {
    if (Trim(unit_text).empty()) {
      checks->Text(metric, cell, value_field, line);
      return;
    }
    if (Trim(cell).empty()) {
      throw InputError(launch->path, line, value_field,
                       fmt::format("empty value of metric '{}'", metric));
    }
    throw InputError(launch->path, line, value_field,
                     fmt::format("expected a number in '{}' for metric '{}', got '{}'", unit_text,
                                 metric, cell));
  }
  checks->Numeric(metric, unit->base, unit_text, line, unit_field);
  launch->metrics[metric] = value * unit->multiply / unit->divide;
  launch->metric_base[metric] = unit->base;
}

// ----------------------------------------------------------------------------------------
// Nsight Compute details page.

std::vector<CounterLaunch> ReadNcuDetailsLaunches(const std::string& path, const CsvStart& start) {
  const std::vector<NcuPart> parts = ReadNcuParts(path, start);
  Decimal decimal = Decimal::kDot;
  {
    DecimalDetector detector;
    for (const NcuPart& part : parts) {
      const int value_col = part.RequireColumn(path, "Metric Value");
      for (const NcuRow& row : part.rows) detector.Observe(row.fields[value_col], row.line);
    }
    decimal = detector.Decide(path, "Metric Value");
  }
  NcuValueChecks checks(path);
  std::vector<CounterLaunch> launches;
  std::vector<std::set<std::string>> launch_names;  // metric keys used in each launch
  std::map<std::string, size_t> launch_index;       // (part, Process ID, ID) -> launch
  for (size_t p = 0; p < parts.size(); ++p) {
    const NcuPart& part = parts[p];
    const int id_col = part.RequireColumn(path, "ID");
    const int kernel_col = part.RequireColumn(path, "Kernel Name");
    const int metric_col = part.RequireColumn(path, "Metric Name");
    const int unit_col = part.RequireColumn(path, "Metric Unit");
    const int value_col = part.RequireColumn(path, "Metric Value");
    const int pid_col = part.Column("Process ID");
    const int section_col = part.Column("Section Name");
    const bool has_rules = part.Column("Rule Name") >= 0;
    for (const NcuRow& row : part.rows) {
      const std::vector<std::string>& f = row.fields;
      const std::string& metric = f[metric_col];
      if (metric.empty()) {
        if (has_rules) continue;  // a rule's guidance row
        throw InputError(path, row.line, "Metric Name", "empty metric name");
      }
      const std::string& kernel = f[kernel_col];
      if (kernel.empty()) throw InputError(path, row.line, "Kernel Name", "empty kernel name");
      const int64_t id = ParseLaunchId(f[id_col], path, row.line);
      const std::string key =
          std::to_string(p) + '\x1f' + (pid_col >= 0 ? f[pid_col] : "") + '\x1f' + f[id_col];
      const auto [it, inserted] = launch_index.emplace(key, launches.size());
      if (inserted) {
        CounterLaunch launch;
        launch.kernel = kernel;
        launch.id = id;
        launch.path = path;
        launch.line = row.line;
        ReadLaunchConfig(path, part, row, &launch);
        launches.push_back(std::move(launch));
        launch_names.emplace_back();
      }
      CounterLaunch& launch = launches[it->second];
      if (launch.kernel != kernel) {
        throw InputError(path, row.line, "Kernel Name",
                         fmt::format("launch ID {} is kernel '{}' here but '{}' on line {}",
                                     f[id_col], kernel, launch.kernel, launch.line));
      }
      // Keys used in this launch, and (section, name) pairs marked by a leading '\x1e'.
      std::set<std::string>& seen = launch_names[it->second];
      const std::string section = section_col >= 0 ? f[section_col] : "";
      if (!seen.insert('\x1e' + section + '\x1f' + metric).second) {
        throw InputError(path, row.line, "Metric Name",
                         fmt::format("metric '{}' appears twice in launch ID {}{}", metric,
                                     f[id_col],
                                     section.empty() ? "" : " section '" + section + "'"));
      }
      std::string name = metric;
      if (!seen.insert(name).second) {
        name = section + "/" + metric;
        if (!seen.insert(name).second) {
          throw InputError(path, row.line, "Metric Name",
                           fmt::format("metric '{}' of section '{}' appears twice in launch ID {}",
                                       metric, section, f[id_col]));
        }
      }
      CounterUnit unit;
      const bool known = ParseCounterUnit(Trim(f[unit_col]), &unit);
      AddNcuValue(&launch, &checks, name, f[unit_col], known ? &unit : nullptr, f[value_col],
                  decimal, row.line, "Metric Value", "Metric Unit");
    }
  }
  if (launches.empty()) {
    throw InputError(path, parts[0].header_line, "",
                     "no metric rows after the Nsight Compute header");
  }
  checks.Finish();
  return launches;
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

// The raw page's launches, in file order, to `sink`, each with the metrics in `keep` only (all
// when null). Two streaming passes: the first reads each part's header and units row and decides
// the decimal separator from every value; the second converts one row at a time. Memory is
// bounded by one row and the metrics kept, not by the launches.
void StreamNcuRawLaunches(const std::string& path, const CsvStart& start, const std::set<std::string>* keep,
                          const std::function<void(CounterLaunch&&)>& sink) {
  // Each part's metric columns and their units (from its units row, the part's first row).
  struct Columns {
    int id = -1;
    int kernel = -1;
    std::vector<int> metrics;  // every metric column (decimal detection)
    std::vector<int> kept;     // those converted
    std::vector<std::string> units;
    std::vector<CounterUnit> unit;  // per header column
    std::vector<bool> known;        // per header column
    int64_t units_line = 0;
    int64_t rows = 0;  // after the units row
  };
  std::vector<Columns> columns;
  std::vector<NcuPart> headers;
  DecimalDetector detector;
  StreamNcuRows(path, start, [&](size_t p, const NcuPart& part, NcuRow& row) {
    if (columns.size() <= p) columns.resize(p + 1);
    Columns& c = columns[p];
    if (c.units_line == 0) {  // the units row
      c.id = part.RequireColumn(path, "ID");
      c.kernel = part.RequireColumn(path, "Kernel Name");
      if (!Trim(row.fields[c.id]).empty() || !Trim(row.fields[c.kernel]).empty()) {
        throw InputError(path, row.line, "ID",
                         "expected the units row (empty ID and Kernel Name cells) on the line "
                         "after the raw-page header; units are needed to convert the values");
      }
      c.units_line = row.line;
      c.units = row.fields;
      c.unit.resize(part.header.size());
      c.known.resize(part.header.size(), false);
      for (size_t j = 0; j < part.header.size(); ++j) {
        if (IsNcuLeadingColumn(part.header[j])) continue;
        if (part.header[j].empty()) {
          throw InputError(path, part.header_line, fmt::format("column {}", j + 1),
                           "empty metric name in the header");
        }
        c.known[j] = ParseCounterUnit(Trim(row.fields[j]), &c.unit[j]);
        c.metrics.push_back(static_cast<int>(j));
        if (keep == nullptr || keep->count(part.header[j]) > 0) c.kept.push_back(static_cast<int>(j));
      }
      if (c.metrics.empty()) {
        throw InputError(path, part.header_line, "", "the raw-page header has no metric columns");
      }
      return;
    }
    ++c.rows;
    for (int j : c.metrics) detector.Observe(row.fields[j], row.line);
  }, &headers);
  if (columns.empty() || columns[0].units_line == 0) {
    throw InputError(path, headers[0].header_line, "", "no rows after the Nsight Compute raw-page header");
  }
  int64_t total = 0;
  for (const Columns& c : columns) total += c.rows;
  if (total == 0) throw InputError(path, columns[0].units_line, "", "no kernel rows after the units row");
  const Decimal decimal = detector.Decide(path, "");

  NcuValueChecks checks(path);
  StreamNcuRows(path, start, [&](size_t p, const NcuPart& part, NcuRow& row) {
    const Columns& c = columns[p];
    if (row.line == c.units_line) return;
    const std::vector<std::string>& f = row.fields;
    if (f[c.kernel].empty()) throw InputError(path, row.line, "Kernel Name", "empty kernel name");
    CounterLaunch launch;
    launch.kernel = f[c.kernel];
    launch.id = ParseLaunchId(f[c.id], path, row.line);
    launch.path = path;
    launch.line = row.line;
    ReadLaunchConfig(path, part, row, &launch);
    for (int j : c.kept) {
      AddNcuValue(&launch, &checks, part.header[j], c.units[j], c.known[j] ? &c.unit[j] : nullptr, f[j], decimal,
                  row.line, part.header[j], part.header[j]);
    }
    sink(std::move(launch));
  }, &headers);
  checks.Finish();
}

std::vector<CounterLaunch> ReadNcuRawLaunches(const std::string& path, const CsvStart& start) {
  std::vector<CounterLaunch> launches;
  StreamNcuRawLaunches(path, start, nullptr, [&](CounterLaunch&& l) { launches.push_back(std::move(l)); });
  return launches;
}

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
                        launch.kernel, Dim3Text(launch.grid), Dim3Text(launch.block), Dim3Text(first.first),
                        Dim3Text(first.second), k.first_config_line));
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
          if (IsSummedCounter(name, k.metrics[name].base)) value /= n;  // per launch, as the averaged kernels
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

std::vector<KernelCounters> ReadNvprof(const std::string& path, const CsvStart& start,
                                       std::vector<std::map<std::string, std::string>>* bases) {
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
  return table.Finish(
      [](const KernelAccumulator& k) {
        double most = 0.0;
        for (const auto& entry : k.metrics) most = std::max(most, entry.second.weight);
        return static_cast<int>(most);
      },
      bases);
}

// ----------------------------------------------------------------------------------------
// AccelWattch hw_perf.csv.

std::vector<KernelCounters> ReadHwPerf(const std::string& path, const CsvStart& start,
                                       std::vector<std::map<std::string, std::string>>* bases) {
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
  return table.Finish([](const KernelAccumulator& k) { return k.rows; }, bases);
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

namespace {

// The launches of a file and its format.
std::vector<CounterLaunch> ReadLaunches(const std::string& path, CounterFormat* format) {
  const CsvStart start = FindCsvStart(path);
  if (start.kind == HeaderKind::kNcu) {
    const bool details = CounterCsv(path, start).Column("Metric Name") >= 0;
    *format = details ? CounterFormat::kNcuDetails : CounterFormat::kNcuRaw;
    return details ? ReadNcuDetailsLaunches(path, start) : ReadNcuRawLaunches(path, start);
  }
  // nvprof and hw_perf.csv: one record per kernel (nvprof) or per (benchmark, kernel).
  std::vector<std::map<std::string, std::string>> bases;
  const bool nvprof = start.kind == HeaderKind::kNvprof;
  *format = nvprof ? CounterFormat::kNvprofMetrics : CounterFormat::kAccelWattchHwPerf;
  std::vector<KernelCounters> records =
      nvprof ? ReadNvprof(path, start, &bases) : ReadHwPerf(path, start, &bases);
  // hw_perf.csv's columns without a unit that are not amounts of work (FORMATS.md §2.4).
  static const std::set<std::string> kHwPerfRatios = {"Pipeline_Duty", "Num_Idle_SMs",
                                                      "Chip Voltage"};
  std::vector<CounterLaunch> launches(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    KernelCounters& r = records[i];
    CounterLaunch& launch = launches[i];
    launch.kernel = std::move(r.kernel);
    launch.benchmark = std::move(r.benchmark);
    launch.path = std::move(r.path);
    launch.line = r.line;
    launch.launches = nvprof ? std::max(1, r.launches) : 1;
    launch.metrics = std::move(r.metrics);
    launch.metric_base = std::move(bases[i]);
    if (!nvprof) {
      for (auto& [name, base] : launch.metric_base) {
        if (kHwPerfRatios.count(name) > 0) base = "ratio";
      }
    }
  }
  return launches;
}

}  // namespace

std::vector<KernelCounters> ReadCounters(const std::string& path, CounterFormat* detected,
                                         MixedLaunchConfigs mixed, const std::set<std::string>* keep) {
  const CsvStart start = FindCsvStart(path);
  CounterFormat format = CounterFormat::kNcuDetails;
  std::vector<KernelCounters> kernels;
  switch (start.kind) {
    case HeaderKind::kNcu:
      kernels = [&] {
        // Launch by launch: memory bounded by the kernel names, not the launches.
        KernelAverager averager(mixed);
        ForEachCounterLaunch(path, keep, [&](CounterLaunch&& l) { averager.Add(l); }, &format);
        return averager.Finish();
      }();
      break;
    case HeaderKind::kNvprof:
      format = CounterFormat::kNvprofMetrics;
      kernels = ReadNvprof(path, start, nullptr);
      break;
    case HeaderKind::kHwPerf:
      format = CounterFormat::kAccelWattchHwPerf;
      kernels = ReadHwPerf(path, start, nullptr);
      break;
  }
  if (detected != nullptr) *detected = format;
  return kernels;
}

void ForEachCounterLaunch(const std::string& path, const std::set<std::string>* keep,
                          const std::function<void(CounterLaunch&&)>& sink, CounterFormat* detected) {
  const CsvStart start = FindCsvStart(path);
  if (start.kind == HeaderKind::kNcu && CounterCsv(path, start).Column("Metric Name") < 0) {
    if (detected != nullptr) *detected = CounterFormat::kNcuRaw;
    StreamNcuRawLaunches(path, start, keep, sink);
    return;
  }
  CounterFormat format = CounterFormat::kNcuDetails;
  for (CounterLaunch& launch : ReadLaunches(path, &format)) {
    if (keep != nullptr) {
      for (auto it = launch.metrics.begin(); it != launch.metrics.end();) {
        if (keep->count(it->first) == 0) {
          launch.metric_base.erase(it->first);
          it = launch.metrics.erase(it);
        } else {
          ++it;
        }
      }
    }
    sink(std::move(launch));
  }
  if (detected != nullptr) *detected = format;
}

std::vector<CounterLaunch> ReadCounterLaunches(const std::string& path, CounterFormat* detected) {
  CounterFormat format = CounterFormat::kNcuDetails;
  std::vector<CounterLaunch> launches = ReadLaunches(path, &format);
  if (detected != nullptr) *detected = format;
  return launches;
}

double LaunchMetric(const CounterLaunch& launch, const std::string& metric) {
  const auto it = launch.metrics.find(metric);
  if (it != launch.metrics.end()) return it->second;
  const auto unknown = launch.unknown_units.find(metric);
  if (unknown != launch.unknown_units.end()) {
    throw InputError(launch.path, launch.line, metric,
                     fmt::format("unknown unit '{}' of launch ID {} ({}), so its value cannot "
                                 "be converted; known units: {}",
                                 unknown->second, launch.id, launch.kernel, KnownUnitsText()));
  }
  throw InputError(launch.path, launch.line, metric,
                   fmt::format("no value in this launch (launch ID {}, {}): the export has no such column, or its cell is n/a", launch.id,
                               launch.kernel));
}

bool IsSummedCounter(const std::string& metric, const std::string& base) {
  if (base.find('/') != std::string::npos || base == "%" || base == "level" || base == "ratio") {
    return false;
  }
  const std::string lower = ToLower(metric);
  if (StartsWith(lower, "device__attribute_") || StartsWith(lower, "launch__")) return false;
  return !(EndsWith(lower, ".ratio") || lower.find(".pct") != std::string::npos ||
           lower.find("per_second") != std::string::npos ||
           lower.find("per_cycle") != std::string::npos ||
           lower.find(" per ") != std::string::npos);
}

CounterLaunchSum::CounterLaunchSum(std::string name) : name_(std::move(name)) {}

void CounterLaunchSum::Add(const CounterLaunch& launch) {
  if (count_ == 0) {
    path_ = launch.path;
    line_ = launch.line;
  }
  // Duration weights: every launch's own, or equal weights when one lacks it (both are kept
  // until the end decides).
  auto it = launch.metrics.find("gpu__time_duration.sum");
  if (it == launch.metrics.end()) it = launch.metrics.find("Duration");
  const bool has_time = it != launch.metrics.end() && it->second > 0.0;
  timed_ = timed_ && has_time;
  const int64_t times = std::max<int64_t>(1, launch.launches);
  count_ += times;
  for (const auto& [metric, value] : launch.metrics) {
    const auto base_it = launch.metric_base.find(metric);
    const std::string base = base_it == launch.metric_base.end() ? "" : base_it->second;
    Total& t = totals_[metric];
    if (!t.seen) {
      t.seen = true;
      t.base = base;
      t.first_line = launch.line;
      t.summed = IsSummedCounter(metric, base);
    } else if (t.base != base) {
      throw InputError(launch.path, launch.line, metric,
                       fmt::format("metric '{}' is {} in this launch but {} in the launch on "
                                   "line {}; launches summed into '{}' must agree",
                                   metric, base.empty() ? "a plain count" : base,
                                   t.base.empty() ? "a plain count" : t.base, t.first_line, name_));
    }
    if (t.summed) {
      t.sum += value * static_cast<double>(times);
      continue;
    }
    const double equal_w = static_cast<double>(times);
    t.equal_weight += equal_w;
    t.equal_mean += (equal_w / t.equal_weight) * (value - t.equal_mean);  // exact for identical values
    if (timed_) {
      const double w = it->second * static_cast<double>(times);
      t.timed_weight += w;
      t.timed_mean += (w / t.timed_weight) * (value - t.timed_mean);
    }
  }
  for (const auto& entry : launch.unknown_units) unknown_units_.insert(entry);
}

KernelCounters CounterLaunchSum::Result() const {
  if (count_ == 0) throw std::invalid_argument("SumCounterLaunches: no launches for '" + name_ + "'");
  KernelCounters out;
  out.kernel = name_;
  out.path = path_;
  out.line = line_;
  out.launches = static_cast<int>(count_);
  out.unknown_units = unknown_units_;
  for (const auto& [metric, t] : totals_) {
    if (out.unknown_units.count(metric) > 0) continue;  // some launches could not be read
    out.metrics[metric] = t.summed ? t.sum : timed_ ? t.timed_mean : t.equal_mean;
  }
  return out;
}

KernelCounters SumCounterLaunches(const std::string& name,
                                  const std::vector<CounterLaunch>& launches) {
  CounterLaunchSum sum(name);
  for (const CounterLaunch& launch : launches) sum.Add(launch);
  return sum.Result();
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
