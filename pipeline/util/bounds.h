// Physical bounds on every value wattcal reads (SPEC "Contracts every stage keeps": values
// are checked against physical bounds, not only for NaN/inf). One table, used by every
// reader: a value outside its bound is an InputError naming FILE:LINE: FIELD, the value and
// the bound; a utilisation between kUtilisationWarnAbove and kMaxUtilisation is kept with a
// warning. docs/bounds.md is the user-facing copy of this table.
//
//   quantity            bound                         why
//   power (W)           0 <= P <= 10 kW               one GPU board (an H100 SXM is 700 W)
//   frequency (MHz)     1 MHz <= f <= 100 GHz         any clock a GPU domain can run at
//   time (s)            |t| <= 9e9 s                  epoch seconds up to the year 2255 (and
//                                                     int64 nanoseconds never overflow)
//   duration (s)        0 <= d <= 1e7 s               a run or window of at most ~116 days
//   temperature (C)     -100 <= T <= 250 C            a sensor reading on a working board
//   energy (J)          0 <= E <= 1e13 J              a cumulative counter: 10 kW for 30 years
//   count               0 <= n <= 1e18                instructions, bytes, cycles, launches
//   utilisation         0 <= U <= 1.5 (warn > 1.05)   a fraction of peak; counters that
//                                                     overshoot 1 a little are kept
//   model coefficient   |c| <= 1e6                    W per MHz, per (V^2 MHz), per unit of
//                                                     activity: a 10 kW board at >= 1 MHz
//   voltage (norm.)     0 < v <= 10                   relative to the default pair's voltage
#pragma once

#include <string>

namespace wattcal {

enum class PhysicalQuantity {
  kPower,
  kFrequency,
  kTime,
  kDuration,
  kTemperature,
  kEnergy,
  kCount,
  kUtilisation,
  kCoefficient,
  kVoltage,
};

// One row of the table above: min <= value <= max (min < value when min_exclusive).
struct PhysicalBound {
  // What the value is, as the message names it ("power", "frequency").
  const char* quantity;
  // Its unit in wattcal's canonical units ("W", "MHz", "s"; "" when dimensionless).
  const char* unit;
  double min;
  double max;
  bool min_exclusive;
};

inline constexpr double kMaxPowerW = 10000.0;
inline constexpr double kMinFrequencyMhz = 1.0;
inline constexpr double kMaxFrequencyMhz = 100000.0;
inline constexpr double kMaxAbsTimeS = 9e9;
inline constexpr double kMaxDurationS = 1e7;
inline constexpr double kMinTemperatureC = -100.0;
inline constexpr double kMaxTemperatureC = 250.0;
inline constexpr double kMaxEnergyJ = 1e13;
inline constexpr double kMaxCount = 1e18;
inline constexpr double kUtilisationWarnAbove = 1.05;
inline constexpr double kMaxUtilisation = 1.5;
inline constexpr double kMaxAbsCoefficient = 1e6;
inline constexpr double kMaxVoltage = 10.0;

// The bound of `quantity`.
const PhysicalBound& BoundOf(PhysicalQuantity quantity);

// The quantity a column holds, from its name's unit suffix (STYLE rule 3): *_w power, *_mhz
// frequency, *_s duration, *_j energy, *_c temperature, *_cycles / *_count / *_bytes count,
// *_frac utilisation. False when the name says nothing.
bool QuantityOfColumn(const std::string& name, PhysicalQuantity* quantity);

// True when `value` is finite and inside the bound of `quantity`.
bool WithinBound(PhysicalQuantity quantity, double value);

// "" when WithinBound(quantity, value); else what is wrong, e.g. "power 1e+308 W is outside the
// physical bound 0 <= power <= 10000 W (docs/bounds.md)".
std::string BoundViolation(PhysicalQuantity quantity, double value);

}  // namespace wattcal
