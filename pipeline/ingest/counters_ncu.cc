// Nsight Compute exports: the details table and the raw table.
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

#include "ingest/internal/counter_cells.h"
#include "ingest/internal/counter_csv.h"
#include "ingest/internal/counter_readers.h"
#include "io/csv_reader.h"
#include "util/errors.h"
#include "util/strings.h"
#include "util/text_input.h"

namespace wattcal {
namespace counters_internal {

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
    if (starts.size() == 1) StripUtf8ByteOrderMark(&text);
    const size_t first = text.find_first_not_of(" \t\r");
    starts.push_back(first == std::string::npos ? LineStart::kBlank
                     : text[first] == '"'       ? LineStart::kQuote
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
  static const std::set<std::string> kRuleColumns = {"Rule Name", "Rule Type", "Rule Description",
                                                     "Estimated Speedup Type", "Estimated Speedup"};
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
  StreamNcuRows(
      path, start,
      [&](size_t p, const NcuPart&, NcuRow& row) {
        if (rows.size() <= p) rows.resize(p + 1);
        rows[p].push_back(std::move(row));
      },
      &headers);
  for (size_t p = 0; p < headers.size() && p < rows.size(); ++p)
    headers[p].rows = std::move(rows[p]);
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
    const std::string piece =
        Trim(inside.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin));
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
                       fmt::format("metric '{}' is in '{}' ({}) here but was {} on line {}", metric,
                                   unit_text, base.empty() ? "a plain count" : base,
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
  std::map<std::string, TextCell> text_cells_;                    // metric -> first text
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
        throw InputError(
            path, row.line, "Metric Name",
            fmt::format("metric '{}' appears twice in launch ID {}{}", metric, f[id_col],
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
void StreamNcuRawLaunches(const std::string& path, const CsvStart& start,
                          const std::set<std::string>* keep,
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
  StreamNcuRows(
      path, start,
      [&](size_t p, const NcuPart& part, NcuRow& row) {
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
            if (keep == nullptr || keep->count(part.header[j]) > 0)
              c.kept.push_back(static_cast<int>(j));
          }
          if (c.metrics.empty()) {
            throw InputError(path, part.header_line, "",
                             "the raw-page header has no metric columns");
          }
          return;
        }
        ++c.rows;
        for (int j : c.metrics) detector.Observe(row.fields[j], row.line);
      },
      &headers);
  if (columns.empty() || columns[0].units_line == 0) {
    throw InputError(path, headers[0].header_line, "",
                     "no rows after the Nsight Compute raw-page header");
  }
  int64_t total = 0;
  for (const Columns& c : columns) total += c.rows;
  if (total == 0)
    throw InputError(path, columns[0].units_line, "", "no kernel rows after the units row");
  const Decimal decimal = detector.Decide(path, "");

  NcuValueChecks checks(path);
  StreamNcuRows(
      path, start,
      [&](size_t p, const NcuPart& part, NcuRow& row) {
        const Columns& c = columns[p];
        if (row.line == c.units_line) return;
        const std::vector<std::string>& f = row.fields;
        if (f[c.kernel].empty())
          throw InputError(path, row.line, "Kernel Name", "empty kernel name");
        CounterLaunch launch;
        launch.kernel = f[c.kernel];
        launch.id = ParseLaunchId(f[c.id], path, row.line);
        launch.path = path;
        launch.line = row.line;
        ReadLaunchConfig(path, part, row, &launch);
        for (int j : c.kept) {
          AddNcuValue(&launch, &checks, part.header[j], c.units[j],
                      c.known[j] ? &c.unit[j] : nullptr, f[j], decimal, row.line, part.header[j],
                      part.header[j]);
        }
        sink(std::move(launch));
      },
      &headers);
  checks.Finish();
}

std::vector<CounterLaunch> ReadNcuRawLaunches(const std::string& path, const CsvStart& start) {
  std::vector<CounterLaunch> launches;
  StreamNcuRawLaunches(path, start, nullptr,
                       [&](CounterLaunch&& l) { launches.push_back(std::move(l)); });
  return launches;
}

}  // namespace counters_internal
}  // namespace wattcal
