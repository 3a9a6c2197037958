#include "ingest/kernel_windows.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>

#include "ingest/power_log.h"
#include "io/csv_reader.h"
#include "io/units.h"
#include "util/bounds.h"
#include "util/errors.h"
#include "util/strings.h"

namespace wattcal {
namespace {

std::string LowerTrimmed(const std::string& s) { return ToLower(TrimView(s)); }

// How a time column is written.
struct TimeColumn {
  int index = -1;
  std::string name;            // as in the header
  const Unit* unit = nullptr;  // io/units.h's time unit; nullptr = nvidia-smi style timestamp
  bool is_duration = false;    // duration_<unit>
};

// Recognises `<stem>_<unit>` (a time unit of io/units.h: ns, us, ms, s ...) or the bare
// `<stem>` (timestamps).
bool MatchTime(const std::string& lower, const std::string& stem, TimeColumn* column) {
  if (lower == stem) {
    column->unit = nullptr;
    return true;
  }
  const Unit* unit = MatchUnitColumn(lower, stem, Dimension::kTime);
  if (unit == nullptr) return false;
  column->unit = unit;
  return true;
}

double ReadTimeSeconds(const CsvReader& reader, const std::vector<std::string>& fields,
                       const TimeColumn& column, double utc_offset_h);

// Nanoseconds per `unit` (a time unit no finer than a nanosecond).
int64_t NsPerUnit(const Unit& unit) {
  static const Unit& kNs = *FindUnitWord(Dimension::kTime, "ns");
  return static_cast<int64_t>(FactorBetween(unit, kNs).multiply);
}

// `text` (a plain decimal: sign, digits, '.', digits) x ns_per_unit as an exact integer;
// digits finer than 1 ns are dropped. False for anything else (an exponent).
bool DecimalToNs(const std::string& text, int64_t ns_per_unit, int64_t* ns) {
  size_t i = text.find_first_not_of(" \t");
  if (i == std::string::npos) return false;
  const bool negative = text[i] == '-';
  if (text[i] == '-' || text[i] == '+') ++i;
  int64_t whole = 0;
  int64_t fraction_ns = 0;
  int64_t place = ns_per_unit;
  bool dot = false, digits = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.' && !dot) {
      dot = true;
    } else if (c >= '0' && c <= '9') {
      digits = true;
      if (!dot) {
        if (whole > 922337203685477LL) return false;  // beyond any bounded time
        whole = whole * 10 + (c - '0');
      } else if (place >= 10) {
        place /= 10;
        fraction_ns += (c - '0') * place;
      }
    } else {
      break;
    }
  }
  if (!digits || text.find_first_not_of(" \t\r", i) != std::string::npos) return false;
  if (whole > INT64_MAX / ns_per_unit) return false;
  *ns = whole * ns_per_unit + fraction_ns;
  if (negative) *ns = -*ns;
  return true;
}

// Reads one time cell: seconds (checked against the time bound) and exact nanoseconds.
double ReadTime(const CsvReader& reader, const std::vector<std::string>& fields,
                const TimeColumn& column, double utc_offset_h, int64_t* ns) {
  const std::string& cell = fields[column.index];
  const double t = ReadTimeSeconds(reader, fields, column, utc_offset_h);
  reader.CheckBound(t, column.name, PhysicalQuantity::kTime);
  if (column.unit == nullptr) {
    // Whole seconds from the timestamp, the fraction's digits exactly from the text.
    const size_t colon = cell.rfind(':');
    const size_t dot = colon == std::string::npos ? std::string::npos : cell.find('.', colon);
    int64_t fraction_ns = 0;
    if (dot != std::string::npos) {
      DecimalToNs("0" + cell.substr(dot), 1000000000, &fraction_ns);
    }
    const double offset_s = utc_offset_h * 3600.0;
    const int64_t whole_s = std::llround(t + offset_s - static_cast<double>(fraction_ns) * 1e-9);
    *ns = whole_s * 1000000000 + fraction_ns - std::llround(offset_s * 1e9);
  } else if (!DecimalToNs(cell, NsPerUnit(*column.unit), ns)) {
    *ns = std::llround(t * 1e9);  // an exponent: as exact as the double
  }
  return t;
}

double ReadTimeSeconds(const CsvReader& reader, const std::vector<std::string>& fields,
                       const TimeColumn& column, double utc_offset_h) {
  const std::string& cell = fields[column.index];
  if (column.unit == nullptr) {
    double t = 0.0;
    if (!ParseSmiTimestamp(cell.data(), cell.size(), &t)) {
      double number = 0.0;
      if (ParseFiniteDouble(cell, &number)) {
        reader.Fail(column.name,
                    fmt::format("'{}' is a number but the column has no unit: name it {}_us, "
                                "{}_ms or {}_s",
                                cell, column.name, column.name, column.name));
      }
      reader.Fail(column.name,
                  fmt::format("expected a timestamp YYYY/MM/DD HH:MM:SS.mmm, got '{}'", cell));
    }
    return t - utc_offset_h * 3600.0;
  }
  return column.unit->to_canonical.Apply(reader.ParseNumber(cell, column.name));
}

}  // namespace

namespace {

// `ns` when it agrees with `s` to 1 us (the double was not moved since reading), else `s` in ns.
int64_t Consistent(int64_t ns, double s) {
  if (std::fabs(static_cast<double>(ns) * 1e-9 - s) <= 1e-6) return ns;
  return std::llround(s * 1e9);
}

}  // namespace

int64_t StartNs(const KernelWindow& w) { return Consistent(w.start_ns, w.start_s); }
int64_t EndNs(const KernelWindow& w) { return Consistent(w.end_ns, w.end_s); }
double DurationS(const KernelWindow& w) {
  // A division, not x 1e-9 (inexact): 1000 ns gives exactly the double nearest 1e-6.
  return static_cast<double>(EndNs(w) - StartNs(w)) / 1e9;
}

void DelayWindowStart(KernelWindow* w, double delay_s) {
  w->start_ns = StartNs(*w) + std::llround(delay_s * 1e9);
  w->end_ns = EndNs(*w);
  w->start_s += delay_s;
}

namespace {

// The columns of a kernel windows file (-1: absent); `end` may be a duration.
struct WindowColumns {
  int kernel = -1;
  int launches = -1, blocks = -1, threads = -1, steps = -1;
  int mark = -1;
  TimeColumn start, end;
};

// The columns the header names; a column named twice, or a required one missing, is refused.
WindowColumns FindWindowColumns(const CsvReader& reader, const std::vector<std::string>& header,
                                const std::string& path, int64_t header_line) {
  WindowColumns c;
  for (size_t i = 0; i < header.size(); ++i) {
    const std::string lower = LowerTrimmed(header[i]);
    TimeColumn t;
    t.index = static_cast<int>(i);
    t.name = header[i];
    if (lower == "kernel" || lower == "name" || lower == "kernel_name") {
      if (c.kernel >= 0) reader.Fail(header[i], "a second kernel name column");
      c.kernel = static_cast<int>(i);
    } else if (lower == "launches" || lower == "blocks" || lower == "threads" || lower == "steps") {
      int& column = lower == "launches"  ? c.launches
                    : lower == "blocks"  ? c.blocks
                    : lower == "threads" ? c.threads
                                         : c.steps;
      if (column >= 0) reader.Fail(header[i], fmt::format("a second {} column", lower));
      column = static_cast<int>(i);
    } else if (lower == "mark") {
      if (c.mark >= 0) reader.Fail(header[i], "a second mark column");
      c.mark = static_cast<int>(i);
    } else if (MatchTime(lower, "start", &t)) {
      if (c.start.index >= 0) {
        reader.Fail(header[i],
                    fmt::format("a second start column (the first is '{}')", c.start.name));
      }
      c.start = t;
    } else if (MatchTime(lower, "end", &t)) {
      if (c.end.index >= 0) {
        reader.Fail(header[i], fmt::format("a second end column (the first is '{}')", c.end.name));
      }
      c.end = t;
    } else if (MatchTime(lower, "duration", &t) && t.unit != nullptr) {
      if (c.end.index >= 0) {
        reader.Fail(header[i], fmt::format("both an end and a duration column (the first is '{}')",
                                           c.end.name));
      }
      t.is_duration = true;
      c.end = t;
    }
  }
  std::vector<std::string> missing;
  if (c.kernel < 0) missing.push_back("kernel");
  if (c.start.index < 0) missing.push_back("start_us (or start_ns, start_ms, start_s, start)");
  if (c.end.index < 0) missing.push_back("end_us (or end_*, duration_*, end)");
  if (!missing.empty()) {
    std::string list;
    for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m;
    throw InputError(path, header_line, "",
                     fmt::format("missing column(s) {}: expected a header like "
                                 "kernel,start_us,end_us",
                                 list));
  }
  return c;
}

// Window w's end from its end or duration column (w's start read already).
void ReadWindowEnd(const CsvReader& reader, const std::vector<std::string>& fields,
                   const TimeColumn& end, double utc_offset_h, KernelWindow* w) {
  if (!end.is_duration) {
    w->end_s = ReadTime(reader, fields, end, utc_offset_h, &w->end_ns);
    return;
  }
  const double duration =
      end.unit->to_canonical.Apply(reader.ParseNumber(fields[end.index], end.name));
  if (duration < 0.0) {
    reader.Fail(end.name, fmt::format("negative duration {}", fields[end.index]));
  }
  reader.CheckBound(duration, end.name, PhysicalQuantity::kDuration);
  int64_t duration_ns = 0;
  if (!DecimalToNs(fields[end.index], NsPerUnit(*end.unit), &duration_ns)) {
    duration_ns = std::llround(duration * 1e9);
  }
  w->end_ns = w->start_ns + duration_ns;
  w->end_s = w->start_s + duration;
}

// Window w's launch, block, thread and step counts, where given.
void ReadWindowCounts(const CsvReader& reader, const std::vector<std::string>& header,
                      const std::vector<std::string>& fields, const WindowColumns& c,
                      KernelWindow* w) {
  for (const auto& [column, target] : {std::pair<int, int64_t*>{c.launches, &w->launches},
                                       std::pair<int, int64_t*>{c.blocks, &w->blocks},
                                       std::pair<int, int64_t*>{c.threads, &w->threads},
                                       std::pair<int, int64_t*>{c.steps, &w->steps}}) {
    if (column < 0 || fields[column].empty()) continue;
    const double value = reader.ParseNumber(fields[column], header[column]);
    // 0 is refused: "no launches" or "a grid of no blocks" measures nothing, and a 0 used to
    // turn the counters' launch-configuration check off. Unknown is an empty cell.
    if (value < 1.0 || value != std::floor(value) || value > 9.0e15) {
      reader.Fail(
          header[column],
          fmt::format("expected a whole number >= 1 (leave the cell empty when unknown), got '{}'",
                      fields[column]));
    }
    *target = static_cast<int64_t>(value);
  }
}

// One row's window; a window that ends before it starts, or has no length, is refused.
KernelWindow ReadWindow(const CsvReader& reader, const std::vector<std::string>& header,
                        const std::vector<std::string>& fields, const WindowColumns& c,
                        double utc_offset_h) {
  KernelWindow w;
  w.line = reader.line();
  w.kernel = fields[c.kernel];
  if (w.kernel.empty()) reader.Fail(header[c.kernel], "empty kernel name");
  w.start_s = ReadTime(reader, fields, c.start, utc_offset_h, &w.start_ns);
  ReadWindowEnd(reader, fields, c.end, utc_offset_h, &w);
  if (w.end_s < w.start_s) {
    reader.Fail(c.end.name, fmt::format("the window ends before it starts ({} < {})",
                                        fields[c.end.index], fields[c.start.index]));
  }
  // A window of no length has no energy to measure: its "power" would be one interpolated
  // reading (24% off on a real log), never a kernel's.
  if (w.end_ns == w.start_ns && w.end_s == w.start_s) {
    reader.Fail(c.end.name, fmt::format("the window has zero length (it ends when it starts, {}): "
                                        "nothing to measure",
                                        fields[c.end.index]));
  }
  reader.CheckBound(DurationS(w), c.end.name, PhysicalQuantity::kDuration);
  ReadWindowCounts(reader, header, fields, c, &w);
  if (c.mark >= 0) w.mark = fields[c.mark];
  return w;
}

// The same window twice (a pasted block, a file concatenated with itself) would count its
// energy twice and narrow the confidence intervals falsely: refused.
void RefuseRepeatedWindows(const std::string& path, const std::vector<KernelWindow>& windows) {
  std::map<std::tuple<std::string, double, double>, int64_t> seen;
  for (const KernelWindow& w : windows) {
    const auto [it, inserted] = seen.emplace(std::make_tuple(w.kernel, w.start_s, w.end_s), w.line);
    if (!inserted) {
      throw InputError(path, w.line, "",
                       fmt::format("window of kernel '{}' repeats line {} (same kernel, start and "
                                   "end): a duplicated window would be counted twice",
                                   w.kernel, it->second));
    }
  }
}

}  // namespace

std::vector<KernelWindow> ReadKernelWindows(const std::string& path, double utc_offset_h) {
  if (!std::isfinite(utc_offset_h)) {
    throw OptionError(fmt::format("utc_offset_h = {} must be finite", utc_offset_h));
  }
  CsvReader::Options csv_options;
  csv_options.comment = '#';
  CsvReader reader(path, csv_options);
  std::vector<std::string> header;
  if (!reader.Next(&header)) {
    throw InputError(path, 0, "",
                     "empty kernel windows file: expected a header kernel,start_us,end_us");
  }
  const int64_t header_line = reader.line();
  const WindowColumns columns = FindWindowColumns(reader, header, path, header_line);
  std::vector<KernelWindow> windows;
  std::vector<std::string> fields;
  while (reader.Next(&fields)) {
    if (fields.size() != header.size()) {
      reader.Fail("", fmt::format("{} fields, but the header on line {} has {}", fields.size(),
                                  header_line, header.size()));
    }
    windows.push_back(ReadWindow(reader, header, fields, columns, utc_offset_h));
  }
  if (windows.empty()) {
    throw InputError(path, header_line, "", "no kernel windows after the header");
  }
  RefuseRepeatedWindows(path, windows);
  return windows;
}

}  // namespace wattcal
