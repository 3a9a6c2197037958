#include "ingest/internal/power_log_fields.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>

#include "ingest/power_log.h"
#include "util/strings.h"

namespace wattcal {
namespace power_log_internal {

std::vector<std::string_view> SplitWhitespace(std::string_view s) {
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

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) {
    if (!out.empty()) out += ", ";
    out += "'" + n + "'";
  }
  return out;
}

std::string Printable(std::string_view text) {
  return EscapeControlBytes(text, LineBreaks::kNamed);
}

bool IsMissing(std::string_view s) {
  if (s.empty()) return true;
  if (s.front() == '[' && s.back() == ']') s = s.substr(1, s.size() - 2);
  return s == "N/A" || s == "Not Supported" || s == "n/a";
}

bool IsSmiHeaderName(std::string_view f) {
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

namespace {

// The unit table's dimension of `q` (io/units.h).
Dimension UnitDimension(Quantity q) {
  switch (q) {
    case Quantity::kPower: return Dimension::kPower;
    case Quantity::kFrequency: return Dimension::kFrequency;
    case Quantity::kTemperature: return Dimension::kTemperature;
    case Quantity::kEnergy: return Dimension::kEnergy;
  }
  return Dimension::kPower;
}

}  // namespace

std::string QuantityUnits(Quantity q) { return UnitWordList(UnitDimension(q)); }

PhysicalQuantity BoundQuantity(Quantity q) {
  switch (q) {
    case Quantity::kPower: return PhysicalQuantity::kPower;
    case Quantity::kFrequency: return PhysicalQuantity::kFrequency;
    case Quantity::kTemperature: return PhysicalQuantity::kTemperature;
    case Quantity::kEnergy: return PhysicalQuantity::kEnergy;
  }
  return PhysicalQuantity::kPower;
}

const char* QuantityName(Quantity q) {
  switch (q) {
    case Quantity::kPower: return "power";
    case Quantity::kFrequency: return "clock";
    case Quantity::kTemperature: return "temperature";
    case Quantity::kEnergy: return "energy";
  }
  return "";
}

const Unit* FindWord(Quantity q, std::string_view unit) {
  return FindUnitWord(UnitDimension(q), unit);
}

const Unit* FindSuffix(Quantity q, std::string_view suffix) {
  return FindUnitSuffix(UnitDimension(q), suffix);
}

constexpr double kPow10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                             1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};

bool ParseNumberPrefix(const char* begin, const char* end, double* value, const char** stop) {
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

ValueStatus ParseQuantity(std::string_view cell, Quantity q, const UnitFactor& default_factor,
                          double* value, std::string_view* unit, UnitCache* cache) {
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

ValueStatus ParseClockReasons(std::string_view cell, uint64_t* reasons) {
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

namespace {

// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (H. Hinnant's
// days_from_civil).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

bool ReadDigits(const char*& p, const char* end, int count, int* out) {
  int v = 0;
  for (int i = 0; i < count; ++i) {
    if (p >= end || *p < '0' || *p > '9') return false;
    v = v * 10 + (*p - '0');
    ++p;
  }
  *out = v;
  return true;
}

bool IsLeapYear(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

}  // namespace

bool ParseEpochSeconds(std::string_view text, double* value) {
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

bool ParseSmiDate(const char*& p, const char* end, int64_t* days) {
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

bool ParseSmiTimeOfDay(const char* p, const char* end, int64_t* whole_s, double* fraction_s) {
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

bool ParseSmiTimestampCached(std::string_view cell, SmiDateCache* cache, double* epoch_s) {
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

std::string_view SplitDmonTimestamp(std::string_view line, bool* has_time, double* time_s,
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
}  // namespace wattcal
