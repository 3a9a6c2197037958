// PowerLogReader's insides shared by its parsers (ingest/power_log.cc, power_log_csv.cc,
// power_log_dmon.cc): the text, unit and time helpers of every row (inline: they run once per
// field of logs of hundreds of MB) and the parsers' base class. Internal to ingest/.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/log_number.h"
#include "ingest/power_log.h"
#include "io/units.h"
#include "util/bounds.h"
#include "util/errors.h"
#include "util/strings.h"

namespace wattcal {
namespace power_log_internal {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// At most this many distinct GPU ids are remembered for the "the log holds ..." message.
inline constexpr size_t kMaxRememberedGpus = 16;

// ----------------------------------------------------------------------------- text helpers

inline std::vector<std::string_view> SplitWhitespace(std::string_view s) {
  std::vector<std::string_view> tokens;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    const size_t b = i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t') ++i;
    if (i > b) tokens.push_back(s.substr(b, i - b));
  }
  return tokens;
}

inline std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) {
    if (!out.empty()) out += ", ";
    out += "'" + n + "'";
  }
  return out;
}

// `text` for an error message: line breaks and other control characters spelled out.
inline std::string Printable(std::string_view text) {
  return EscapeControlBytes(text, LineBreaks::kNamed);
}

// `[N/A]`, `[Not Supported]`, `N/A` (nvidia-smi, DCGM) and empty cells are missing values.
inline bool IsMissing(std::string_view s) {
  if (s.empty()) return true;
  if (s.front() == '[' && s.back() == ']') s = s.substr(1, s.size() - 2);
  return s == "N/A" || s == "Not Supported" || s == "n/a";
}

// An nvidia-smi header field: a lower-case query name, optionally followed by " [unit]".
inline bool IsSmiHeaderName(std::string_view f) {
  const size_t bracket = f.find(" [");
  if (bracket != std::string_view::npos) {
    if (f.back() != ']') return false;
    f = f.substr(0, bracket);
  }
  if (f.empty() || !(std::islower(static_cast<unsigned char>(f[0])) || f[0] == '_')) {
    return false;
  }
  for (char ch : f) {
    if (!(std::islower(static_cast<unsigned char>(ch)) ||
          std::isdigit(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.')) {
      return false;
    }
  }
  return true;
}

// ----------------------------------------------------------------------------- units

enum class Quantity { kPower, kFrequency, kTemperature, kEnergy };

// The unit table's dimension of `q` (io/units.h).
inline Dimension UnitDimension(Quantity q) {
  switch (q) {
    case Quantity::kPower: return Dimension::kPower;
    case Quantity::kFrequency: return Dimension::kFrequency;
    case Quantity::kTemperature: return Dimension::kTemperature;
    case Quantity::kEnergy: return Dimension::kEnergy;
  }
  return Dimension::kPower;
}

// The units `q` accepts, for a message: "W, mW, kW or uW".
inline std::string QuantityUnits(Quantity q) { return UnitWordList(UnitDimension(q)); }

// The physical bound (util/bounds.h) a value of `q` must keep once in W, MHz, C or J.
inline PhysicalQuantity BoundQuantity(Quantity q) {
  switch (q) {
    case Quantity::kPower: return PhysicalQuantity::kPower;
    case Quantity::kFrequency: return PhysicalQuantity::kFrequency;
    case Quantity::kTemperature: return PhysicalQuantity::kTemperature;
    case Quantity::kEnergy: return PhysicalQuantity::kEnergy;
  }
  return PhysicalQuantity::kPower;
}

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

inline const char* QuantityName(Quantity q) {
  switch (q) {
    case Quantity::kPower: return "power";
    case Quantity::kFrequency: return "clock";
    case Quantity::kTemperature: return "temperature";
    case Quantity::kEnergy: return "energy";
  }
  return "";
}

// The unit of a value or a header's " [unit]" (io/units.h's word rule: mW is not MW), or
// nullptr for a unit this quantity does not know.
inline const Unit* FindWord(Quantity q, std::string_view unit) {
  return FindUnitWord(UnitDimension(q), unit);
}

// The same for the suffix of a raw NVML column name (`power_mw` -> "mw"), any case.
inline const Unit* FindSuffix(Quantity q, std::string_view suffix) {
  return FindUnitSuffix(UnitDimension(q), suffix);
}

// kMissing: [N/A], [Not Supported], N/A; kEmpty: an empty cell; kNaN: "nan" (all three are
// missing values, counted apart for power).
enum class ValueStatus { kOk, kMissing, kEmpty, kNaN, kNotANumber, kUnknownUnit };

inline constexpr double kPow10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                    1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};

// Parses a number at the start of [begin, end), setting *stop after it. Plain decimals of at
// most 15 digits take a fast path, m / 10^k: m < 2^53 and 10^k (k <= 15) are exact doubles, so
// the quotient is correctly rounded, the same double std::from_chars returns. Anything else
// (exponents, more digits, inf, nan) goes to std::from_chars.
inline bool ParseNumberPrefix(const char* begin, const char* end, double* value,
                              const char** stop) {
  const char* p = begin;
  const bool negative = p < end && *p == '-';
  if (negative) ++p;
  uint64_t mantissa = 0;
  int digits = 0;
  int fraction_digits = 0;
  bool dot = false;
  bool fast = true;
  while (p < end) {
    const char c = *p;
    if (c >= '0' && c <= '9') {
      if (digits == 15) {
        fast = false;
        break;
      }
      mantissa = mantissa * 10 + static_cast<uint64_t>(c - '0');
      ++digits;
      fraction_digits += dot ? 1 : 0;
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
    ++p;
  }
  if (fast && digits > 0 && !(p < end && (*p == 'e' || *p == 'E'))) {
    // An integer skips the division (m / 1 is m): clocks, temperatures, utilisations.
    const double m = static_cast<double>(mantissa);
    const double v = fraction_digits == 0 ? m : m / kPow10[fraction_digits];
    *value = negative ? -v : v;
    *stop = p;
    return true;
  }
  const std::from_chars_result r = std::from_chars(begin, end, *value);
  if (r.ec != std::errc() || r.ptr == begin) return false;
  *stop = r.ptr;
  return true;
}

// The last unit seen in a column and its factor (a column's unit rarely changes).
struct UnitCache {
  std::string unit;
  UnitFactor factor;
};

// Parses "<number>[ <unit>]" into the quantity's unit. A value without its own unit takes
// `default_factor` (from the header). Returns the unit it saw in `*unit`.
inline ValueStatus ParseQuantity(std::string_view cell, Quantity q,
                                 const UnitFactor& default_factor, double* value,
                                 std::string_view* unit, UnitCache* cache = nullptr) {
  cell = TrimView(cell);
  if (cell.empty()) return ValueStatus::kEmpty;
  if (!((cell[0] >= '0' && cell[0] <= '9') || cell[0] == '-' || cell[0] == '.')) {
    if (IsMissing(cell)) return ValueStatus::kMissing;
  }
  const char* begin = cell.data();
  const char* end = begin + cell.size();
  double v = 0.0;
  const char* p = nullptr;
  if (!ParseNumberPrefix(begin, end, &v, &p)) return ValueStatus::kNotANumber;
  if (std::isnan(v)) return ValueStatus::kNaN;
  if (!std::isfinite(v)) return ValueStatus::kNotANumber;
  while (p < end && (*p == ' ' || *p == '\t')) ++p;
  *unit = std::string_view(p, static_cast<size_t>(end - p));
  UnitFactor factor = default_factor;
  if (!unit->empty()) {
    if (cache != nullptr && *unit == cache->unit) {
      factor = cache->factor;
    } else {
      const Unit* found = FindWord(q, *unit);
      if (found == nullptr) return ValueStatus::kUnknownUnit;
      factor = found->to_canonical;
      if (cache != nullptr) {
        cache->unit.assign(unit->data(), unit->size());
        cache->factor = factor;
      }
    }
  }
  *value = factor.Apply(v);
  return ValueStatus::kOk;
}

// A clock event reasons cell: hex `0x0000000000000004` (nvidia-smi) or a decimal number.
inline ValueStatus ParseClockReasons(std::string_view cell, uint64_t* reasons) {
  cell = TrimView(cell);
  if (IsMissing(cell)) return ValueStatus::kMissing;
  int base = 10;
  if (cell.size() > 2 && cell[0] == '0' && (cell[1] == 'x' || cell[1] == 'X')) {
    cell.remove_prefix(2);
    base = 16;
  }
  const std::from_chars_result r =
      std::from_chars(cell.data(), cell.data() + cell.size(), *reasons, base);
  if (r.ec != std::errc() || r.ptr != cell.data() + cell.size()) return ValueStatus::kNotANumber;
  return ValueStatus::kOk;
}

// ----------------------------------------------------------------------------- time

// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (H. Hinnant's
// days_from_civil).
inline int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

inline bool ReadDigits(const char*& p, const char* end, int count, int* out) {
  int v = 0;
  for (int i = 0; i < count; ++i) {
    if (p >= end || *p < '0' || *p > '9') return false;
    v = v * 10 + (*p - '0');
    ++p;
  }
  *out = v;
  return true;
}

inline bool IsLeapYear(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

// Parses a plain number of seconds ("1693491403.874").
inline bool ParseEpochSeconds(std::string_view text, double* value) {
  text = TrimView(text);
  if (text.empty()) return false;
  double v = 0.0;
  const char* stop = nullptr;
  if (!ParseNumberPrefix(text.data(), text.data() + text.size(), &v, &stop) ||
      stop != text.data() + text.size() || !std::isfinite(v)) {
    return false;
  }
  *value = v;
  return true;
}

// "YYYY/MM/DD" or "YYYY-MM-DD" at p: days since 1970-01-01.
inline bool ParseSmiDate(const char*& p, const char* end, int64_t* days) {
  int year = 0, month = 0, day = 0;
  if (!ReadDigits(p, end, 4, &year)) return false;
  if (p >= end || (*p != '/' && *p != '-')) return false;
  const char separator = *p++;
  if (!ReadDigits(p, end, 2, &month)) return false;
  if (p >= end || *p++ != separator) return false;
  if (!ReadDigits(p, end, 2, &day)) return false;
  static constexpr int kDaysInMonth[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12 || day < 1) return false;
  const int month_days = kDaysInMonth[month - 1] + (month == 2 && IsLeapYear(year) ? 1 : 0);
  if (day > month_days) return false;
  *days = DaysFromCivil(year, month, day);
  return true;
}

// "HH:MM:SS[.fff]" from p to exactly end: whole seconds of the day and the fraction.
inline bool ParseSmiTimeOfDay(const char* p, const char* end, int64_t* whole_s,
                              double* fraction_s) {
  if (end - p == 12 && p[2] == ':' && p[5] == ':' && p[8] == '.') {
    // nvidia-smi's own "HH:MM:SS.mmm": fixed positions, no loops; the same results as below.
    static constexpr int kDigitAt[9] = {0, 1, 3, 4, 6, 7, 9, 10, 11};
    int d[9];
    bool digits = true;
    for (int i = 0; i < 9; ++i) {
      d[i] = p[kDigitAt[i]] - '0';
      digits = digits && static_cast<unsigned>(d[i]) <= 9;
    }
    const int hour = d[0] * 10 + d[1], minute = d[2] * 10 + d[3], second = d[4] * 10 + d[5];
    if (!digits || hour > 23 || minute > 59 || second > 60) return false;
    *whole_s = hour * 3600 + minute * 60 + second;
    *fraction_s = static_cast<double>(d[6] * 100 + d[7] * 10 + d[8]) / 1000.0;
    return true;
  }
  int hour = 0, minute = 0, second = 0;
  if (!ReadDigits(p, end, 2, &hour)) return false;
  if (p >= end || *p++ != ':') return false;
  if (!ReadDigits(p, end, 2, &minute)) return false;
  if (p >= end || *p++ != ':') return false;
  if (!ReadDigits(p, end, 2, &second)) return false;
  int64_t fraction = 0;
  int64_t fraction_scale = 1;
  if (p < end && (*p == '.' || *p == ',')) {
    ++p;
    if (p >= end || *p < '0' || *p > '9') return false;
    while (p < end && *p >= '0' && *p <= '9') {
      if (fraction_scale < 1000000000) {  // keep nanoseconds, ignore finer digits
        fraction = fraction * 10 + (*p - '0');
        fraction_scale *= 10;
      }
      ++p;
    }
  }
  if (p != end || hour > 23 || minute > 59 || second > 60) return false;
  *whole_s = hour * 3600 + minute * 60 + second;
  *fraction_s = static_cast<double>(fraction) / static_cast<double>(fraction_scale);
  return true;
}

// ParseSmiTimestamp remembering the last date: consecutive rows share it, and then only the
// time of day is parsed. Same results as ParseSmiTimestamp.
struct SmiDateCache {
  char text[11] = {};  // "YYYY/MM/DD" and the separator after it
  bool valid = false;
  int64_t day_start_s = 0;
};

inline bool ParseSmiTimestampCached(std::string_view cell, SmiDateCache* cache, double* epoch_s) {
  if (cache->valid && cell.size() > 11 && std::memcmp(cell.data(), cache->text, 11) == 0) {
    const char* end = cell.data() + cell.size();
    while (end > cell.data() && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r')) --end;
    int64_t whole = 0;
    double fraction = 0.0;
    if (!ParseSmiTimeOfDay(cell.data() + 11, end, &whole, &fraction)) return false;
    *epoch_s = static_cast<double>(cache->day_start_s + whole) + fraction;
    return true;
  }
  if (!ParseSmiTimestamp(cell.data(), cell.size(), epoch_s)) return false;
  if (cell.size() > 11 && cell[0] >= '0' && cell[0] <= '9') {  // no leading blanks
    const char* p = cell.data();
    int64_t days = 0;
    if (ParseSmiDate(p, p + 10, &days)) {
      std::memcpy(cache->text, cell.data(), 11);
      cache->day_start_s = days * 86400;
      cache->valid = true;
    }
  }
  return true;
}

// Splits an optional leading timestamp off a dmon line: `2024-05-01T12:00:00.123456 ...`,
// `2024-05-01 12:00:00.123 ...`, `2024/05/01 12:00:00.123 ...` or epoch seconds
// `1714564800.123 ...`. Returns the rest of the line (leading blanks removed).
inline std::string_view SplitDmonTimestamp(std::string_view line, bool* has_time, double* time_s,
                                           bool* is_epoch) {
  *has_time = false;
  std::string_view rest = TrimView(line);
  const std::vector<std::string_view> tokens = SplitWhitespace(rest.substr(0, 64));
  if (tokens.size() < 2) return rest;
  auto after = [&](std::string_view token) {
    const size_t offset = static_cast<size_t>(token.data() + token.size() - rest.data());
    return TrimView(rest.substr(offset));
  };
  double t = 0.0;
  if (ParseSmiTimestamp(tokens[0].data(), tokens[0].size(), &t)) {  // 2024-05-01T12:00:00
    *has_time = true;
    *time_s = t;
    *is_epoch = false;
    return after(tokens[0]);
  }
  if (tokens.size() >= 3 && tokens[0].size() == 10) {
    const std::string_view two(
        tokens[0].data(),
        static_cast<size_t>(tokens[1].data() + tokens[1].size() - tokens[0].data()));
    if (ParseSmiTimestamp(two.data(), two.size(), &t)) {
      *has_time = true;
      *time_s = t;
      *is_epoch = false;
      return after(tokens[1]);
    }
  }
  const char c = tokens[0][0];
  if ((c >= '0' && c <= '9') && ParseEpochSeconds(tokens[0], &t)) {
    const std::string_view next = tokens[1];
    if (next[0] == '#' || next == "ID" || std::isalpha(static_cast<unsigned char>(next[0]))) {
      *has_time = true;
      *time_s = t;
      *is_epoch = true;
      return after(tokens[0]);
    }
  }
  return rest;
}

}  // namespace power_log_internal

using power_log_internal::ValueStatus;

// ============================================================================= parsers

class PowerLogReader::Parser {
 public:
  Parser(std::string path, const PowerLogOptions& options, PowerLogSummary* stats)
      : path_(std::move(path)), options_(options), stats_(stats) {}
  virtual ~Parser() = default;

  // Reads the next row of the chosen GPU. Returns false at the end of the log. Sets
  // *power_status to kOk, or to why the row's power value is missing (kMissing for [N/A],
  // kEmpty, kNaN; the time is still filled in).
  virtual bool NextRow(PowerSample* sample, ValueStatus* power_status) = 0;

  // Called once at the end of the log: checks that PowerLogOptions::gpu was found.
  void Finish() const {
    if (!options_.gpu.empty() && !gpu_matched_) {
      throw InputError(path_, 0, "gpu",
                       fmt::format("no row of GPU '{}' in the log (it holds {})", options_.gpu,
                                   seen_gpus_.empty() ? std::string("no GPU rows")
                                                      : power_log_internal::JoinNames(seen_gpus_)));
    }
  }

  PowerLogFormat format = PowerLogFormat::kNvidiaSmi;
  std::string power_field;
  PowerKind power_kind = PowerKind::kUnknown;
  bool has_core_clock = false;
  bool has_memory_clock = false;
  bool has_temperature = false;
  bool has_energy_counter = false;
  bool has_clock_reasons = false;
  bool has_power_limit = false;

 protected:
  // GPU selection. `ids` are the row's id values (index, uuid, ...); returns whether the row
  // belongs to the chosen GPU. With no gpu option, a second GPU is an InputError.
  bool SelectGpu(const std::string_view* ids, size_t count, int64_t line,
                 const std::string& field) {
    if (!options_.gpu.empty()) {
      for (size_t i = 0; i < count; ++i) {
        if (ids[i] == options_.gpu) {
          gpu_matched_ = true;
          return true;
        }
      }
      if (count > 0 && seen_gpus_.size() < power_log_internal::kMaxRememberedGpus &&
          std::find(seen_gpus_.begin(), seen_gpus_.end(), ids[0]) == seen_gpus_.end()) {
        seen_gpus_.emplace_back(ids[0]);
      }
      return false;
    }
    if (count == 0) return true;
    if (!have_first_gpu_) {
      first_gpu_.assign(ids[0].data(), ids[0].size());
      first_gpu_line_ = line;
      have_first_gpu_ = true;
      return true;
    }
    if (ids[0] != first_gpu_) {
      throw InputError(path_, line, field,
                       fmt::format("the log holds several GPUs ('{}' on line {}, '{}' here): "
                                   "choose one with the gpu option",
                                   first_gpu_, first_gpu_line_, ids[0]));
    }
    return true;
  }

  std::string path_;
  PowerLogOptions options_;
  PowerLogSummary* stats_;

 private:
  bool gpu_matched_ = false;
  bool have_first_gpu_ = false;
  std::string first_gpu_;
  int64_t first_gpu_line_ = 0;
  std::vector<std::string> seen_gpus_;
};

}  // namespace wattcal
