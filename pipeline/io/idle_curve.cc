#include "io/idle_curve.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <utility>

#include <fmt/format.h>

#include "io/csv_reader.h"
#include "util/json_file.h"
#include "io/units.h"
#include "util/bounds.h"
#include "util/errors.h"

namespace wattcal {
namespace {

// The curve from (clock, power) points, sorted by clock.
IdleCurve SortedCurve(const std::string& path, std::vector<std::pair<double, double>> points) {
  std::sort(points.begin(), points.end());
  IdleCurve c;
  c.path = path;
  for (const auto& [f, p] : points) {
    c.f_core_mhz.push_back(f);
    c.power_w.push_back(p);
  }
  return c;
}

IdleCurve ReadIdleJson(const std::string& path) {
  const nlohmann::json j = ReadJsonFile(path, "the idle curve");
  if (!j.is_object() || j.empty()) {
    throw InputError(path, 0, "",
                     "expected an object {\"<MHz>\": W, ...} (idle power per locked clock)");
  }
  std::vector<std::pair<double, double>> points;
  for (const auto& [key, value] : j.items()) {
    char* end = nullptr;
    const double f = std::strtod(key.c_str(), &end);
    if (end == key.c_str() || *end != '\0' || !(f >= kMinFrequencyMhz && f <= kMaxFrequencyMhz)) {
      throw InputError(path, 0, key, "a key must be a core clock in MHz");
    }
    if (!value.is_number() || !(value.get<double>() > 0.0 && value.get<double>() <= kMaxPowerW)) {
      throw InputError(path, 0, key,
                       fmt::format("expected a power in W within (0, {:g}]", kMaxPowerW));
    }
    points.emplace_back(f, value.get<double>());
  }
  return SortedCurve(path, std::move(points));
}

// A CSV f_core_<unit>,power_<unit> (the per-run tables' column rules).
IdleCurve ReadIdleCsv(const std::string& path) {
  CsvReader reader(path);
  std::vector<std::string> header, fields;
  if (!reader.Next(&header))
    throw InputError(path, 1, "", "empty file: expected f_core_mhz,power_w");
  int fi = -1, pi = -1;
  UnitFactor fs, ps;  // to MHz, to W
  for (size_t i = 0; i < header.size(); ++i) {
    if (const Unit* unit = MatchUnitColumn(header[i], "f_core", Dimension::kFrequency)) {
      fi = static_cast<int>(i), fs = unit->to_canonical;
    }
    if (const Unit* unit = MatchUnitColumn(header[i], "power", Dimension::kPower)) {
      pi = static_cast<int>(i), ps = unit->to_canonical;
    }
  }
  if (fi < 0 || pi < 0) {
    reader.Fail("header",
                fmt::format("expected columns f_core_mhz and power_w (or another unit: {}; {})",
                            UnitColumnList("f_core", Dimension::kFrequency),
                            UnitColumnList("power", Dimension::kPower)));
  }
  std::vector<std::pair<double, double>> points;
  while (reader.Next(&fields)) {
    if (fields.size() <= static_cast<size_t>(std::max(fi, pi))) reader.Fail("", "too few fields");
    points.emplace_back(
        reader.ParseBounded(fields[fi], header[fi], PhysicalQuantity::kFrequency, fs),
        reader.ParseBounded(fields[pi], header[pi], PhysicalQuantity::kPower, ps));
  }
  return SortedCurve(path, std::move(points));
}

}  // namespace

IdleCurve ReadIdleCurve(const std::string& path) {
  std::string lower = path;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (lower.size() >= 5 && lower.compare(lower.size() - 5, 5, ".json") == 0)
    return ReadIdleJson(path);
  return ReadIdleCsv(path);
}

}  // namespace wattcal
