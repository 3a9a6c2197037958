#include "io/measured_voltage.h"

#include <algorithm>
#include <fstream>
#include <regex>

#include <fmt/format.h>

#include "io/csv_reader.h"
#include "io/units.h"
#include "util/bounds.h"
#include "util/errors.h"
#include "util/strings.h"

namespace wattcal {
namespace {

// Millivolts, the unit VoltageReading keeps (io/units.h's canonical voltage is V).
const Unit& Millivolt() { return *FindUnitWord(Dimension::kVoltage, "mV"); }

std::vector<VoltageReading> ReadCsv(const std::string& path) {
  CsvReader reader(path);
  std::vector<std::string> header, fields;
  reader.Next(&header);
  int fi = -1, vi = -1;
  UnitFactor fs, vs;  // to MHz, to mV
  for (size_t i = 0; i < header.size(); ++i) {
    if (const Unit* unit = MatchUnitColumn(header[i], "f_core", Dimension::kFrequency)) {
      fi = static_cast<int>(i), fs = unit->to_canonical;
    }
    if (const Unit* unit = MatchUnitColumn(header[i], "voltage", Dimension::kVoltage)) {
      vi = static_cast<int>(i), vs = FactorBetween(*unit, Millivolt());
    }
  }
  if (fi < 0 || vi < 0) {
    reader.Fail("header", fmt::format("expected f_core_mhz,voltage_mv (or another unit: {}; {})",
                                      UnitColumnList("f_core", Dimension::kFrequency),
                                      UnitColumnList("voltage", Dimension::kVoltage)));
  }
  std::vector<VoltageReading> out;
  while (reader.Next(&fields)) {
    if (fields.size() <= static_cast<size_t>(std::max(fi, vi))) reader.Fail("", "too few fields");
    VoltageReading r;
    r.line = reader.line();
    r.f_core_mhz = reader.ParseBounded(fields[fi], header[fi], PhysicalQuantity::kFrequency, fs);
    r.voltage_mv = reader.ParseNumber(fields[vi], header[vi]) * (vs.multiply / vs.divide);
    if (!(r.voltage_mv > 0.0 && r.voltage_mv < 5000.0))
      reader.Fail(header[vi], "a core voltage within (0, 5000) mV");
    out.push_back(r);
  }
  return out;
}

std::vector<VoltageReading> ReadSmiText(const std::string& path, std::ifstream& in) {
  static const std::regex kValue(
      R"(^\s*([A-Za-z ]+?)\s*:\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]+)\s*$)");
  std::vector<VoltageReading> out;
  std::string line, section;
  int64_t n = 0, block_line = 0;
  double sm = -1, graphics = -1, mv = -1;
  auto finish = [&]() {
    if (block_line == 0) return;
    const double f = sm > 0 ? sm : graphics;
    if (f <= 0 || mv <= 0) {
      throw InputError(path, block_line, f <= 0 ? "Clocks" : "Voltage",
                       "a GPU block without its " + std::string(f <= 0 ? "clock" : "voltage") +
                           ": query both with nvidia-smi -q -d VOLTAGE,CLOCK");
    }
    out.push_back({f, mv, block_line});
    sm = graphics = mv = -1;
    block_line = 0;
  };
  while (std::getline(in, line)) {
    ++n;
    const std::string t = Trim(line);
    static const std::regex kGpu(
        R"(^GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]$)");
    if (std::regex_match(t, kGpu)) {
      finish();
      block_line = n;
      section.clear();
      continue;
    }
    if (t.rfind("====", 0) == 0) continue;
    if (!t.empty() && t.find(':') == std::string::npos) {
      section = t;
      continue;
    }
    std::smatch m;
    if (block_line == 0 || !std::regex_match(line, m, kValue)) continue;
    const double value = std::stod(m[2].str());
    const std::string unit = m[3].str();
    if (section == "Clocks") {
      const Unit* clock = FindUnitWord(Dimension::kFrequency, unit);
      if (clock == nullptr) continue;
      if (m[1] == "SM") sm = clock->to_canonical.Apply(value);
      if (m[1] == "Graphics") graphics = clock->to_canonical.Apply(value);
    } else if (section == "Voltage" && m[1] == "Graphics") {
      const Unit* voltage = FindUnitWord(Dimension::kVoltage, unit);
      if (voltage != nullptr) mv = FactorBetween(*voltage, Millivolt()).Apply(value);
    }
  }
  finish();
  if (out.empty()) {
    throw InputError(path, 1, "",
                     "no GPU block: expected the text of nvidia-smi -q -d VOLTAGE,CLOCK "
                     "or a CSV f_core_mhz,voltage_mv");
  }
  return out;
}

}  // namespace

std::vector<VoltageReading> ReadMeasuredVoltages(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, 0, "", "cannot open the measured voltages");
  std::string first;
  std::getline(in, first);
  std::vector<VoltageReading> out;
  if (first.find("f_core_") != std::string::npos && first.find(',') != std::string::npos) {
    out = ReadCsv(path);
  } else {
    in.clear();
    in.seekg(0);
    out = ReadSmiText(path, in);
  }
  std::stable_sort(out.begin(), out.end(), [](const VoltageReading& a, const VoltageReading& b) {
    return a.f_core_mhz < b.f_core_mhz;
  });
  return out;
}

}  // namespace wattcal
