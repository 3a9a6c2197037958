#include "util/bounds.h"

#include <fmt/format.h>

#include <cmath>
#include <utility>

namespace wattcal {

const PhysicalBound& BoundOf(PhysicalQuantity quantity) {
  static const PhysicalBound kBounds[] = {
      {"power", "W", 0.0, kMaxPowerW, false},
      {"frequency", "MHz", kMinFrequencyMhz, kMaxFrequencyMhz, false},
      {"time", "s", -kMaxAbsTimeS, kMaxAbsTimeS, false},
      {"duration", "s", 0.0, kMaxDurationS, false},
      {"temperature", "C", kMinTemperatureC, kMaxTemperatureC, false},
      {"energy", "J", 0.0, kMaxEnergyJ, false},
      {"count", "", 0.0, kMaxCount, false},
      {"utilisation", "", 0.0, kMaxUtilisation, false},
      {"coefficient", "", -kMaxAbsCoefficient, kMaxAbsCoefficient, false},
      {"voltage", "(normalised)", 0.0, kMaxVoltage, true},
  };
  return kBounds[static_cast<int>(quantity)];
}

bool QuantityOfColumn(const std::string& name, PhysicalQuantity* quantity) {
  static const std::pair<const char*, PhysicalQuantity> kSuffixes[] = {
      {"_w", PhysicalQuantity::kPower},       {"_mhz", PhysicalQuantity::kFrequency},
      {"_s", PhysicalQuantity::kDuration},    {"_j", PhysicalQuantity::kEnergy},
      {"_c", PhysicalQuantity::kTemperature}, {"_cycles", PhysicalQuantity::kCount},
      {"_cycle", PhysicalQuantity::kCount},   {"_count", PhysicalQuantity::kCount},
      {"_bytes", PhysicalQuantity::kCount},   {"_frac", PhysicalQuantity::kUtilisation},
  };
  for (const auto& [suffix, q] : kSuffixes) {
    const size_t n = std::char_traits<char>::length(suffix);
    if (name.size() > n && name.compare(name.size() - n, n, suffix) == 0) {
      *quantity = q;
      return true;
    }
  }
  return false;
}

bool WithinBound(PhysicalQuantity quantity, double value) {
  const PhysicalBound& b = BoundOf(quantity);
  if (!std::isfinite(value)) return false;
  if (b.min_exclusive ? !(value > b.min) : !(value >= b.min)) return false;
  return value <= b.max;
}

std::string BoundViolation(PhysicalQuantity quantity, double value) {
  if (WithinBound(quantity, value)) return "";
  const PhysicalBound& b = BoundOf(quantity);
  const std::string unit = *b.unit != '\0' ? std::string(" ") + b.unit : std::string();
  return fmt::format("{} {}{} is outside the physical bound {} {} {} <= {}{} (docs/bounds.md)",
                     b.quantity, value, unit, b.min, b.min_exclusive ? "<" : "<=", b.quantity,
                     b.max, unit);
}

}  // namespace wattcal
