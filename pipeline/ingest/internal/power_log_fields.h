// The cells of a power log, shared by PowerLogReader's parsers (ingest/power_log.cc,
// power_log_csv.cc, power_log_dmon.cc): text, unit, number and time helpers
// (power_log_fields.cc). Internal to ingest/.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "io/units.h"
#include "util/bounds.h"
#include "util/nan.h"

namespace wattcal {
namespace power_log_internal {

// At most this many distinct GPU ids are remembered for the "the log holds ..." message.
inline constexpr size_t kMaxRememberedGpus = 16;

// ----------------------------------------------------------------------------- text helpers

std::vector<std::string_view> SplitWhitespace(std::string_view s);

std::string JoinNames(const std::vector<std::string>& names);

// `text` for an error message: line breaks and other control characters spelled out.
std::string Printable(std::string_view text);

// `[N/A]`, `[Not Supported]`, `N/A` (nvidia-smi, DCGM) and empty cells are missing values.
bool IsMissing(std::string_view s);

// An nvidia-smi header field: a lower-case query name, optionally followed by " [unit]".
bool IsSmiHeaderName(std::string_view f);

// ----------------------------------------------------------------------------- units

enum class Quantity { kPower, kFrequency, kTemperature, kEnergy };

// The units `q` accepts, for a message: "W, mW, kW or uW".
std::string QuantityUnits(Quantity q);

// The physical bound (util/bounds.h) a value of `q` must keep once in W, MHz, C or J.
PhysicalQuantity BoundQuantity(Quantity q);

// The bounds of the four quantities, in Quantity's order, looked up once at start-up
// (BoundOf keeps them in a function-local static, so this is safe during static init).
inline const PhysicalBound* const kQuantityBounds[] = {
    &BoundOf(PhysicalQuantity::kPower), &BoundOf(PhysicalQuantity::kFrequency),
    &BoundOf(PhysicalQuantity::kTemperature), &BoundOf(PhysicalQuantity::kEnergy)};
static_assert(static_cast<int>(Quantity::kPower) == 0 &&
                  static_cast<int>(Quantity::kFrequency) == 1 &&
                  static_cast<int>(Quantity::kTemperature) == 2 &&
                  static_cast<int>(Quantity::kEnergy) == 3,
              "kQuantityBounds follows Quantity's order");

// WithinBound(BoundQuantity(q), value) (util/bounds.h) without the call and the look-up: this
// runs for every cell of a log.
inline __attribute__((always_inline)) bool WithinQuantityBound(Quantity q, double value) {
  const PhysicalBound& b = *kQuantityBounds[static_cast<int>(q)];
  if (!std::isfinite(value)) return false;
  if (b.min_exclusive ? !(value > b.min) : !(value >= b.min)) return false;
  return value <= b.max;
}

const char* QuantityName(Quantity q);

// The unit of a value or a header's " [unit]" (io/units.h's word rule: mW is not MW), or
// nullptr for a unit this quantity does not know.
const Unit* FindWord(Quantity q, std::string_view unit);

// The same for the suffix of a raw NVML column name (`power_mw` -> "mw"), any case.
const Unit* FindSuffix(Quantity q, std::string_view suffix);

// kMissing: [N/A], [Not Supported], N/A; kEmpty: an empty cell; kNaN: "nan" (all three are
// missing values, counted apart for power).
enum class ValueStatus { kOk, kMissing, kEmpty, kNaN, kNotANumber, kUnknownUnit };

// Parses a number at the start of [begin, end), setting *stop after it. Plain decimals of at
// most 15 digits take a fast path, m / 10^k: m < 2^53 and 10^k (k <= 15) are exact doubles, so
// the quotient is correctly rounded, the same double std::from_chars returns. Anything else
// (exponents, more digits, inf, nan) goes to std::from_chars.
bool ParseNumberPrefix(const char* begin, const char* end, double* value, const char** stop);

// The last unit seen in a column and its factor (a column's unit rarely changes).
struct UnitCache {
  std::string unit;
  UnitFactor factor;
};

// Parses "<number>[ <unit>]" into the quantity's unit. A value without its own unit takes
// `default_factor` (from the header). Returns the unit it saw in `*unit`.
ValueStatus ParseQuantity(std::string_view cell, Quantity q, const UnitFactor& default_factor,
                          double* value, std::string_view* unit, UnitCache* cache = nullptr);

// A clock event reasons cell: hex `0x0000000000000004` (nvidia-smi) or a decimal number.
ValueStatus ParseClockReasons(std::string_view cell, uint64_t* reasons);

// ----------------------------------------------------------------------------- time

// Parses a plain number of seconds ("1693491403.874").
bool ParseEpochSeconds(std::string_view text, double* value);

// "YYYY/MM/DD" or "YYYY-MM-DD" at p: days since 1970-01-01.
bool ParseSmiDate(const char*& p, const char* end, int64_t* days);

// "HH:MM:SS[.fff]" from p to exactly end: whole seconds of the day and the fraction.
bool ParseSmiTimeOfDay(const char* p, const char* end, int64_t* whole_s, double* fraction_s);

// ParseSmiTimestamp remembering the last date: consecutive rows share it, and then only the
// time of day is parsed. Same results as ParseSmiTimestamp.
struct SmiDateCache {
  char text[11] = {};  // "YYYY/MM/DD" and the separator after it
  bool valid = false;
  int64_t day_start_s = 0;
};

bool ParseSmiTimestampCached(std::string_view cell, SmiDateCache* cache, double* epoch_s);

// Splits an optional leading timestamp off a dmon line: `2024-05-01T12:00:00.123456 ...`,
// `2024-05-01 12:00:00.123 ...`, `2024/05/01 12:00:00.123 ...` or epoch seconds
// `1714564800.123 ...`. Returns the rest of the line (leading blanks removed).
std::string_view SplitDmonTimestamp(std::string_view line, bool* has_time, double* time_s,
                                    bool* is_epoch);

}  // namespace power_log_internal
}  // namespace wattcal
