#include "util/bounds.h"

#include <fmt/format.h>

#include <cmath>

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
