#include "compare/workload_power.h"

#include <fmt/format.h>

#include <unordered_map>

#include "io/csv_reader.h"
#include "io/units.h"
#include "util/errors.h"
#include "util/strings.h"

namespace wattcal {
namespace {

// The column's power unit (io/units.h), or nullptr when the header has none.
const Unit* PowerUnit(const std::string& header) {
  std::string stem;
  return SplitUnitColumn(header, Dimension::kPower, &stem);
}

std::string JoinHeader(const std::vector<std::string>& header) {
  std::string out;
  for (const std::string& h : header) out += (out.empty() ? "" : ", ") + h;
  return out;
}

// Index of the power column `wanted` in `header` (see ReadWorkloadPower), or throws.
size_t FindPowerColumn(const CsvReader& reader, const std::vector<std::string>& header,
                       const std::string& wanted) {
  if (wanted.empty()) {
    std::vector<std::string> names = {"sim_total_W"};
    for (const Unit& unit : UnitsOf(Dimension::kPower)) {
      if (!unit.alias) names.push_back("power_" + ToLower(unit.word));
    }
    for (const std::string& name : names) {
      for (size_t i = 1; i < header.size(); ++i) {
        if (header[i] == name) return i;
      }
    }
    reader.Fail("header", "no power column: expected sim_total_W or " +
                              UnitColumnList("power", Dimension::kPower) +
                              " (or name one); the header has " + JoinHeader(header));
  }
  std::vector<size_t> matches;
  for (size_t i = 1; i < header.size(); ++i) {
    if (header[i] == wanted) return i;
  }
  for (size_t i = 1; i < header.size(); ++i) {
    if (header[i].size() > wanted.size() && header[i].compare(0, wanted.size(), wanted) == 0 &&
        MatchUnitColumn(header[i], wanted, Dimension::kPower) != nullptr) {
      matches.push_back(i);
    }
  }
  if (matches.size() == 1) return matches.front();
  if (matches.empty()) {
    reader.Fail("header",
                fmt::format("no column \"{}\" (or \"{}_W\", \"{}_mW\"); the header has {}", wanted,
                            wanted, wanted, JoinHeader(header)));
  }
  reader.Fail("header",
              fmt::format("\"{}\" names {} columns ({} and {}); give the full name", wanted,
                          matches.size(), header[matches[0]], header[matches[1]]));
}

}  // namespace

int WorkloadPower::Find(const std::string& workload) const {
  for (size_t i = 0; i < workloads.size(); ++i) {
    if (workloads[i] == workload) return static_cast<int>(i);
  }
  return -1;
}

WorkloadPower ReadWorkloadPower(const std::string& path, const std::string& column) {
  CsvReader::Options csv_options;
  csv_options.comment = '#';
  CsvReader reader(path, csv_options);
  std::vector<std::string> header;
  if (!reader.Next(&header)) throw InputError(path, 0, "", "empty file (expected a CSV header)");
  if (header.empty() || (header[0] != "kernel_id" && header[0] != "kernel" &&
                         header[0] != "workload" && header[0] != "benchmark")) {
    reader.Fail(header.empty() ? "header" : header[0],
                "the first column must name the workload: kernel_id, kernel, workload or "
                "benchmark");
  }
  const size_t col = FindPowerColumn(reader, header, column);
  const Unit* unit = PowerUnit(header[col]);
  if (unit == nullptr) {
    reader.Fail(header[col],
                "the column's unit is not recognised: power columns end in _W "
                "(watts) or another power unit (" +
                    UnitColumnList("", Dimension::kPower) + ")");
  }

  WorkloadPower out;
  out.path = path;
  out.column = header[col];
  std::unordered_map<std::string, int64_t> seen;  // workload -> line
  std::vector<std::string> fields;
  while (reader.Next(&fields)) {
    if (fields.size() != header.size()) {
      reader.Fail("", fmt::format("{} fields, the header has {}", fields.size(), header.size()));
    }
    const std::string& workload = fields[0];
    if (workload.empty()) reader.Fail(header[0], "empty workload name");
    const auto [it, inserted] = seen.emplace(workload, reader.line());
    if (!inserted) {
      reader.Fail(header[0], fmt::format("workload \"{}\" appears twice (first on line {})",
                                         workload, it->second));
    }
    const std::string& cell = fields[col];
    if (cell.empty()) {
      out.not_run.push_back(workload);
      continue;
    }
    const double value = unit->to_canonical.Apply(reader.ParseNumber(cell, header[col]));
    if (!(value > 0.0)) {
      reader.Fail(header[col], fmt::format("{} must be a power > 0 (an empty cell means \"not "
                                           "run\")",
                                           cell));
    }
    reader.CheckBound(value, header[col], PhysicalQuantity::kPower);
    out.workloads.push_back(workload);
    out.power_w.push_back(value);
    out.lines.push_back(reader.line());
  }
  if (out.workloads.empty()) {
    throw InputError(path, 0, out.column, "no workload has a value in this column");
  }
  return out;
}

}  // namespace wattcal
