#include "io/units.h"

#include <array>
#include <cctype>
#include <cmath>
#include <set>
#include <string>

#include "util/strings.h"

namespace wattcal {
namespace {

constexpr int kDimensions = 7;

// A unit `factor` times the canonical one (1e-3 for mW) as an exact multiplier or divisor.
UnitFactor Times(double factor) {
  UnitFactor f;
  if (factor >= 1.0) {
    f.multiply = factor;
  } else {
    f.divide = std::round(1.0 / factor);  // 1e-3 -> exactly 1000
  }
  return f;
}

Unit Row(Dimension dimension, const char* word, double factor, bool alias = false) {
  return {dimension, word, Times(factor), alias};
}

// Bytes: SI prefixes (ncu's Kbyte is 1000 bytes, nvprof's KB likewise) and IEC ones with "i".
std::vector<Unit> DataUnits() {
  static const std::pair<const char*, double> kPrefixes[] = {
      {"", 1.0},
      {"K", 1e3},
      {"k", 1e3},
      {"M", 1e6},
      {"G", 1e9},
      {"T", 1e12},
      {"P", 1e15},
      {"Ki", 1024.0},
      {"Mi", 1024.0 * 1024.0},
      {"Gi", 1024.0 * 1024.0 * 1024.0},
      {"Ti", 1024.0 * 1024.0 * 1024.0 * 1024.0}};
  static std::vector<std::string> words;  // the rows point into these strings
  std::vector<std::pair<std::string, double>> spelled;
  for (const char* word : {"byte", "bytes", "B"}) {
    for (const auto& [prefix, factor] : kPrefixes)
      spelled.emplace_back(prefix + std::string(word), factor);
  }
  words.reserve(spelled.size());
  std::vector<Unit> units;
  for (const auto& [word, factor] : spelled) {
    words.push_back(word);
    static const std::set<std::string> kListed = {"byte", "Kbyte", "Mbyte", "Gbyte", "Tbyte",
                                                  "B",    "KB",    "MB",    "GB",    "TB",
                                                  "KiB",  "MiB",   "GiB"};
    const bool listed = kListed.count(word) > 0;
    units.push_back(Row(Dimension::kData, words.back().c_str(), factor, !listed));
  }
  return units;
}

// The table (see units.h), per Dimension in its order, the canonical unit first.
const std::array<std::vector<Unit>, kDimensions>& Table() {
  static const std::array<std::vector<Unit>, kDimensions> table = [] {
    using D = Dimension;
    std::array<std::vector<Unit>, kDimensions> t;
    t[static_cast<int>(D::kPower)] = {Row(D::kPower, "W", 1.0), Row(D::kPower, "mW", 1e-3),
                                      Row(D::kPower, "kW", 1e3), Row(D::kPower, "uW", 1e-6)};
    t[static_cast<int>(D::kFrequency)] = {
        Row(D::kFrequency, "MHz", 1.0), Row(D::kFrequency, "GHz", 1e3),
        Row(D::kFrequency, "kHz", 1e-3), Row(D::kFrequency, "Hz", 1e-6)};
    t[static_cast<int>(D::kTime)] = {Row(D::kTime, "s", 1.0),
                                     Row(D::kTime, "ms", 1e-3),
                                     Row(D::kTime, "us", 1e-6),
                                     Row(D::kTime, "ns", 1e-9),
                                     Row(D::kTime, "second", 1.0, true),
                                     Row(D::kTime, "seconds", 1.0, true),
                                     Row(D::kTime, "sec", 1.0, true),
                                     Row(D::kTime, "msecond", 1e-3, true),
                                     Row(D::kTime, "msec", 1e-3, true),
                                     Row(D::kTime, "usecond", 1e-6, true),
                                     Row(D::kTime, "usec", 1e-6, true),
                                     Row(D::kTime, "\xC2\xB5s", 1e-6, true),
                                     Row(D::kTime, "nsecond", 1e-9, true),
                                     Row(D::kTime, "nsec", 1e-9, true)};
    t[static_cast<int>(D::kEnergy)] = {Row(D::kEnergy, "J", 1.0), Row(D::kEnergy, "mJ", 1e-3),
                                       Row(D::kEnergy, "uJ", 1e-6), Row(D::kEnergy, "kJ", 1e3)};
    t[static_cast<int>(D::kVoltage)] = {Row(D::kVoltage, "V", 1.0), Row(D::kVoltage, "mV", 1e-3)};
    t[static_cast<int>(D::kTemperature)] = {Row(D::kTemperature, "C", 1.0)};
    t[static_cast<int>(D::kData)] = DataUnits();
    return t;
  }();
  return table;
}

const Unit* Find(Dimension dimension, std::string_view text, bool ignore_case) {
  for (const Unit& u : UnitsOf(dimension)) {
    if (ignore_case ? EqualsIgnoreCase(text, u.word) : text == u.word) return &u;
  }
  return nullptr;
}

std::string JoinOr(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " or " : ", ";
    out += items[i];
  }
  return out;
}

}  // namespace

const char* DimensionName(Dimension dimension) {
  switch (dimension) {
    case Dimension::kPower: return "power";
    case Dimension::kFrequency: return "frequency";
    case Dimension::kTime: return "time";
    case Dimension::kEnergy: return "energy";
    case Dimension::kVoltage: return "voltage";
    case Dimension::kTemperature: return "temperature";
    case Dimension::kData: return "data";
  }
  return "";
}

const std::vector<Unit>& UnitsOf(Dimension dimension) {
  return Table()[static_cast<int>(dimension)];
}

const Unit& CanonicalUnit(Dimension dimension) { return UnitsOf(dimension).front(); }

const Unit* FindUnitWord(Dimension dimension, std::string_view word) {
  return Find(dimension, word, /*ignore_case=*/dimension == Dimension::kFrequency);
}

const Unit* FindUnitSuffix(Dimension dimension, std::string_view suffix) {
  return Find(dimension, suffix, /*ignore_case=*/true);
}

const Unit* MatchUnitColumn(std::string_view name, std::string_view stem, Dimension dimension) {
  if (name.size() <= stem.size() + 1 || name[stem.size()] != '_' ||
      !EqualsIgnoreCase(name.substr(0, stem.size()), stem)) {
    return nullptr;
  }
  return FindUnitSuffix(dimension, name.substr(stem.size() + 1));
}

const Unit* SplitUnitColumn(const std::string& name, Dimension dimension, std::string* stem) {
  const size_t underscore = name.rfind('_');
  if (underscore == std::string::npos || underscore == 0) return nullptr;
  const Unit* unit = FindUnitSuffix(dimension, std::string_view(name).substr(underscore + 1));
  if (unit != nullptr) *stem = name.substr(0, underscore);
  return unit;
}

UnitFactor FactorBetween(const Unit& from, const Unit& to) {
  // from/to = (from.multiply * to.divide) / (from.divide * to.multiply), all exact integers.
  const double up = from.to_canonical.multiply * to.to_canonical.divide;
  const double down = from.to_canonical.divide * to.to_canonical.multiply;
  UnitFactor f;
  if (up >= down) {
    f.multiply = up / down;
  } else {
    f.divide = down / up;
  }
  return f;
}

std::string UnitWordList(Dimension dimension, bool aliases) {
  std::vector<std::string> words;
  for (const Unit& u : UnitsOf(dimension)) {
    if (aliases || !u.alias) words.emplace_back(u.word);
  }
  return JoinOr(words);
}

std::string UnitColumnList(const std::string& stem, Dimension dimension) {
  std::vector<std::string> names;
  for (const Unit& u : UnitsOf(dimension)) {
    if (u.alias) continue;
    std::string word = u.word;
    for (char& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    names.push_back(stem + "_" + word);
  }
  return JoinOr(names);
}

}  // namespace wattcal
