#include "io/sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "io/csv_reader.h"
#include "io/units.h"
#include "util/json_file.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/strings.h"

namespace wattcal {

const std::vector<std::string>& MixCategories() {
  static const std::vector<std::string> categories = {"int_add",    "int_mul",       "int",
                                                      "int_fp",     "int_fp_dp",     "int_fp_sfu",
                                                      "int_fp_tex", "int_fp_tensor", "light"};
  return categories;
}

bool IsMixCategory(const std::string& name) {
  const auto& c = MixCategories();
  return std::find(c.begin(), c.end(), name) != c.end();
}

namespace {

// A column of the header and the factor to base units.
struct Column {
  int index = -1;
  UnitFactor factor;
  std::string name;
  bool found() const { return index >= 0; }
};

class Header {
 public:
  Header(const CsvReader& reader, const std::vector<std::string>& fields) : reader_(reader) {
    for (size_t i = 0; i < fields.size(); ++i) {
      const std::string name = ToLower(fields[i]);
      if (index_.count(name)) reader.Fail(fields[i], "column appears twice in the header");
      index_[name] = static_cast<int>(i);
    }
  }

  Column Find(const std::vector<std::string>& names) const {
    for (const std::string& n : names) {
      auto it = index_.find(n);
      if (it != index_.end()) return {it->second, UnitFactor(), n};
    }
    return {};
  }

  // The first of `bases` x units of `dimension` (io/units.h) present, with its factor to the
  // canonical unit.
  Column FindWithUnit(const std::vector<std::string>& bases, Dimension dimension) const {
    for (const std::string& base : bases) {
      for (const Unit& unit : UnitsOf(dimension)) {
        const std::string name = base + "_" + ToLower(unit.word);
        auto it = index_.find(name);
        if (it != index_.end()) return {it->second, unit.to_canonical, name};
      }
    }
    return {};
  }

  // Throws when a column named exactly like one of `bases` exists without a unit.
  void RejectUnitless(const std::vector<std::string>& bases, const std::string& expected) const {
    for (const std::string& base : bases) {
      if (index_.count(base)) {
        reader_.Fail(base, "the column has no unit in its name; name it " + expected);
      }
    }
  }

 private:
  const CsvReader& reader_;
  std::map<std::string, int> index_;
};

const std::string& Cell(const std::vector<std::string>& row, const Column& c) {
  static const std::string empty;
  return c.found() && c.index < static_cast<int>(row.size()) ? row[c.index] : empty;
}

// An integer >= 1, or 0 for an empty cell.
int ParseCount(const CsvReader& reader, const std::string& cell, const std::string& field) {
  if (cell.empty()) return 0;
  double v = 0.0;
  if (!ParseFiniteDouble(cell, &v) || v < 1.0 || v != std::floor(v) || v > 1e9) {
    reader.Fail(field, "'" + cell + "' is not a whole number >= 1");
  }
  return static_cast<int>(v);
}

std::string ParseCategory(const CsvReader& reader, const std::string& cell,
                          const std::string& field) {
  const std::string c = ToLower(cell);
  if (!c.empty() && !IsMixCategory(c)) {
    std::string list;
    for (const std::string& m : MixCategories()) list += (list.empty() ? "" : ", ") + m;
    reader.Fail(field,
                "'" + cell + "' is not an instruction-mix category (" + list + ", or empty)");
  }
  return c;
}

void CheckWidth(const CsvReader& reader, const std::vector<std::string>& row, size_t width) {
  if (row.size() != width) {
    reader.Fail("", fmt::format("{} fields, the header has {}", row.size(), width));
  }
}

struct Described {
  std::string benchmark;
  std::string category;
  int active_sms = 0;
  int lanes_per_warp = 0;
  double f_core_mhz = NAN;
  bool used = false;
};

std::map<std::string, Described> ReadDescription(const std::string& path) {
  std::map<std::string, Described> described;
  for (const SweepDescriptionRow& row : ReadSweepDescription(path)) {
    described[row.kernel] = {row.benchmark,      row.category,   row.active_sms,
                             row.lanes_per_warp, row.f_core_mhz, false};
  }
  return described;
}

}  // namespace

std::vector<SweepDescriptionRow> ReadSweepDescription(const std::string& path) {
  CsvReader reader(path);
  std::vector<std::string> row;
  if (!reader.Next(&row)) throw InputError(path, 0, "", "the description is empty");
  const size_t width = row.size();
  const Header header(reader, row);
  const Column key = header.Find({"kernel", "benchmark"});
  if (!key.found()) reader.Fail("kernel", "the description needs a kernel (or benchmark) column");
  const Column bench = key.name == "kernel" ? header.Find({"benchmark"}) : Column{};
  const Column category = header.Find({"category"});
  const Column sms = header.Find({"active_sms"});
  const Column lanes = header.Find({"lanes_per_warp"});
  const Column freq = header.FindWithUnit({"f_core"}, Dimension::kFrequency);
  if (!freq.found()) header.RejectUnitless({"f_core"}, "f_core_mhz");
  const Column mem_freq = header.FindWithUnit({"f_mem"}, Dimension::kFrequency);
  std::vector<SweepDescriptionRow> rows;
  std::set<std::string> names;
  while (reader.Next(&row)) {
    CheckWidth(reader, row, width);
    const std::string& name = Cell(row, key);
    if (name.empty()) reader.Fail(key.name, "empty name");
    SweepDescriptionRow d;
    d.kernel = name;
    d.line = reader.line();
    d.benchmark = bench.found() && !Cell(row, bench).empty() ? Cell(row, bench) : name;
    d.category = ParseCategory(reader, Cell(row, category), "category");
    d.active_sms = ParseCount(reader, Cell(row, sms), "active_sms");
    d.lanes_per_warp = ParseCount(reader, Cell(row, lanes), "lanes_per_warp");
    d.f_core_mhz = NAN;
    if (freq.found() && !Cell(row, freq).empty()) {
      d.f_core_mhz = reader.ParseBounded(Cell(row, freq), freq.name, PhysicalQuantity::kFrequency,
                                         freq.factor);
    }
    d.f_mem_mhz = NAN;
    if (mem_freq.found() && !Cell(row, mem_freq).empty()) {
      d.f_mem_mhz = reader.ParseBounded(Cell(row, mem_freq), mem_freq.name,
                                        PhysicalQuantity::kFrequency, mem_freq.factor);
    }
    if (!names.insert(name).second) reader.Fail(key.name, "'" + name + "' is described twice");
    rows.push_back(d);
  }
  if (rows.empty()) throw InputError(path, 0, "", "the description has no rows");
  return rows;
}

Sweep ReadSweep(const std::string& path, const std::string& description_path) {
  std::map<std::string, Described> described;
  if (!description_path.empty()) described = ReadDescription(description_path);
  Sweep sweep;
  sweep.path = path;
  sweep.description_path = description_path;
  CsvReader reader(path);
  std::vector<std::string> row;
  if (!reader.Next(&row)) throw InputError(path, 0, "", "the sweep file is empty");
  const size_t width = row.size();
  const Header header(reader, row);
  const Column name = header.Find({"benchmark", "kernel"});
  if (!name.found()) reader.Fail("benchmark", "the sweep needs a benchmark (or kernel) column");
  const Column power = header.FindWithUnit({"power", "mean_power"}, Dimension::kPower);
  if (!power.found()) {
    header.RejectUnitless({"power", "mean_power"}, "power_w or power_mw");
    reader.Fail("power_w", "the sweep needs a power column (power_w, power_mw, mean_power_w)");
  }
  const Column freq = header.FindWithUnit({"f_core"}, Dimension::kFrequency);
  if (!freq.found()) header.RejectUnitless({"f_core"}, "f_core_mhz");
  const Column category = header.Find({"category"});
  const Column sms = header.Find({"active_sms"});
  const Column lanes = header.Find({"lanes_per_warp"});
  const Column launches = header.Find({"launches"});
  int64_t clock_mismatches = 0;
  std::string first_mismatch;
  while (reader.Next(&row)) {
    CheckWidth(reader, row, width);
    SweepPoint p;
    p.line = reader.line();
    p.kernel = Cell(row, name);
    if (p.kernel.empty()) reader.Fail(name.name, "empty name");
    if (launches.found() && Cell(row, launches) == "0") {
      ++sweep.skipped_rows;
      continue;
    }
    p.benchmark = p.kernel;
    p.power_w = reader.ParseNumber(Cell(row, power), power.name) *
                (power.factor.multiply / power.factor.divide);  // as CsvReader::ParseBounded
    if (!(p.power_w > 0.0))
      reader.Fail(power.name, fmt::format("power {} W must be > 0", p.power_w));
    reader.CheckBound(p.power_w, power.name, PhysicalQuantity::kPower);
    p.category = ParseCategory(reader, Cell(row, category), "category");
    p.active_sms = ParseCount(reader, Cell(row, sms), "active_sms");
    p.lanes_per_warp = ParseCount(reader, Cell(row, lanes), "lanes_per_warp");
    double f_core_mhz = NAN;
    if (freq.found() && !Cell(row, freq).empty()) {
      f_core_mhz = reader.ParseBounded(Cell(row, freq), freq.name, PhysicalQuantity::kFrequency,
                                       freq.factor);
    }
    if (!description_path.empty()) {
      auto it = described.find(p.kernel);
      if (it == described.end()) {
        reader.Fail(name.name, "'" + p.kernel + "' is not in the description " + description_path);
      }
      Described& d = it->second;
      d.used = true;
      p.benchmark = d.benchmark;
      if (!d.category.empty()) p.category = d.category;
      if (d.active_sms > 0) p.active_sms = d.active_sms;
      if (d.lanes_per_warp > 0) p.lanes_per_warp = d.lanes_per_warp;
      if (std::isnan(f_core_mhz)) {
        f_core_mhz = d.f_core_mhz;
      } else if (!std::isnan(d.f_core_mhz) &&
                 std::abs(f_core_mhz - d.f_core_mhz) > 0.01 * d.f_core_mhz) {
        if (clock_mismatches++ == 0) {
          first_mismatch = fmt::format("{}:{}: {} ran at {} MHz, described as {} MHz", path, p.line,
                                       p.kernel, f_core_mhz, d.f_core_mhz);
        }
      }
    }
    if (std::isnan(f_core_mhz)) {
      reader.Fail(
          freq.found() ? freq.name : "f_core_mhz",
          "no core clock for '" + p.kernel + "' (neither in the sweep nor in a description)");
    }
    if (!(f_core_mhz > 0.0))
      reader.Fail(freq.name, fmt::format("core clock {} MHz must be > 0", f_core_mhz));
    p.f_core_mhz = f_core_mhz;
    sweep.points.push_back(p);
  }
  if (clock_mismatches > 0) {
    LogWarning(
        fmt::format("{} rows ran at a core clock more than 1% from the described one (the "
                    "measured clock is used), first: {}",
                    clock_mismatches, first_mismatch));
  }
  if (sweep.points.empty()) throw InputError(path, 0, "", "the sweep has no usable rows");
  if (sweep.skipped_rows > 0) {
    LogWarning(fmt::format("{}: {} rows without a usable launch (launches = 0) skipped", path,
                           sweep.skipped_rows));
  }
  return sweep;
}

void to_json(nlohmann::json& j, const Sweep& sweep) {
  j = {{"path", sweep.path},
       {"description_path", sweep.description_path},
       {"rows", static_cast<int64_t>(sweep.points.size())},
       {"skipped_rows", sweep.skipped_rows}};
}

double ReadConstantPowerW(const std::string& path) {
  const nlohmann::json j = ReadJsonFile(path, "the constant-power file");
  if (!j.is_object() || !j.contains("p_const_w") || !j["p_const_w"].is_number()) {
    throw InputError(path, 0, "p_const_w", "expected a number (the output of wattcal-constant)");
  }
  const double p = j["p_const_w"].get<double>();
  if (!std::isfinite(p) || p < 0.0) {
    throw InputError(path, 0, "p_const_w", fmt::format("{} W must be finite and >= 0", p));
  }
  return p;
}

}  // namespace wattcal
