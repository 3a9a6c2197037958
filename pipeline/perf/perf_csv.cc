#include "perf/perf_csv.h"

#include <cctype>
#include <cstdio>

#include <fmt/format.h>

#include "util/csv_field.h"
#include "util/errors.h"
#include "util/strings.h"
#include "util/text_input.h"

namespace wattcal {
namespace {}  // namespace

PerfCsvColumns::PerfCsvColumns(const CsvReader& reader, const std::vector<std::string>& header,
                               const std::vector<std::string>& required,
                               const std::vector<std::string>& optional) {
  // Every accepted spelling -> (canonical name, factor to MHz): a *_mhz name in any frequency
  // unit of io/units.h (f_core_ghz, f_core_khz ...).
  std::map<std::string, std::pair<std::string, UnitFactor>> accepted;
  auto accept = [&accepted](const std::string& name) {
    accepted[name] = {name, UnitFactor()};
    if (EndsWith(name, "_mhz")) {
      const std::string stem = name.substr(0, name.size() - 4);
      for (const Unit& unit : UnitsOf(Dimension::kFrequency)) {
        accepted[stem + "_" + ToLower(unit.word)] = {name, unit.to_canonical};
      }
    }
  };
  for (const std::string& name : required) accept(name);
  for (const std::string& name : optional) accept(name);

  width_ = header.size();
  for (size_t i = 0; i < header.size(); ++i) {
    std::string cell = header[i];
    if (i == 0) StripUtf8ByteOrderMark(&cell);
    const std::string name = ToLower(cell);
    if (name.empty())
      reader.Fail(fmt::format("column {}", i + 1), "empty column name in the header");
    const auto it = accepted.find(name);
    if (it == accepted.end()) {
      std::string expected;
      for (const std::string& n : required) expected += (expected.empty() ? "" : ", ") + n;
      for (const std::string& n : optional) expected += ", " + n;
      reader.Fail(cell, "unknown column '" + cell + "'; expected the columns " + expected);
    }
    const std::string& canonical = it->second.first;
    if (index_.count(canonical) != 0) {
      reader.Fail(cell, "column '" + canonical + "' appears twice in the header (as '" +
                            spelling_[canonical] + "' and '" + cell + "')");
    }
    index_[canonical] = static_cast<int>(i);
    spelling_[canonical] = cell;
    to_mhz_[canonical] = it->second.second;
  }
  for (const std::string& name : required) {
    if (index_.count(name) == 0) reader.Fail(name, "missing required column '" + name + "'");
  }
}

bool PerfCsvColumns::Has(const std::string& name) const { return index_.count(name) != 0; }

const std::string& PerfCsvColumns::Cell(const std::vector<std::string>& fields,
                                        const std::string& name) const {
  return fields[static_cast<size_t>(index_.at(name))];
}

const std::string& PerfCsvColumns::Spelling(const std::string& name) const {
  return spelling_.at(name);
}

void PerfCsvColumns::CheckWidth(const CsvReader& reader,
                                const std::vector<std::string>& fields) const {
  if (fields.size() != width_) {
    reader.Fail("",
                fmt::format("expected {} fields as in the header, got {}", width_, fields.size()));
  }
}

double PerfCsvColumns::Number(const CsvReader& reader, const std::vector<std::string>& fields,
                              const std::string& name) const {
  const double value = reader.ParseNumber(Cell(fields, name), Spelling(name));
  // Bounded by what the canonical name's unit says it is (util/bounds.h): *_mhz frequencies
  // are checked by FrequencyMhz after their unit conversion.
  PhysicalQuantity quantity;
  if (!EndsWith(name, "_mhz") && QuantityOfColumn(name, &quantity)) {
    reader.CheckBound(value, Spelling(name), quantity);
  }
  return value;
}

double PerfCsvColumns::FrequencyMhz(const CsvReader& reader, const std::vector<std::string>& fields,
                                    const std::string& mhz_name) const {
  const double value = Number(reader, fields, mhz_name);
  if (!(value > 0.0)) {
    reader.Fail(Spelling(mhz_name), fmt::format("expected a frequency > 0, got {}", value));
  }
  const UnitFactor& unit = to_mhz_.at(mhz_name);
  const double mhz = value * (unit.multiply / unit.divide);  // as CsvReader::ParseBounded
  reader.CheckBound(mhz, Spelling(mhz_name), PhysicalQuantity::kFrequency);
  return mhz;
}

std::string PerfCsvField(const std::string& text) { return CsvField(text); }

std::string PerfCsvNumber(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.10g", value);
  return buffer;
}

}  // namespace wattcal
