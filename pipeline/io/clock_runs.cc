#include "io/clock_runs.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <regex>

#include <fmt/format.h>

#include "io/csv_reader.h"
#include "io/units.h"
#include "util/csv_field.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/strings.h"

namespace wattcal {
namespace {

// A column of the header: its index and the factor to wattcal's unit.
struct RunsColumn {
  int index = -1;
  UnitFactor factor;
  std::string name;
  std::string stem;            // the name without its unit suffix (f_core of f_core_ghz)
  const Unit* unit = nullptr;  // the unit its name gives; nullptr: fixed by the format
  bool found() const { return index >= 0; }
};

// The column named `stem` + "_" + a unit of `dimension` (io/units.h), e.g. f_core_ghz.
RunsColumn FindColumn(const std::vector<std::string>& header, const std::string& stem,
                      Dimension dimension) {
  RunsColumn c;
  for (size_t i = 0; i < header.size(); ++i) {
    if (const Unit* unit = MatchUnitColumn(header[i], stem, dimension)) {
      c.index = static_cast<int>(i);
      c.factor = unit->to_canonical;
      c.name = header[i];
      c.stem = stem;
      c.unit = unit;
      return c;
    }
  }
  return c;
}

// The column named exactly `name` (any case), without a unit.
RunsColumn Named(const std::vector<std::string>& header, const std::string& name) {
  RunsColumn c;
  for (size_t i = 0; i < header.size(); ++i) {
    if (ToLower(header[i]) == name) {
      c.index = static_cast<int>(i);
      c.name = header[i];
      return c;
    }
  }
  return c;
}

struct RunsLayout {
  std::string format;
  RunsColumn workload, requested, clock, power, energy, time;
};

RunsLayout DetectLayout(const CsvReader& reader, const std::vector<std::string>& header) {
  RunsLayout l;
  if (Named(header, "workload").found() && Named(header, "energy").found() &&
      Named(header, "time").found() && Named(header, "avg_freq").found()) {
    l.format = "energaizer";
    l.workload = Named(header, "workload");
    l.clock = Named(header, "avg_freq");
    l.energy = Named(header, "energy");
    l.time = Named(header, "time");
    l.time.factor = FindUnitWord(Dimension::kTime, "ms")->to_canonical;  // ms per iteration
    return l;
  }
  if (Named(header, "application").found() && Named(header, "sm_app_clock").found()) {
    l.format = "nsfcac";
    l.workload = Named(header, "application");
    l.clock = Named(header, "sm_app_clock");
    l.power = Named(header, "power_usage");
    l.time = Named(header, "run_time");
    if (!l.power.found()) reader.Fail("power_usage", "the nsfcac table has no power_usage column");
    return l;
  }
  l.format = "wattcal";
  l.workload = Named(header, "workload");
  l.clock = FindColumn(header, "f_core", Dimension::kFrequency);
  l.requested = FindColumn(header, "f_core_requested", Dimension::kFrequency);
  l.power = FindColumn(header, "power", Dimension::kPower);
  l.energy = FindColumn(header, "energy", Dimension::kEnergy);
  l.time = FindColumn(header, "time", Dimension::kTime);
  if (!l.workload.found() || !l.clock.found() ||
      !(l.power.found() || (l.energy.found() && l.time.found()))) {
    reader.Fail("header",
                "expected a per-run table: workload,f_core_mhz and power_w (or energy_j and "
                "time_s), with units in the names (f_core_ghz, power_mw, energy_mj, time_ms ...); "
                "or EnergAIzer's workload,energy,time,avg_freq; or the nsfcac "
                "application,sm_app_clock,power_usage,run_time");
  }
  return l;
}

// The clock in `cell`, MHz, refused unless it lies in a GPU core clock's range: a value that
// would lie there in another unit of the column's suffix is named with the column to write.
double ParseClock(const CsvReader& reader, const std::string& cell, const RunsColumn& c,
                  const std::string& field) {
  const double written = reader.ParseNumber(cell, field);
  const double mhz = c.factor.Apply(written);
  if (mhz >= kCoreClockMinMhz && mhz <= kCoreClockMaxMhz) {
    return reader.ParseBounded(cell, field, PhysicalQuantity::kFrequency, c.factor);
  }
  std::string hint;
  if (c.unit != nullptr) {
    for (const Unit& u : UnitsOf(Dimension::kFrequency)) {
      const double v = u.to_canonical.Apply(written);
      if (u.alias || &u == c.unit || v < kCoreClockMinMhz || v > kCoreClockMaxMhz) continue;
      hint = fmt::format(": in {} it would be {} MHz; if that is its unit, name the column {}_{}",
                         u.word, v, c.stem, ToLower(u.word));
      break;
    }
  }
  reader.Fail(field, fmt::format("{} MHz is not a GPU core clock (they lie between {} and {} "
                                 "MHz){}",
                                 mhz, kCoreClockMinMhz, kCoreClockMaxMhz, hint));
}

// EnergAIzer's workload cell: <name>_freq<MHz>_iter<N>.csv -> name, MHz. `name` may be `cell`
// itself: the match is read whole before it is written (assigning the name first freed the cell
// the match points into; fuzz_clock_runs found it).
void SplitEnergAIzerName(const CsvReader& reader, const std::string& cell, std::string* name,
                         double* requested_mhz) {
  static const std::regex kName(R"(^(.+)_freq([0-9]+(?:\.[0-9]+)?)_iter[0-9]+(?:\.csv)?$)");
  std::smatch m;
  if (!std::regex_match(cell, m, kName)) {
    reader.Fail("workload", "'" + cell +
                                "' does not end in _freq<MHz>_iter<N>.csv (EnergAIzer's "
                                "name of a run at a locked clock)");
  }
  std::string base = m[1].str();
  *requested_mhz = ParseClock(reader, m[2].str(), RunsColumn(), "workload (_freq)");
  *name = std::move(base);
}

ClockRun ReadRow(const CsvReader& reader, const RunsLayout& l, const std::vector<std::string>& f) {
  auto cell = [&](const RunsColumn& c) -> const std::string& {
    if (static_cast<size_t>(c.index) >= f.size()) {
      reader.Fail(c.name, fmt::format("the row has {} fields, the header names {} as field {}",
                                      f.size(), c.name, c.index + 1));
    }
    return f[static_cast<size_t>(c.index)];
  };
  ClockRun r;
  r.line = reader.line();
  r.path = reader.path();
  r.workload = cell(l.workload);
  if (r.workload.empty()) reader.Fail(l.workload.name, "empty workload name");
  r.f_core_mhz = ParseClock(reader, cell(l.clock), l.clock, l.clock.name);
  r.f_requested_mhz = r.f_core_mhz;
  if (l.format == "energaizer")
    SplitEnergAIzerName(reader, r.workload, &r.workload, &r.f_requested_mhz);
  if (l.requested.found() && !cell(l.requested).empty()) {
    r.f_requested_mhz = ParseClock(reader, cell(l.requested), l.requested, l.requested.name);
  }
  if (l.time.found() && !cell(l.time).empty()) {
    r.time_s =
        reader.ParseBounded(cell(l.time), l.time.name, PhysicalQuantity::kDuration, l.time.factor);
    if (!(r.time_s > 0.0)) reader.Fail(l.time.name, "a run time must be positive");
  }
  if (l.power.found()) {
    r.power_w =
        reader.ParseBounded(cell(l.power), l.power.name, PhysicalQuantity::kPower, l.power.factor);
  } else {
    if (!std::isfinite(r.time_s))
      reader.Fail(l.time.name, "energy without a run time gives no power");
    r.energy_j = reader.ParseBounded(cell(l.energy), l.energy.name, PhysicalQuantity::kEnergy,
                                     l.energy.factor);
    r.power_w = r.energy_j / r.time_s;
    reader.CheckBound(r.power_w, l.energy.name + " / " + l.time.name, PhysicalQuantity::kPower);
  }
  if (!(r.power_w > 0.0))
    reader.Fail(l.power.found() ? l.power.name : l.energy.name, "power must be positive");
  if (std::isfinite(r.time_s)) r.energy_j = r.power_w * r.time_s;
  return r;
}

}  // namespace

std::vector<std::string> ClockRunTable::Workloads() const {
  std::vector<std::string> names;
  for (const ClockRun& r : runs) {
    if (names.empty() || names.back() != r.workload) {
      if (std::find(names.begin(), names.end(), r.workload) == names.end())
        names.push_back(r.workload);
    }
  }
  return names;
}

std::vector<double> ClockRunTable::RequestedClocks() const {
  std::vector<double> clocks;
  for (const ClockRun& r : runs) clocks.push_back(r.f_requested_mhz);
  std::sort(clocks.begin(), clocks.end());
  clocks.erase(std::unique(clocks.begin(), clocks.end()), clocks.end());
  return clocks;
}

ClockRunTable ReadClockRuns(const std::string& path) {
  CsvReader reader(path);
  std::vector<std::string> header;
  if (!reader.Next(&header)) throw InputError(path, 1, "", "empty file: expected a per-run table");
  const RunsLayout layout = DetectLayout(reader, header);
  ClockRunTable table;
  table.path = path;
  table.format = layout.format;
  std::vector<ClockRun> rows;
  std::vector<std::string> fields;
  while (reader.Next(&fields)) rows.push_back(ReadRow(reader, layout, fields));
  if (rows.empty()) throw InputError(path, reader.line(), "", "no rows after the header");

  // Merge repeats, then order: workloads by first appearance, each by requested clock.
  std::map<std::string, size_t> first;  // workload -> order
  std::map<std::pair<std::string, double>, size_t> at;
  std::vector<ClockRun> merged;
  std::vector<std::array<double, 3>> sums;  // power, time, clock
  for (const ClockRun& r : rows) {
    first.emplace(r.workload, first.size());
    const auto key = std::make_pair(r.workload, r.f_requested_mhz);
    const auto it = at.find(key);
    if (it == at.end()) {
      at.emplace(key, merged.size());
      merged.push_back(r);
      sums.push_back({r.power_w, r.time_s, r.f_core_mhz});
      continue;
    }
    ClockRun& m = merged[it->second];
    if (std::isfinite(m.time_s) != std::isfinite(r.time_s)) {
      throw InputError(path, r.line, "time",
                       fmt::format("a repeat of line {} with{} a run time", m.line,
                                   std::isfinite(r.time_s) ? "" : "out"));
    }
    ++m.repeats;
    ++table.merged_repeats;
    table.warnings.push_back(fmt::format(
        "{}:{}: '{}' at {:g} MHz repeats line {}: the runs are averaged ({:.1f} W here, {:.1f} W "
        "there)",
        path, r.line, r.workload, r.f_requested_mhz, m.line, r.power_w, m.power_w));
    LogWarning(table.warnings.back());
    auto& s = sums[it->second];
    s[0] += r.power_w;
    s[1] += r.time_s;
    s[2] += r.f_core_mhz;
  }
  for (size_t i = 0; i < merged.size(); ++i) {
    ClockRun& m = merged[i];
    m.power_w = sums[i][0] / m.repeats;
    m.time_s = sums[i][1] / m.repeats;
    m.f_core_mhz = sums[i][2] / m.repeats;
    m.energy_j = std::isfinite(m.time_s) ? m.power_w * m.time_s : ClockRun::kNaN;
  }
  std::stable_sort(merged.begin(), merged.end(), [&](const ClockRun& a, const ClockRun& b) {
    const size_t fa = first.at(a.workload), fb = first.at(b.workload);
    return fa != fb ? fa < fb : a.f_requested_mhz < b.f_requested_mhz;
  });
  table.has_time = std::all_of(merged.begin(), merged.end(),
                               [](const ClockRun& r) { return std::isfinite(r.time_s); });
  table.runs = std::move(merged);
  return table;
}

ClockRunTable ReadClockRuns(const std::vector<std::string>& paths) {
  if (paths.empty()) throw OptionError("no per-run table given");
  ClockRunTable all = ReadClockRuns(paths.front());
  for (size_t i = 1; i < paths.size(); ++i) {
    const ClockRunTable next = ReadClockRuns(paths[i]);
    for (const std::string& w : next.Workloads()) {
      for (const ClockRun& r : all.runs) {
        if (r.workload == w) {
          const auto it = std::find_if(next.runs.begin(), next.runs.end(),
                                       [&](const ClockRun& x) { return x.workload == w; });
          throw InputError(next.path, it->line, "workload",
                           fmt::format("'{}' is also in {} (line {}): one file per workload", w,
                                       r.path, r.line));
        }
      }
    }
    all.path += " + " + next.path;
    if (all.format != next.format) all.format += "+" + next.format;
    all.runs.insert(all.runs.end(), next.runs.begin(), next.runs.end());
    all.has_time = all.has_time && next.has_time;
    all.merged_repeats += next.merged_repeats;
    all.warnings.insert(all.warnings.end(), next.warnings.begin(), next.warnings.end());
  }
  return all;
}

std::string WriteClockRunsCsv(const ClockRunTable& table) {
  std::string out = "workload,f_core_requested_mhz,f_core_mhz,power_w,time_s,energy_j\n";
  for (const ClockRun& r : table.runs) {
    out += CsvField(r.workload) + "," + CsvNumber(r.f_requested_mhz) + "," +
           CsvNumber(r.f_core_mhz) + "," + CsvNumber(r.power_w) + "," + CsvNumber(r.time_s) + "," +
           CsvNumber(r.energy_j) + "\n";
  }
  return out;
}

}  // namespace wattcal
