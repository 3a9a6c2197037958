#include "accelwattch/activity.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "io/sweep.h"
#include "io/csv_reader.h"
#include "io/units.h"
#include "util/errors.h"

namespace wattcal {
namespace {

// The elapsed-time and power columns: elapsed_<time unit> and mean_power_<power unit>
// (io/units.h); nullptr for another column.
const Unit* ElapsedUnit(const std::string& name) {
  return MatchUnitColumn(name, "elapsed", Dimension::kTime);
}
const Unit* PowerUnit(const std::string& name) {
  return MatchUnitColumn(name, "mean_power", Dimension::kPower);
}

bool IsDescriptiveColumn(const std::string& name) {
  static const std::set<std::string> columns = {"kernel",     "benchmark",      "category",
                                                "active_sms", "lanes_per_warp", "f_core_mhz",
                                                "f_mem_mhz",  "launches"};
  return columns.count(name) || ElapsedUnit(name) != nullptr || PowerUnit(name) != nullptr;
}

// The one column of `header` that `unit_of` gives a unit ("" when none); InputError when
// there are several.
std::string UnitColumn(const CsvReader& reader, const std::vector<std::string>& header,
                       const Unit* (*unit_of)(const std::string&)) {
  std::string found;
  for (const std::string& name : header) {
    if (unit_of(name) == nullptr) continue;
    if (!found.empty())
      reader.Fail(name, fmt::format("the same quantity as column '{}' in another unit", found));
    found = name;
  }
  return found;
}

int ParseCount(const CsvReader& reader, const std::string& cell, const std::string& field,
               int min) {
  const double v = reader.ParseNumber(cell, field);
  if (v != std::floor(v) || v < min || v > 1e9) {
    reader.Fail(field, fmt::format("expected an integer >= {}, got '{}'", min, cell));
  }
  return static_cast<int>(v);
}

}  // namespace

bool LooksLikeActivityTable(const std::string& path) {
  if (!std::ifstream(path)) return false;
  CsvReader reader(path);
  std::vector<std::string> header;
  if (!reader.Next(&header)) return false;
  const std::set<std::string> names(header.begin(), header.end());
  const bool elapsed = std::any_of(header.begin(), header.end(),
                                   [](const std::string& name) { return ElapsedUnit(name); });
  return names.count("kernel") && names.count("active_sms") && names.count("lanes_per_warp") &&
         elapsed;
}

ActivityTable ReadActivityTable(const std::string& path) {
  CsvReader reader(path);
  std::vector<std::string> header;
  if (!reader.Next(&header))
    throw InputError(path, 1, "", "empty file: expected an activity table header");
  std::map<std::string, int> column;
  ActivityTable table;
  table.path = path;
  for (size_t i = 0; i < header.size(); ++i) {
    const std::string& name = header[i];
    if (name.empty()) reader.Fail(fmt::format("column {}", i + 1), "empty column name");
    if (!column.emplace(name, static_cast<int>(i)).second) {
      reader.Fail(name, "column named twice");
    }
    if (!IsDescriptiveColumn(name)) table.counters.push_back(name);
  }
  const std::string elapsed_column = UnitColumn(reader, header, ElapsedUnit);
  const std::string power_column = UnitColumn(reader, header, PowerUnit);
  const char* kMissing =
      "missing column (an activity table has kernel, active_sms, lanes_per_warp, "
      "f_core_mhz, elapsed_s (or _ms, _us, _ns) and one column per counter)";
  for (const char* required : {"kernel", "active_sms", "lanes_per_warp", "f_core_mhz"}) {
    if (!column.count(required)) reader.Fail(required, kMissing);
  }
  if (elapsed_column.empty()) reader.Fail("elapsed_s", kMissing);
  auto cell = [&](const std::vector<std::string>& row, const char* name) -> const std::string* {
    const auto it = column.find(name);
    return it == column.end() ? nullptr : &row[it->second];
  };
  std::set<std::string> seen;
  std::vector<std::string> row;
  while (reader.Next(&row)) {
    if (row.size() != header.size()) {
      reader.Fail(
          "", fmt::format("expected {} fields (as the header), got {}", header.size(), row.size()));
    }
    KernelActivity k;
    k.line = reader.line();
    k.kernel = *cell(row, "kernel");
    if (k.kernel.empty()) reader.Fail("kernel", "empty kernel name");
    if (!seen.insert(k.kernel).second)
      reader.Fail("kernel", fmt::format("kernel '{}' is given twice", k.kernel));
    if (const std::string* b = cell(row, "benchmark")) k.benchmark = *b;
    if (k.benchmark.empty()) k.benchmark = k.kernel;
    if (const std::string* c = cell(row, "category")) {
      k.category = *c;
      if (!k.category.empty() && !IsMixCategory(k.category)) {
        reader.Fail("category", fmt::format("'{}' is not one of AccelWattch's nine categories ({})",
                                            k.category, fmt::join(MixCategories(), ", ")));
      }
    }
    k.active_sms = ParseCount(reader, *cell(row, "active_sms"), "active_sms", 1);
    k.lanes_per_warp = ParseCount(reader, *cell(row, "lanes_per_warp"), "lanes_per_warp", 1);
    k.f_core_mhz = reader.ParseNumber(*cell(row, "f_core_mhz"), "f_core_mhz");
    if (!(k.f_core_mhz > 0.0))
      reader.Fail("f_core_mhz", fmt::format("must be > 0, got {}", k.f_core_mhz));
    reader.CheckBound(k.f_core_mhz, "f_core_mhz", PhysicalQuantity::kFrequency);
    if (const std::string* m = cell(row, "f_mem_mhz"); m != nullptr && !m->empty()) {
      k.f_mem_mhz = reader.ParseNumber(*m, "f_mem_mhz");
      if (k.f_mem_mhz < 0.0)
        reader.Fail("f_mem_mhz", fmt::format("must be >= 0, got {}", k.f_mem_mhz));
      if (k.f_mem_mhz > 0.0)
        reader.CheckBound(k.f_mem_mhz, "f_mem_mhz", PhysicalQuantity::kFrequency);
    }
    // x the factor as one double, as CsvReader::ParseBounded (outputs stay byte-identical).
    const UnitFactor& elapsed_unit = ElapsedUnit(elapsed_column)->to_canonical;
    k.elapsed_s = reader.ParseNumber(row[column[elapsed_column]], elapsed_column) *
                  (elapsed_unit.multiply / elapsed_unit.divide);
    if (!(k.elapsed_s > 0.0))
      reader.Fail(elapsed_column, fmt::format("must be > 0, got {}", row[column[elapsed_column]]));
    reader.CheckBound(k.elapsed_s, elapsed_column, PhysicalQuantity::kDuration);
    if (const std::string* l = cell(row, "launches"); l != nullptr && !l->empty()) {
      k.launches = ParseCount(reader, *l, "launches", 0);
    }
    if (!power_column.empty() && !row[column[power_column]].empty()) {
      const std::string& p = row[column[power_column]];
      const UnitFactor& power_unit = PowerUnit(power_column)->to_canonical;
      k.mean_power_w =
          reader.ParseNumber(p, power_column) * (power_unit.multiply / power_unit.divide);
      if (!(k.mean_power_w > 0.0)) {
        reader.Fail(power_column, fmt::format("a measured power must be > 0, got {}", p));
      }
      reader.CheckBound(k.mean_power_w, power_column, PhysicalQuantity::kPower);
    }
    for (const std::string& counter : table.counters) {
      const std::string& v = row[column[counter]];
      if (v.empty()) continue;
      const double count = reader.ParseNumber(v, counter);
      if (count < 0.0) reader.Fail(counter, fmt::format("a count must be >= 0, got {}", count));
      reader.CheckBound(count, counter, PhysicalQuantity::kCount);
      k.events[counter] = count;
    }
    table.kernels.push_back(std::move(k));
  }
  if (table.kernels.empty())
    throw InputError(path, reader.line() + 1, "", "no kernels after the header");
  return table;
}

}  // namespace wattcal
