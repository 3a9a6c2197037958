#include "perf/timeline.h"

#include <cmath>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "io/csv_reader.h"
#include "perf/perf_csv.h"
#include "util/errors.h"

namespace wattcal {
namespace {

struct FlagName {
  uint32_t bit;
  const char* name;
};
constexpr FlagName kFlagNames[] = {
    {kFlagLsuRaw, "lsu_raw"},   {kFlagArith, "arith"},
    {kFlagLsqFull, "lsq_full"}, {kFlagFetchStall, "fetch_stall"},
    {kFlagControl, "control"},  {kFlagBankConflict, "bank_conflict"},
};

}  // namespace

std::string CycleFlagsToText(uint32_t flags) {
  std::string text;
  for (const FlagName& f : kFlagNames) {
    if ((flags & f.bit) != 0) text += (text.empty() ? "" : "|") + std::string(f.name);
  }
  return text;
}

bool ParseCycleFlags(const std::string& text, uint32_t* flags, std::string* bad) {
  *flags = 0;
  if (text.empty()) return true;
  std::stringstream tokens(text);
  std::string token;
  while (std::getline(tokens, token, '|')) {
    bool known = false;
    for (const FlagName& f : kFlagNames) {
      if (token == f.name) {
        *flags |= f.bit;
        known = true;
      }
    }
    if (!known) {
      *bad = token;
      return false;
    }
  }
  return true;
}

const char* MissKindName(MissKind kind) {
  switch (kind) {
    case MissKind::kLoad: return "load";
    case MissKind::kFetch: return "fetch";
    case MissKind::kStore: return "store";
  }
  return "?";
}

void Timeline::AppendCycles(int64_t cycles, int issued, uint32_t flags) {
  if (cycles <= 0) return;
  if (!runs.empty() && runs.back().issued == issued && runs.back().flags == flags) {
    runs.back().cycles += cycles;
    return;
  }
  runs.push_back({total_cycles(), cycles, issued, flags});
}

std::string Timeline::Problem() const {
  if (!(std::isfinite(base_mhz) && base_mhz > 0.0)) {
    return fmt::format("base_mhz = {} must be > 0", base_mhz);
  }
  if (issue_width < 1) return fmt::format("issue_width = {} must be >= 1", issue_width);
  if (runs.empty()) return "no cycles (no run rows)";
  int64_t next = 0;
  for (const TimelineRun& r : runs) {
    if (r.first_cycle != next) {
      return fmt::format(
          "the run starting at cycle {} should start at cycle {} (runs must tile "
          "the kernel's cycles in order)",
          r.first_cycle, next);
    }
    if (r.cycles < 1) return fmt::format("the run starting at cycle {} is empty", r.first_cycle);
    if (r.issued < 0 || r.issued > issue_width) {
      return fmt::format("the run starting at cycle {} issued {}, outside [0, issue_width = {}]",
                         r.first_cycle, r.issued, issue_width);
    }
    next += r.cycles;
  }
  for (const std::vector<MemoryMiss>* misses : {&loads, &stores}) {
    for (const MemoryMiss& m : *misses) {
      if (m.start_cycle < 0 || m.end_cycle <= m.start_cycle || m.end_cycle > next) {
        return fmt::format(
            "the {} miss over cycles [{}, {}) must have start >= 0, end > start "
            "and end <= the kernel's {} cycles",
            MissKindName(m.kind), m.start_cycle, m.end_cycle, next);
      }
    }
  }
  return "";
}

namespace {

int64_t ParseCycle(const CsvReader& reader, const std::string& cell, const std::string& field) {
  const double v = reader.ParseNumber(cell, field);
  if (!(v >= 0.0 && v == std::floor(v) && v < 9.0e15)) {
    reader.Fail(field, fmt::format("expected a whole cycle number >= 0, got '{}'", cell));
  }
  return static_cast<int64_t>(v);
}

}  // namespace

std::vector<Timeline> ReadTimelines(const std::string& path) {
  CsvReader reader(path);
  std::vector<std::string> fields;
  if (!reader.Next(&fields)) throw InputError(path, 1, "", "the file is empty");
  const PerfCsvColumns columns(
      reader, fields,
      {"kernel", "base_mhz", "issue_width", "event", "start_cycle", "end_cycle", "issued", "flags"},
      {});
  std::vector<Timeline> timelines;
  std::map<std::string, int64_t> finished;  // kernels whose block has ended -> first line
  while (reader.Next(&fields)) {
    columns.CheckWidth(reader, fields);
    const std::string& kernel = columns.Cell(fields, "kernel");
    if (kernel.empty()) reader.Fail("kernel", "empty kernel name");
    const double base_mhz = columns.FrequencyMhz(reader, fields, "base_mhz");
    const double width = columns.Number(reader, fields, "issue_width");
    if (!(width >= 1.0 && width == std::floor(width) && width <= 64.0)) {
      reader.Fail("issue_width", fmt::format("expected a whole number in [1, 64], got {}", width));
    }
    if (timelines.empty() || timelines.back().kernel != kernel) {
      if (!timelines.empty()) finished[timelines.back().kernel] = timelines.back().line;
      const auto it = finished.find(kernel);
      if (it != finished.end()) {
        reader.Fail("kernel", fmt::format("the rows of kernel '{}' are not contiguous (its block "
                                          "began on line {})",
                                          kernel, it->second));
      }
      Timeline t;
      t.kernel = kernel;
      t.base_mhz = base_mhz;
      t.issue_width = static_cast<int>(width);
      t.line = reader.line();
      timelines.push_back(std::move(t));
    }
    Timeline& t = timelines.back();
    if (base_mhz != t.base_mhz) {
      reader.Fail(columns.Spelling("base_mhz"),
                  fmt::format("base_mhz changes within kernel '{}' ({} on line {}, {} here)",
                              kernel, t.base_mhz, t.line, base_mhz));
    }
    if (static_cast<int>(width) != t.issue_width) {
      reader.Fail("issue_width", fmt::format("issue_width changes within kernel '{}' ({} on line "
                                             "{}, {} here)",
                                             kernel, t.issue_width, t.line, width));
    }
    const std::string& event = columns.Cell(fields, "event");
    const int64_t start = ParseCycle(reader, columns.Cell(fields, "start_cycle"), "start_cycle");
    const int64_t end = ParseCycle(reader, columns.Cell(fields, "end_cycle"), "end_cycle");
    if (end <= start) {
      reader.Fail("end_cycle",
                  fmt::format("end_cycle = {} must exceed start_cycle = {}", end, start));
    }
    const std::string& issued_cell = columns.Cell(fields, "issued");
    const std::string& flags_cell = columns.Cell(fields, "flags");
    if (event == "run") {
      if (start != t.total_cycles()) {
        reader.Fail("start_cycle", fmt::format("run starts at cycle {}, expected {} (runs must "
                                               "tile the kernel's cycles in order)",
                                               start, t.total_cycles()));
      }
      const double issued = reader.ParseNumber(issued_cell, "issued");
      if (!(issued >= 0.0 && issued == std::floor(issued) && issued <= t.issue_width)) {
        reader.Fail("issued",
                    fmt::format("expected a whole number in [0, issue_width = {}], got {}",
                                t.issue_width, issued_cell));
      }
      uint32_t flags = 0;
      std::string bad;
      if (!ParseCycleFlags(flags_cell, &flags, &bad)) {
        reader.Fail("flags", fmt::format("unknown hazard '{}'; expected '|'-separated names among "
                                         "lsu_raw, arith, lsq_full, fetch_stall, control, "
                                         "bank_conflict",
                                         bad));
      }
      t.runs.push_back({start, end - start, static_cast<int>(issued), flags});
    } else if (event == "load" || event == "fetch" || event == "store") {
      if (!issued_cell.empty() || !flags_cell.empty()) {
        reader.Fail(issued_cell.empty() ? "flags" : "issued",
                    "a miss row leaves issued and flags empty");
      }
      MemoryMiss m;
      m.kind = event == "load"    ? MissKind::kLoad
               : event == "fetch" ? MissKind::kFetch
                                  : MissKind::kStore;
      m.start_cycle = start;
      m.end_cycle = end;
      m.line = reader.line();
      (m.kind == MissKind::kStore ? t.stores : t.loads).push_back(m);
    } else {
      reader.Fail("event",
                  fmt::format("unknown event '{}'; expected run, load, fetch or store", event));
    }
  }
  if (timelines.empty()) throw InputError(path, reader.line(), "", "no rows after the header");
  for (const Timeline& t : timelines) {
    if (t.runs.empty()) {
      throw InputError(path, t.line, "event", "kernel '" + t.kernel + "' has no run rows");
    }
    for (const std::vector<MemoryMiss>* misses : {&t.loads, &t.stores}) {
      for (const MemoryMiss& m : *misses) {
        if (m.end_cycle > t.total_cycles()) {
          throw InputError(
              path, m.line, "end_cycle",
              fmt::format("the {} miss ends at cycle {}, after kernel '{}' ends "
                          "(cycle {})",
                          MissKindName(m.kind), m.end_cycle, t.kernel, t.total_cycles()));
        }
      }
    }
  }
  return timelines;
}

std::string TimelinesToCsv(const std::vector<Timeline>& timelines) {
  std::string out = "kernel,base_mhz,issue_width,event,start_cycle,end_cycle,issued,flags\n";
  for (const Timeline& t : timelines) {
    const std::string prefix = PerfCsvField(t.kernel) + "," + PerfCsvNumber(t.base_mhz) + "," +
                               std::to_string(t.issue_width) + ",";
    for (const TimelineRun& r : t.runs) {
      out += prefix + "run," + std::to_string(r.first_cycle) + "," +
             std::to_string(r.first_cycle + r.cycles) + "," + std::to_string(r.issued) + "," +
             CycleFlagsToText(r.flags) + "\n";
    }
    for (const std::vector<MemoryMiss>* misses : {&t.loads, &t.stores}) {
      for (const MemoryMiss& m : *misses) {
        out += prefix + MissKindName(m.kind) + "," + std::to_string(m.start_cycle) + "," +
               std::to_string(m.end_cycle) + ",,\n";
      }
    }
  }
  return out;
}

}  // namespace wattcal
