#include "ingest/power_log.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string_view>

#include "ingest/log_number.h"
#include "io/csv_reader.h"
#include "util/bounds.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/strings.h"
#include "util/text_input.h"

namespace wattcal {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// At most this many distinct GPU ids are remembered for the "the log holds ..." message.
constexpr size_t kMaxRememberedGpus = 16;

// ----------------------------------------------------------------------------- text helpers

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

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

// `text` for an error message: line breaks and other control characters spelled out.
std::string Printable(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out;
}

// `[N/A]`, `[Not Supported]`, `N/A` (nvidia-smi, DCGM) and empty cells are missing values.
bool IsMissing(std::string_view s) {
  if (s.empty()) return true;
  if (s.front() == '[' && s.back() == ']') s = s.substr(1, s.size() - 2);
  return s == "N/A" || s == "Not Supported" || s == "n/a";
}

// An nvidia-smi header field: a lower-case query name, optionally followed by " [unit]".
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

// ----------------------------------------------------------------------------- units

enum class Quantity { kPower, kFrequency, kTemperature, kEnergy };

const char* QuantityUnits(Quantity q) {
  switch (q) {
    case Quantity::kPower:
      return "W, mW, kW or uW";
    case Quantity::kFrequency:
      return "MHz, GHz, kHz or Hz";
    case Quantity::kTemperature:
      return "C";
    case Quantity::kEnergy:
      return "J, mJ, uJ or kJ";
  }
  return "";
}

// The physical bound (util/bounds.h) a value of `q` must keep once in W, MHz, C or J.
PhysicalQuantity BoundQuantity(Quantity q) {
  switch (q) {
    case Quantity::kPower:
      return PhysicalQuantity::kPower;
    case Quantity::kFrequency:
      return PhysicalQuantity::kFrequency;
    case Quantity::kTemperature:
      return PhysicalQuantity::kTemperature;
    case Quantity::kEnergy:
      return PhysicalQuantity::kEnergy;
  }
  return PhysicalQuantity::kPower;
}

// The bounds of the four quantities, in Quantity's order, looked up once at start-up
// (BoundOf keeps them in a function-local static, so this is safe during static init).
const PhysicalBound* const kQuantityBounds[] = {
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

const char* QuantityName(Quantity q) {
  switch (q) {
    case Quantity::kPower:
      return "power";
    case Quantity::kFrequency:
      return "clock";
    case Quantity::kTemperature:
      return "temperature";
    case Quantity::kEnergy:
      return "energy";
  }
  return "";
}

struct UnitFactor {
  const char* unit;
  double scale;
};
constexpr UnitFactor kPowerUnits[] = {{"W", 1.0}, {"mW", 1e-3}, {"kW", 1e3}, {"uW", 1e-6}};
constexpr UnitFactor kFrequencyUnits[] = {{"MHz", 1.0}, {"GHz", 1e3}, {"kHz", 1e-3}, {"Hz", 1e-6}};
constexpr UnitFactor kTemperatureUnits[] = {{"C", 1.0}};
constexpr UnitFactor kEnergyUnits[] = {{"J", 1.0}, {"mJ", 1e-3}, {"uJ", 1e-6}, {"kJ", 1e3}};
constexpr UnitFactor kTimeUnits[] = {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0}};

template <size_t N>
bool LookUpUnit(const UnitFactor (&table)[N], std::string_view unit, bool ignore_case,
                double* scale) {
  for (const UnitFactor& f : table) {
    if (ignore_case ? EqualsIgnoreCase(unit, f.unit) : unit == f.unit) {
      *scale = f.scale;
      return true;
    }
  }
  return false;
}

// Factor from `unit` to W, MHz or degrees C (units as nvidia-smi and DCGM print them, case
// matters: mW is not MW). False for a unit this quantity does not know.
bool UnitScale(Quantity q, std::string_view unit, double* scale, bool ignore_case = false) {
  switch (q) {
    case Quantity::kPower:
      return LookUpUnit(kPowerUnits, unit, ignore_case, scale);
    case Quantity::kFrequency:
      return LookUpUnit(kFrequencyUnits, unit, ignore_case, scale);
    case Quantity::kTemperature:
      return LookUpUnit(kTemperatureUnits, unit, ignore_case, scale);
    case Quantity::kEnergy:
      return LookUpUnit(kEnergyUnits, unit, ignore_case, scale);
  }
  return false;
}

// The same for the lower-case suffix of a raw NVML column name (`power_mw` -> "mw").
bool SuffixScale(Quantity q, std::string_view suffix, double* scale) {
  return UnitScale(q, suffix, scale, /*ignore_case=*/true);
}

// kMissing: [N/A], [Not Supported], N/A; kEmpty: an empty cell; kNaN: "nan" (all three are
// missing values, counted apart for power).
enum class ValueStatus { kOk, kMissing, kEmpty, kNaN, kNotANumber, kUnknownUnit };

constexpr double kPow10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                             1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};

// Parses a number at the start of [begin, end), setting *stop after it. Plain decimals of at
// most 15 digits take a fast path, m / 10^k: m < 2^53 and 10^k (k <= 15) are exact doubles, so
// the quotient is correctly rounded, the same double std::from_chars returns. Anything else
// (exponents, more digits, inf, nan) goes to std::from_chars.
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

// The last unit seen in a column and its factor (a column's unit rarely changes).
struct UnitCache {
  std::string unit;
  double scale = 0.0;
};

// Parses "<number>[ <unit>]" into the quantity's unit. A value without its own unit takes
// `default_scale` (from the header). Returns the unit it saw in `*unit`.
ValueStatus ParseQuantity(std::string_view cell, Quantity q, double default_scale, double* value,
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
  double scale = default_scale;
  if (!unit->empty()) {
    if (cache != nullptr && *unit == cache->unit) {
      scale = cache->scale;
    } else {
      if (!UnitScale(q, *unit, &scale)) return ValueStatus::kUnknownUnit;
      if (cache != nullptr) {
        cache->unit.assign(unit->data(), unit->size());
        cache->scale = scale;
      }
    }
  }
  *value = ConvertUnit(v, scale);
  return ValueStatus::kOk;
}

// A clock event reasons cell: hex `0x0000000000000004` (nvidia-smi) or a decimal number.
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

// ----------------------------------------------------------------------------- time

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

// Parses a plain number of seconds ("1693491403.874").
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

// "YYYY/MM/DD" or "YYYY-MM-DD" at p: days since 1970-01-01.
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

// "HH:MM:SS[.fff]" from p to exactly end: whole seconds of the day and the fraction.
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

// ParseSmiTimestamp remembering the last date: consecutive rows share it, and then only the
// time of day is parsed. Same results as ParseSmiTimestamp.
struct SmiDateCache {
  char text[11] = {};  // "YYYY/MM/DD" and the separator after it
  bool valid = false;
  int64_t day_start_s = 0;
};

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

}  // namespace

double ConvertUnit(double value, double scale) {
  if (scale == 1.0) return value;
  return scale < 1.0 ? value / std::round(1.0 / scale) : value * scale;
}

bool ParseLogNumberPrefix(const char* begin, const char* end, double* value, const char** stop) {
  return ParseNumberPrefix(begin, end, value, stop);
}

bool ParseSmiTimestamp(const char* text, size_t length, double* epoch_s) {
  const char* p = text;
  const char* end = text + length;
  while (p < end && (*p == ' ' || *p == '\t')) ++p;
  while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r')) --end;
  int64_t days = 0;
  if (!ParseSmiDate(p, end, &days)) return false;
  if (p >= end || (*p != ' ' && *p != 'T')) return false;
  ++p;
  int64_t whole = 0;
  double fraction = 0.0;
  if (!ParseSmiTimeOfDay(p, end, &whole, &fraction)) return false;
  *epoch_s = static_cast<double>(days * 86400 + whole) + fraction;
  return true;
}

const char* PowerKindName(PowerKind kind) {
  switch (kind) {
    case PowerKind::kInstant:
      return "instant";
    case PowerKind::kAveraged:
      return "averaged";
    case PowerKind::kUnknown:
      return "unknown";
  }
  return "unknown";
}

const char* PowerLogFormatName(PowerLogFormat format) {
  switch (format) {
    case PowerLogFormat::kNvidiaSmi:
      return "nvidia-smi";
    case PowerLogFormat::kNvmlRaw:
      return "nvml-raw";
    case PowerLogFormat::kDcgmiDmon:
      return "dcgmi-dmon";
  }
  return "unknown";
}

bool PowerLogOptions::Check(std::string* error) const {
  if (!std::isfinite(utc_offset_h) || std::fabs(utc_offset_h) > 26.0) {
    *error = fmt::format(
        "PowerLogOptions.utc_offset_h = {} must be a finite number of hours "
        "within [-26, 26]",
        utc_offset_h);
    return false;
  }
  if (!(dmon_interval_ms >= 0.0) || !std::isfinite(dmon_interval_ms)) {
    *error = fmt::format("PowerLogOptions.dmon_interval_ms = {} must be >= 0 (0 = none)",
                         dmon_interval_ms);
    return false;
  }
  if (!std::isfinite(dmon_start_s)) {
    *error = fmt::format("PowerLogOptions.dmon_start_s = {} must be finite", dmon_start_s);
    return false;
  }
  for (size_t i = 0; i < columns.size(); ++i) {
    if (TrimView(columns[i]).empty()) {
      *error = fmt::format("PowerLogOptions.columns[{}] is empty: every column needs a name", i);
      return false;
    }
  }
  return true;
}

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
      throw InputError(
          path_, 0, "gpu",
          fmt::format("no row of GPU '{}' in the log (it holds {})", options_.gpu,
                      seen_gpus_.empty() ? std::string("no GPU rows") : JoinNames(seen_gpus_)));
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
      if (count > 0 && seen_gpus_.size() < kMaxRememberedGpus &&
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

// ----------------------------------------------------------------------------- CSV logs

// nvidia-smi --query-gpu CSV and raw NVML CSV: both are read through CsvReader (libcsv).
class PowerLogReader::CsvParser : public PowerLogReader::Parser {
 public:
  CsvParser(const std::string& path, const PowerLogOptions& options, PowerLogSummary* stats,
            PowerLogFormat format, bool has_header)
      : Parser(path, options, stats), reader_(path, ReaderOptions(options)) {
    this->format = format;
    if (!has_header) {
      // nvidia-smi --format=csv,noheader: the names come from the options.
      std::vector<std::string> names(options.columns.begin(), options.columns.end());
      SetLayout(names, 0, /*from_options=*/true);
    }
  }

  bool NextRow(PowerSample* sample, ValueStatus* power_status) override {
    while (reader_.Next(&fields_)) {
      const int64_t line = reader_.line();
      if (!have_layout_) {
        SetLayout(Strings(fields_), line, /*from_options=*/false);
        continue;
      }
      double time_s = 0.0;
      const bool time_ok =
          fields_.size() == layout_.num_fields && ParseTime(fields_[layout_.time.index], &time_s);
      if (!time_ok) {
        if (LooksLikeHeader(fields_)) {
          SetLayout(Strings(fields_), line, /*from_options=*/false);
          ++stats_->repeated_headers;
          continue;
        }
        if (fields_.size() != layout_.num_fields) {
          reader_.Fail("", fmt::format("{} fields, but {} names {}{}", fields_.size(),
                                       layout_.source, layout_.num_fields,
                                       fields_.size() < layout_.num_fields
                                           ? " (a cut line: the log was truncated?)"
                                           : ""));
        }
        const std::string cell(fields_[layout_.time.index]);
        reader_.Fail(
            layout_.time.label,
            IsMissing(TrimView(cell))
                ? std::string("missing time: every reading needs its time")
                : fmt::format("expected {}, got '{}'", layout_.time_expected, Printable(cell)));
      }
      if (!layout_.id_columns.empty()) {
        std::string_view ids[3];
        size_t count = 0;
        for (int c : layout_.id_columns) ids[count++] = TrimView(fields_[c]);
        if (!SelectGpu(ids, count, line, layout_.id_label)) {
          ++stats_->other_gpu_rows;
          continue;
        }
      }
      sample->line = line;
      sample->time_s = time_s;
      ReadValue(layout_.power, Quantity::kPower, &sample->power_w, power_status);
      ReadOptional(layout_.core, Quantity::kFrequency, &sample->f_core_mhz);
      ReadOptional(layout_.mem, Quantity::kFrequency, &sample->f_mem_mhz);
      ReadOptional(layout_.temp, Quantity::kTemperature, &sample->temperature_c);
      ReadOptional(layout_.energy, Quantity::kEnergy, &sample->energy_j);
      ReadOptional(layout_.limit, Quantity::kPower, &sample->power_limit_w);
      ReadReasons(sample);
      return true;
    }
    return false;
  }

 private:
  struct Column {
    int index = -1;
    double scale = 1.0;  // to W, MHz or C for values without their own unit
    std::string label;   // "column 5 (power.draw [W])", for error messages
    mutable UnitCache unit_cache;
  };
  struct Layout {
    size_t num_fields = 0;
    Column time;
    double time_scale = 1.0;  // raw logs: to seconds
    std::string time_expected;
    Column power;
    std::string power_name;  // canonical
    PowerKind power_kind = PowerKind::kUnknown;
    Column core, mem, temp, energy, limit, reasons;
    std::vector<int> id_columns;
    std::string id_label;
    std::string source;  // "the header on line 3" / "PowerLogOptions::columns"
  };

  static CsvReader::Options ReaderOptions(const PowerLogOptions& options) {
    CsvReader::Options csv;
    csv.fast_path = options.csv_fast_path;
    return csv;
  }

  static std::vector<std::string> Strings(const std::vector<std::string_view>& views) {
    return std::vector<std::string>(views.begin(), views.end());
  }

  bool ParseTime(std::string_view cell, double* time_s) {
    if (format == PowerLogFormat::kNvidiaSmi) {
      if (!ParseSmiTimestampCached(cell, &date_cache_, time_s)) return false;
      *time_s -= options_.utc_offset_h * 3600.0;
      return true;
    }
    double v = 0.0;
    if (!ParseEpochSeconds(cell, &v)) return false;
    *time_s = ConvertUnit(v, layout_.time_scale);
    return true;
  }

  // Reads a value of `column`; false when it is missing (*status says how). Bad numbers and
  // units, and values outside their physical bound (util/bounds.h), throw.
  bool ReadValue(const Column& column, Quantity q, double* value,
                 ValueStatus* status = nullptr) const {
    const std::string_view cell = fields_[column.index];
    std::string_view unit;
    const ValueStatus parsed = ParseQuantity(cell, q, column.scale, value, &unit,
                                             &column.unit_cache);
    if (status != nullptr) *status = parsed;
    switch (parsed) {
      case ValueStatus::kOk:
        // The plain test first: BoundViolation builds a string, too slow for every cell.
        if (!WithinQuantityBound(q, *value)) {
          reader_.Fail(column.label, BoundViolation(BoundQuantity(q), *value));
        }
        return true;
      case ValueStatus::kMissing:
      case ValueStatus::kEmpty:
      case ValueStatus::kNaN:
        return false;
      case ValueStatus::kNotANumber:
        reader_.Fail(column.label, fmt::format("expected a {} value (a number, optionally with "
                                               "its unit) or [N/A], got '{}'",
                                               QuantityName(q), Printable(cell)));
      case ValueStatus::kUnknownUnit:
        reader_.Fail(column.label,
                     fmt::format("unknown {} unit '{}' in '{}' (expected {})", QuantityName(q),
                                 Printable(unit), Printable(cell), QuantityUnits(q)));
    }
    return false;
  }

  void ReadOptional(const Column& column, Quantity q, double* value) const {
    if (column.index < 0 || !ReadValue(column, q, value)) *value = kNaN;
  }

  void ReadReasons(PowerSample* sample) const {
    sample->clock_reasons = 0;
    sample->has_clock_reasons = false;
    if (layout_.reasons.index < 0) return;
    const std::string_view cell = fields_[layout_.reasons.index];
    switch (ParseClockReasons(cell, &sample->clock_reasons)) {
      case ValueStatus::kOk:
        sample->has_clock_reasons = true;
        return;
      case ValueStatus::kMissing:
        sample->clock_reasons = 0;
        return;
      default:
        reader_.Fail(layout_.reasons.label,
                     fmt::format("expected a clock event reasons bitmask (hex 0x... or a "
                                 "decimal number) or [N/A], got '{}'",
                                 Printable(cell)));
    }
  }

  static std::string Label(size_t index, const std::string& raw) {
    return fmt::format("column {} ({})", index + 1, raw);
  }

  // An nvidia-smi header: every field a lower-case query name, optionally with " [unit]".
  // A raw header: every field an identifier, one of them the time column.
  bool LooksLikeHeader(const std::vector<std::string_view>& fields) const {
    if (fields.empty()) return false;
    if (format == PowerLogFormat::kNvidiaSmi) {
      for (std::string_view f : fields) {
        if (!IsSmiHeaderName(TrimView(f))) return false;
      }
      return true;
    }
    bool has_time = false;
    for (std::string_view f : fields) {
      const std::string name = ToLower(TrimView(f));
      if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) {
        return false;
      }
      for (char c : name) {
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
      }
      if (StartsWith(name, "timestamp_") || StartsWith(name, "time_")) has_time = true;
    }
    return has_time;
  }

  // Canonical nvidia-smi query name of a header field (alias rewritten, unit removed).
  static std::string SmiCanonical(std::string_view name, std::string* unit) {
    name = TrimView(name);
    unit->clear();
    const size_t bracket = name.find(" [");
    if (bracket != std::string_view::npos && name.back() == ']') {
      *unit = std::string(name.substr(bracket + 2, name.size() - bracket - 3));
      name = TrimView(name.substr(0, bracket));
    }
    std::string lower = ToLower(name);
    static const std::pair<const char*, const char*> kAliases[] = {
        {"clocks.current.sm", "clocks.sm"},
        {"clocks.current.memory", "clocks.mem"},
        {"clocks.memory", "clocks.mem"},
        {"clocks.current.graphics", "clocks.gr"},
        {"clocks.graphics", "clocks.gr"},
        {"clocks.current.video", "clocks.video"},
        {"gpu_uuid", "uuid"},
        {"gpu_name", "name"},
        {"gpu_bus_id", "pci.bus_id"},
        {"power.draw.instantaneous", "power.draw.instant"},
    };
    for (const auto& [alias, canonical] : kAliases) {
      if (lower == alias) return canonical;
    }
    return lower;
  }

  // Unit factor from a header's " [unit]" (nvidia-smi) for a column used as `q`.
  double HeaderScale(const std::string& unit, Quantity q, const std::string& label, int64_t line,
                     double default_scale) const {
    if (unit.empty()) return default_scale;
    double scale = 1.0;
    if (!UnitScale(q, unit, &scale)) {
      throw InputError(path_, line, label,
                       fmt::format("unknown {} unit '[{}]' in the header (expected {})",
                                   QuantityName(q), unit, QuantityUnits(q)));
    }
    return scale;
  }

  void SetLayout(const std::vector<std::string>& raw_names, int64_t line, bool from_options) {
    Layout layout;
    layout.num_fields = raw_names.size();
    layout.source = from_options ? std::string("PowerLogOptions::columns")
                                 : fmt::format("the header on line {}", line);
    auto fail = [&](const std::string& field, const std::string& message) {
      throw InputError(path_, line, from_options ? "columns" : field, message);
    };
    std::vector<std::string> canonical(raw_names.size());
    std::vector<std::string> units(raw_names.size());
    for (size_t i = 0; i < raw_names.size(); ++i) {
      if (format == PowerLogFormat::kNvidiaSmi) {
        canonical[i] = SmiCanonical(raw_names[i], &units[i]);
      } else {
        canonical[i] = ToLower(TrimView(raw_names[i]));
      }
      if (canonical[i].empty()) fail(Label(i, raw_names[i]), "empty column name");
    }
    auto find = [&](const std::string& name) -> int {
      for (size_t i = 0; i < canonical.size(); ++i) {
        if (canonical[i] == name) return static_cast<int>(i);
      }
      return -1;
    };
    auto set = [&](Column* column, int index) {
      column->index = index;
      if (index >= 0) column->label = Label(index, std::string(TrimView(raw_names[index])));
    };

    if (format == PowerLogFormat::kNvidiaSmi) {
      set(&layout.time, find("timestamp"));
      if (layout.time.index < 0) {
        fail("", fmt::format("no timestamp column in {} ({}): add timestamp to --query-gpu; "
                             "wattcal never assumes a sampling period",
                             layout.source, JoinNames(raw_names)));
      }
      layout.time_expected = "a timestamp YYYY/MM/DD HH:MM:SS.mmm";
      int power = -1;
      if (!options_.power_field.empty()) {
        std::string ignored;
        const std::string wanted = SmiCanonical(options_.power_field, &ignored);
        power = find(wanted);
        if (power < 0) {
          throw InputError(path_, line, "power_field",
                           fmt::format("no column '{}' in {} ({})", options_.power_field,
                                       layout.source, JoinNames(raw_names)));
        }
      } else {
        for (const char* name : {"power.draw.instant", "power.draw", "power.draw.average"}) {
          power = find(name);
          if (power >= 0) break;
        }
        if (power < 0) {
          fail("", fmt::format("no power column (power.draw.instant, power.draw or "
                               "power.draw.average) in {} ({})",
                               layout.source, JoinNames(raw_names)));
        }
      }
      set(&layout.power, power);
      layout.power_name = canonical[power];
      layout.power.scale =
          HeaderScale(units[power], Quantity::kPower, layout.power.label, line, 1.0);
      int core = find("clocks.sm");
      if (core < 0) core = find("clocks.gr");
      set(&layout.core, core);
      if (core >= 0) {
        layout.core.scale =
            HeaderScale(units[core], Quantity::kFrequency, layout.core.label, line, 1.0);
      }
      set(&layout.mem, find("clocks.mem"));
      if (layout.mem.index >= 0) {
        layout.mem.scale =
            HeaderScale(units[layout.mem.index], Quantity::kFrequency, layout.mem.label, line, 1.0);
      }
      set(&layout.temp, find("temperature.gpu"));
      if (layout.temp.index >= 0) {
        layout.temp.scale = HeaderScale(units[layout.temp.index], Quantity::kTemperature,
                                        layout.temp.label, line, 1.0);
      }
      if (layout.power_name == "power.draw.instant") {
        layout.power_kind = PowerKind::kInstant;
      } else if (layout.power_name == "power.draw" || layout.power_name == "power.draw.average") {
        layout.power_kind = PowerKind::kAveraged;  // 1-s averages on Ampere and newer
      }
      int limit = find("enforced.power.limit");
      if (limit < 0) limit = find("power.limit");
      set(&layout.limit, limit);
      if (limit >= 0) {
        layout.limit.scale =
            HeaderScale(units[limit], Quantity::kPower, layout.limit.label, line, 1.0);
      }
      int reasons = find("clocks_event_reasons.active");
      if (reasons < 0) reasons = find("clocks_throttle_reasons.active");
      set(&layout.reasons, reasons);
      for (const char* id : {"index", "uuid", "pci.bus_id"}) {
        const int c = find(id);
        if (c >= 0) {
          if (layout.id_columns.empty()) layout.id_label = Label(c, raw_names[c]);
          layout.id_columns.push_back(c);
        }
      }
    } else {
      // Raw NVML: units from the names' suffixes.
      for (size_t i = 0; i < canonical.size(); ++i) {
        const std::string& n = canonical[i];
        for (const char* prefix : {"timestamp_", "time_"}) {
          if (layout.time.index < 0 && StartsWith(n, prefix)) {
            const std::string suffix = n.substr(std::strlen(prefix));
            double scale = 0.0;
            if (!LookUpUnit(kTimeUnits, suffix, /*ignore_case=*/false, &scale)) {
              fail(Label(i, raw_names[i]),
                   fmt::format("unknown time unit '{}' (expected {}ns, {}us, {}ms or {}s)", suffix,
                               prefix, prefix, prefix, prefix));
            }
            set(&layout.time, static_cast<int>(i));
            layout.time_scale = scale;
          }
        }
      }
      if (layout.time.index < 0) {
        fail("", fmt::format("no time column (timestamp_us, timestamp_ms, timestamp_s, ...) "
                             "in {} ({})",
                             layout.source, JoinNames(raw_names)));
      }
      layout.time_expected = "a number (" + canonical[layout.time.index] + ")";
      auto suffixed = [&](const std::vector<std::string>& stems, Quantity q, Column* column) {
        for (size_t i = 0; i < canonical.size() && column->index < 0; ++i) {
          for (const std::string& stem : stems) {
            if (!StartsWith(canonical[i], stem)) continue;
            const std::string suffix = canonical[i].substr(stem.size());
            double scale = 1.0;
            if (!SuffixScale(q, suffix, &scale)) continue;
            set(column, static_cast<int>(i));
            column->scale = scale;
            break;
          }
        }
      };
      if (!options_.power_field.empty()) {
        const std::string wanted = ToLower(TrimView(options_.power_field));
        const int c = find(wanted);
        if (c < 0) {
          throw InputError(path_, line, "power_field",
                           fmt::format("no column '{}' in {} ({})", options_.power_field,
                                       layout.source, JoinNames(raw_names)));
        }
        const size_t underscore = wanted.rfind('_');
        double scale = 1.0;
        if (underscore == std::string::npos ||
            !SuffixScale(Quantity::kPower, wanted.substr(underscore + 1), &scale)) {
          throw InputError(path_, line, "power_field",
                           fmt::format("the power column '{}' does not end in its unit "
                                       "(_w, _mw, _kw or _uw)",
                                       options_.power_field));
        }
        set(&layout.power, c);
        layout.power.scale = scale;
      } else {
        suffixed({"power_instant_"}, Quantity::kPower, &layout.power);
        if (layout.power.index < 0) suffixed({"power_"}, Quantity::kPower, &layout.power);
        if (layout.power.index < 0) {
          fail("", fmt::format("no power column (power_mw, power_w, ...) in {} ({})", layout.source,
                               JoinNames(raw_names)));
        }
      }
      layout.power_name = canonical[layout.power.index];
      Column instant;
      suffixed({"power_instant_"}, Quantity::kPower, &instant);
      if (StartsWith(layout.power_name, "power_instant_")) {
        layout.power_kind = PowerKind::kInstant;
      } else if (instant.index >= 0) {
        // nvmlDeviceGetPowerUsage beside NVML_FI_DEV_POWER_INSTANT: the averaged reading.
        layout.power_kind = PowerKind::kAveraged;
      }
      suffixed({"energy_", "total_energy_"}, Quantity::kEnergy, &layout.energy);
      suffixed({"power_limit_", "enforced_power_limit_"}, Quantity::kPower, &layout.limit);
      for (const char* name : {"clocks_event_reasons", "clocks_throttle_reasons",
                               "clock_reasons", "clocks_event_reasons_active",
                               "clocks_throttle_reasons_active"}) {
        if (layout.reasons.index < 0) set(&layout.reasons, find(name));
      }
      suffixed({"f_core_", "sm_clock_", "clock_sm_", "core_clock_", "f_sm_"}, Quantity::kFrequency,
               &layout.core);
      suffixed({"f_mem_", "mem_clock_", "clock_mem_", "memory_clock_"}, Quantity::kFrequency,
               &layout.mem);
      suffixed({"temperature_", "temp_", "gpu_temp_"}, Quantity::kTemperature, &layout.temp);
      for (const char* id : {"gpu", "index", "gpu_index", "device", "uuid"}) {
        const int c = find(id);
        if (c >= 0) {
          if (layout.id_columns.empty()) layout.id_label = Label(c, raw_names[c]);
          layout.id_columns.push_back(c);
          if (layout.id_columns.size() == 3) break;
        }
      }
    }
    if (layout.id_columns.size() > 3) layout.id_columns.resize(3);
    if (!options_.gpu.empty() && layout.id_columns.empty()) {
      throw InputError(path_, line, "gpu",
                       fmt::format("the gpu option is '{}' but {} has no column to tell GPUs "
                                   "apart (index, uuid or pci.bus_id)",
                                   options_.gpu, layout.source));
    }
    if (have_layout_ && layout.power_name != layout_.power_name) {
      fail(layout.power.label,
           fmt::format("{} changes the power column from '{}' to '{}': averaged and instant "
                       "readings are never mixed in one log",
                       layout.source, layout_.power_name, layout.power_name));
    }
    layout_ = std::move(layout);
    have_layout_ = true;
    power_field = layout_.power_name;
    power_kind = layout_.power_kind;
    has_core_clock = has_core_clock || layout_.core.index >= 0;
    has_memory_clock = has_memory_clock || layout_.mem.index >= 0;
    has_temperature = has_temperature || layout_.temp.index >= 0;
    has_energy_counter = has_energy_counter || layout_.energy.index >= 0;
    has_clock_reasons = has_clock_reasons || layout_.reasons.index >= 0;
    has_power_limit = has_power_limit || layout_.limit.index >= 0;
  }

  CsvReader reader_;
  std::vector<std::string_view> fields_;  // views into reader_, valid until its next row
  SmiDateCache date_cache_;
  Layout layout_;
  bool have_layout_ = false;
};

// ----------------------------------------------------------------------------- dcgmi dmon

// Reads lines in 64 KiB blocks (constant memory but for one line).
class LineReader {
 public:
  explicit LineReader(const std::string& path) : path_(path) {
    file_ = std::fopen(path.c_str(), "rb");
    if (file_ == nullptr) {
      throw InputError(path, 0, "", std::string("cannot open file: ") + std::strerror(errno));
    }
    buffer_.resize(1 << 16);
  }
  ~LineReader() {
    if (file_ != nullptr) std::fclose(file_);
  }
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line without its end-of-line; false at the end of the file.
  bool Next(std::string_view* line) {
    for (;;) {
      const char* begin = buffer_.data() + pos_;
      const char* nl = static_cast<const char*>(std::memchr(begin, '\n', end_ - pos_));
      if (nl != nullptr) {
        const size_t length = static_cast<size_t>(nl - begin);
        ++line_number_;
        pos_ += length + 1;
        if (!carry_.empty()) {
          carry_.append(begin, length);
          current_.swap(carry_);
          carry_.clear();
          *line = StripCr(current_);
        } else {
          *line = StripCr(std::string_view(begin, length));
        }
        if (line_number_ == 1) *line = StripUtf8ByteOrderMark(*line);
        return true;
      }
      carry_.append(begin, end_ - pos_);
      pos_ = end_ = 0;
      if (eof_) {
        if (carry_.empty()) return false;
        ++line_number_;
        current_.swap(carry_);
        carry_.clear();
        *line = StripCr(current_);
        if (line_number_ == 1) *line = StripUtf8ByteOrderMark(*line);
        return true;
      }
      end_ = std::fread(buffer_.data(), 1, buffer_.size(), file_);
      if (end_ < buffer_.size()) eof_ = true;
    }
  }
  int64_t line() const { return line_number_; }

 private:
  static std::string_view StripCr(std::string_view s) {
    while (!s.empty() && s.back() == '\r') s.remove_suffix(1);
    return s;
  }
  std::string path_;
  std::FILE* file_ = nullptr;
  std::vector<char> buffer_;
  size_t pos_ = 0;
  size_t end_ = 0;
  bool eof_ = false;
  std::string carry_;
  std::string current_;
  int64_t line_number_ = 0;
};

// Splits an optional leading timestamp off a dmon line: `2024-05-01T12:00:00.123456 ...`,
// `2024-05-01 12:00:00.123 ...`, `2024/05/01 12:00:00.123 ...` or epoch seconds
// `1714564800.123 ...`. Returns the rest of the line (leading blanks removed).
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

class PowerLogReader::DmonParser : public PowerLogReader::Parser {
 public:
  DmonParser(const std::string& path, const PowerLogOptions& options, PowerLogSummary* stats)
      : Parser(path, options, stats), lines_(path) {
    format = PowerLogFormat::kDcgmiDmon;
  }

  bool NextRow(PowerSample* sample, ValueStatus* power_status) override {
    std::string_view raw;
    while (lines_.Next(&raw)) {
      const int64_t line = lines_.line();
      bool has_time = false;
      bool is_epoch = false;
      double time_s = 0.0;
      const std::string_view rest = SplitDmonTimestamp(raw, &has_time, &time_s, &is_epoch);
      if (rest.empty()) continue;
      if (StartsWith(rest, "#")) {
        SetHeader(rest, line);
        continue;
      }
      if (StartsWith(rest, "ID") && (rest.size() == 2 || rest[2] == ' ' || rest[2] == '\t')) {
        if (last_header_line_ == line - 1) SetUnits(rest, line);
        continue;
      }
      if (StartsWith(rest, "dmon was stopped")) continue;  // dcgmi's message on Ctrl-C
      if (!have_header_) {
        throw InputError(path_, line, "",
                         fmt::format("expected the dcgmi dmon header '#Entity ...' before the "
                                     "first row, got '{}'",
                                     std::string(rest.substr(0, 60))));
      }
      tokens_ = SplitWhitespace(rest);
      if (tokens_.size() < 2) {
        throw InputError(path_, line, "",
                         fmt::format("expected a row 'GPU <id> <values>', got '{}'",
                                     std::string(rest.substr(0, 60))));
      }
      const std::string_view entity = tokens_[0];
      const std::string_view id = tokens_[1];
      if (id.empty() || !std::isdigit(static_cast<unsigned char>(id[0]))) {
        throw InputError(path_, line, "#Entity",
                         fmt::format("expected an entity like 'GPU 0', got '{} {}'",
                                     std::string(entity), std::string(id)));
      }
      if (tokens_.size() - 2 != names_.size()) {
        throw InputError(
            path_, line, "",
            fmt::format(
                "{} values after '{} {}', but the header on line {} names {} fields{}",
                tokens_.size() - 2, std::string(entity), std::string(id), last_header_line_,
                names_.size(),
                tokens_.size() - 2 < names_.size() ? " (a cut line: the log was truncated?)" : ""));
      }
      if (entity != "GPU") {  // GPU-I, GPU-CI, Switch, ...: no board power
        ++stats_->other_gpu_rows;
        continue;
      }
      if (!SelectGpu(&id, 1, line, "#Entity")) {
        ++stats_->other_gpu_rows;
        continue;
      }
      // Time: the line's own timestamp, or the declared -d interval.
      if (rows_ == 0) timed_ = has_time;
      if (has_time != timed_) {
        throw InputError(path_, line, "",
                         timed_ ? "this row has no leading timestamp but the earlier ones do"
                                : "this row has a leading timestamp but the earlier ones do not");
      }
      if (timed_) {
        sample->time_s = is_epoch ? time_s : time_s - options_.utc_offset_h * 3600.0;
      } else {
        if (options_.dmon_interval_ms <= 0.0) {
          throw InputError(path_, line, "",
                           "dcgmi dmon rows carry no timestamps: give the -d delay "
                           "(PowerLogOptions::dmon_interval_ms) or prefix each line with a "
                           "timestamp (e.g. | ts '%Y-%m-%dT%H:%M:%.S')");
        }
        sample->time_s =
            options_.dmon_start_s + static_cast<double>(rows_) * options_.dmon_interval_ms * 1e-3;
      }
      ++rows_;
      sample->line = line;
      ReadValue(power_, Quantity::kPower, line, &sample->power_w, power_status);
      ReadOptional(core_, Quantity::kFrequency, line, &sample->f_core_mhz);
      ReadOptional(mem_, Quantity::kFrequency, line, &sample->f_mem_mhz);
      ReadOptional(temp_, Quantity::kTemperature, line, &sample->temperature_c);
      sample->energy_j = kNaN;  // dmon logs carry no energy counter or reasons here
      sample->clock_reasons = 0;
      sample->has_clock_reasons = false;
      sample->power_limit_w = kNaN;
      return true;
    }
    return false;
  }

 private:
  bool ReadValue(int field, Quantity q, int64_t line, double* value,
                 ValueStatus* status = nullptr) const {
    const std::string_view cell = tokens_[2 + field];
    std::string_view unit;
    const ValueStatus parsed = ParseQuantity(cell, q, scales_[field], value, &unit);
    if (status != nullptr) *status = parsed;
    switch (parsed) {
      case ValueStatus::kOk:
        if (!WithinQuantityBound(q, *value)) {
          throw InputError(path_, line, names_[field], BoundViolation(BoundQuantity(q), *value));
        }
        return true;
      case ValueStatus::kMissing:
      case ValueStatus::kEmpty:
      case ValueStatus::kNaN:
        return false;
      case ValueStatus::kNotANumber:
        throw InputError(path_, line, names_[field],
                         fmt::format("expected a {} value or N/A, got '{}'", QuantityName(q),
                                     std::string(cell)));
      case ValueStatus::kUnknownUnit:
        throw InputError(path_, line, names_[field],
                         fmt::format("unknown {} unit '{}' (expected {})", QuantityName(q),
                                     std::string(unit), QuantityUnits(q)));
    }
    return false;
  }
  void ReadOptional(int field, Quantity q, int64_t line, double* value) const {
    if (field < 0 || !ReadValue(field, q, line, value)) *value = kNaN;
  }

  // `#Entity   POWER     POWINST   SMCLK ...` (possibly `# Entity`).
  void SetHeader(std::string_view text, int64_t line) {
    std::string_view body = TrimView(text.substr(1));
    if (!StartsWith(body, "Entity")) {
      throw InputError(path_, line, "",
                       fmt::format("expected the dcgmi dmon header '#Entity ...', got '{}'",
                                   std::string(text.substr(0, 60))));
    }
    // Field names and their offsets from the '#' (the units line aligns with them).
    std::vector<std::string> names;
    std::vector<size_t> offsets;
    const size_t entity_end = static_cast<size_t>(body.data() - text.data()) + 6;
    size_t i = entity_end;
    while (i < text.size()) {
      while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
      const size_t b = i;
      while (i < text.size() && text[i] != ' ' && text[i] != '\t') ++i;
      if (i > b) {
        names.emplace_back(text.substr(b, i - b));
        offsets.push_back(b);
      }
    }
    if (names.empty()) {
      throw InputError(path_, line, "", "the dcgmi dmon header names no field");
    }
    if (have_header_ && names == names_) {
      ++stats_->repeated_headers;
      last_header_line_ = line;
      return;
    }
    int power = -1;
    auto find = [&](std::initializer_list<const char*> keys) {
      for (const char* key : keys) {
        for (size_t k = 0; k < names.size(); ++k) {
          if (EqualsIgnoreCase(names[k], key)) return static_cast<int>(k);
        }
      }
      return -1;
    };
    if (!options_.power_field.empty()) {
      std::string wanted(TrimView(options_.power_field));
      if (wanted == "155" || EqualsIgnoreCase(wanted, "power_usage")) wanted = "POWER";
      if (wanted == "157" || EqualsIgnoreCase(wanted, "power_usage_instant")) wanted = "POWINST";
      power = find({wanted.c_str()});
      if (power < 0) {
        throw InputError(path_, line, "power_field",
                         fmt::format("no field '{}' in the dcgmi dmon header ({})",
                                     options_.power_field, JoinNames(names)));
      }
    } else {
      power = find({"POWINST", "POWER"});
      if (power < 0) {
        throw InputError(path_, line, "",
                         fmt::format("no power field in the dcgmi dmon header ({}): monitor "
                                     "field 157 (POWINST) or 155 (POWER), e.g. dmon -e 157",
                                     JoinNames(names)));
      }
    }
    const std::string power_name = Upper(names[power]);
    if (have_header_ && power_name != power_field) {
      throw InputError(path_, line, names[power],
                       fmt::format("the header on line {} changes the power field from '{}' "
                                   "to '{}': averaged and instant readings are never mixed",
                                   line, power_field, power_name));
    }
    if (have_header_) ++stats_->repeated_headers;
    core_ = find({"SMCLK"});
    mem_ = find({"MMCLK"});
    temp_ = find({"TMPTR"});
    names_ = std::move(names);
    offsets_ = std::move(offsets);
    power_ = power;
    power_field = power_name;
    power_kind = power_name == "POWINST" ? PowerKind::kInstant
                 : power_name == "POWER" ? PowerKind::kAveraged
                                         : PowerKind::kUnknown;
    has_core_clock = has_core_clock || core_ >= 0;
    has_memory_clock = has_memory_clock || mem_ >= 0;
    has_temperature = has_temperature || temp_ >= 0;
    // DCGM's documented units until the units line says otherwise: W, MHz, C.
    scales_.assign(names_.size(), 1.0);
    have_header_ = true;
    last_header_line_ = line;
  }

  // `ID        W         W         MHz` aligned under the header's names.
  void SetUnits(std::string_view text, int64_t line) {
    for (size_t k = 0; k < names_.size(); ++k) {
      const int field = static_cast<int>(k);
      Quantity q = Quantity::kPower;
      if (field == core_ || field == mem_) {
        q = Quantity::kFrequency;
      } else if (field == temp_) {
        q = Quantity::kTemperature;
      } else if (field != power_) {
        continue;  // a field wattcal does not read
      }
      const size_t o = offsets_[k];
      if (o >= text.size() || text[o] == ' ' || text[o] == '\t') continue;  // no unit printed
      size_t e = o;
      while (e < text.size() && text[e] != ' ' && text[e] != '\t') ++e;
      const std::string_view unit = text.substr(o, e - o);
      double scale = 1.0;
      if (!UnitScale(q, unit, &scale)) {
        throw InputError(path_, line, names_[k],
                         fmt::format("unknown {} unit '{}' in the units line (expected {})",
                                     QuantityName(q), std::string(unit), QuantityUnits(q)));
      }
      scales_[k] = scale;
    }
  }

  static std::string Upper(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
  }

  LineReader lines_;
  std::vector<std::string_view> tokens_;
  std::vector<std::string> names_;
  std::vector<size_t> offsets_;
  std::vector<double> scales_;
  int power_ = -1, core_ = -1, mem_ = -1, temp_ = -1;
  bool have_header_ = false;
  int64_t last_header_line_ = 0;
  bool timed_ = false;
  int64_t rows_ = 0;
};

// ============================================================================= reader

namespace {

struct Probe {
  std::string first_line;  // first line that is not blank
  int64_t first_line_number = 0;
};

// Opens `path`, rejects empty files and a cut last line, and returns the first non-blank line.
Probe ProbeLog(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    throw InputError(path, 0, "", std::string("cannot open file: ") + std::strerror(errno));
  }
  struct Closer {
    std::FILE* f;
    ~Closer() { std::fclose(f); }
  } closer{file};
  if (std::fseek(file, 0, SEEK_END) != 0) {
    throw InputError(path, 0, "", "cannot seek: not a regular file?");
  }
  const long size = std::ftell(file);
  if (size == 0) throw InputError(path, 0, "", "empty power log (0 bytes)");
  if (size > 0) {
    std::fseek(file, size - 1, SEEK_SET);
    const int last = std::fgetc(file);
    if (last != '\n' && last != '\r') {
      // Name the cut line: count the lines before it.
      std::rewind(file);
      int64_t lines = 0;
      char block[1 << 16];
      size_t n;
      while ((n = std::fread(block, 1, sizeof(block), file)) > 0) {
        lines += std::count(block, block + n, '\n');
      }
      throw InputError(path, lines + 1, "",
                       "the last line has no end-of-line: the log was cut (truncated, or "
                       "still being written)");
    }
  }
  std::rewind(file);
  Probe probe;
  std::string line;
  int64_t number = 0;
  int c;
  while (true) {
    line.clear();
    while ((c = std::fgetc(file)) != EOF && c != '\n') line.push_back(static_cast<char>(c));
    if (c == EOF && line.empty()) break;
    ++number;
    if (number == 1) StripUtf8ByteOrderMark(&line);
    if (!TrimView(line).empty()) {
      probe.first_line = line;
      probe.first_line_number = number;
      return probe;
    }
    if (c == EOF) break;
  }
  throw InputError(path, 0, "", "empty power log: only blank lines");
}

bool IsSmiHeaderLine(std::string_view line) {
  size_t start = 0;
  while (start <= line.size()) {
    size_t comma = line.find(',', start);
    if (comma == std::string_view::npos) comma = line.size();
    if (!IsSmiHeaderName(TrimView(line.substr(start, comma - start)))) return false;
    start = comma + 1;
  }
  return true;
}

bool IsRawHeaderLine(std::string_view line) {
  size_t start = 0;
  while (start <= line.size()) {
    size_t comma = line.find(',', start);
    if (comma == std::string_view::npos) comma = line.size();
    const std::string name = ToLower(TrimView(line.substr(start, comma - start)));
    for (const char* prefix : {"timestamp_", "time_"}) {
      if (StartsWith(name, prefix) && name.find(' ') == std::string::npos) return true;
    }
    start = comma + 1;
  }
  return false;
}

}  // namespace

PowerLogReader::PowerLogReader(const std::string& path, const PowerLogOptions& options)
    : path_(path) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  const Probe probe = ProbeLog(path);
  bool has_time = false;
  bool is_epoch = false;
  double ignored = 0.0;
  const std::string_view rest =
      SplitDmonTimestamp(probe.first_line, &has_time, &ignored, &is_epoch);
  if (StartsWith(rest, "#")) {
    parser_ = std::make_unique<DmonParser>(path, options, &stats_);
  } else if (IsRawHeaderLine(probe.first_line)) {
    parser_ = std::make_unique<CsvParser>(path, options, &stats_, PowerLogFormat::kNvmlRaw,
                                          /*has_header=*/true);
  } else if (IsSmiHeaderLine(probe.first_line)) {
    parser_ = std::make_unique<CsvParser>(path, options, &stats_, PowerLogFormat::kNvidiaSmi,
                                          /*has_header=*/true);
  } else {
    if (options.columns.empty()) {
      throw InputError(
          path, probe.first_line_number, "",
          fmt::format("no header line (the log starts with '{}'): for an nvidia-smi "
                      "--format=csv,noheader log give the column names "
                      "(PowerLogOptions::columns, the --query-gpu list); other logs need "
                      "their header (nvidia-smi, timestamp_us,power_mw or dcgmi dmon)",
                      probe.first_line.substr(0, 60)));
    }
    parser_ = std::make_unique<CsvParser>(path, options, &stats_, PowerLogFormat::kNvidiaSmi,
                                          /*has_header=*/false);
  }
}

PowerLogReader::~PowerLogReader() = default;

bool PowerLogReader::Next(PowerSample* sample) {
  if (done_) return false;
  ValueStatus power_status = ValueStatus::kOk;
  while (parser_->NextRow(sample, &power_status)) {
    if (!WithinBound(PhysicalQuantity::kTime, sample->time_s)) {
      throw InputError(path_, sample->line, "time",
                       BoundViolation(PhysicalQuantity::kTime, sample->time_s));
    }
    if (have_time_ && sample->time_s < last_time_s_) {
      throw InputError(path_, sample->line, "time",
                       fmt::format("time goes backwards: {:.6f} s here, {:.6f} s on line {} "
                                   "(times must be non-decreasing)",
                                   sample->time_s, last_time_s_, last_time_line_));
    }
    have_time_ = true;
    last_time_s_ = sample->time_s;
    last_time_line_ = sample->line;
    if (power_status != ValueStatus::kOk) {
      if (power_status == ValueStatus::kEmpty) {
        if (stats_.empty_power_rows++ == 0) stats_.first_empty_power_line = sample->line;
      } else if (power_status == ValueStatus::kNaN) {
        if (stats_.nan_power_rows++ == 0) stats_.first_nan_power_line = sample->line;
      } else {
        ++stats_.missing_power_rows;
      }
      continue;
    }
    if (stats_.samples++ == 0) stats_.first_time_s = sample->time_s;
    stats_.last_time_s = sample->time_s;
    return true;
  }
  done_ = true;
  parser_->Finish();
  const int64_t skipped =
      stats_.missing_power_rows + stats_.empty_power_rows + stats_.nan_power_rows;
  if (stats_.samples == 0) {
    throw InputError(path_, 0, "",
                     skipped > 0 ? fmt::format("no power readings: all {} rows have a missing "
                                               "power value ({} [N/A] or [Not Supported], {} "
                                               "empty, {} NaN)",
                                               skipped, stats_.missing_power_rows,
                                               stats_.empty_power_rows, stats_.nan_power_rows)
                                 : std::string("no power readings in the log (header only?)"));
  }
  const std::string note = EmptyOrNanPowerNote(path_, stats_);
  if (!note.empty()) LogWarning(note);
  return false;
}

std::string EmptyOrNanPowerNote(const std::string& path, const PowerLogSummary& stats) {
  if (stats.empty_power_rows == 0 && stats.nan_power_rows == 0) return "";
  std::string first;
  if (stats.empty_power_rows > 0) first = fmt::format("{}:{}", path, stats.first_empty_power_line);
  if (stats.nan_power_rows > 0) {
    first += fmt::format("{}{}:{}", first.empty() ? "" : ", NaN at ", path,
                         stats.first_nan_power_line);
  }
  return fmt::format("{} rows with an empty power cell and {} with NaN were skipped ({} first)",
                     stats.empty_power_rows, stats.nan_power_rows, first);
}

PowerLogFormat PowerLogReader::format() const { return parser_->format; }
const std::string& PowerLogReader::power_field() const { return parser_->power_field; }
bool PowerLogReader::has_core_clock() const { return parser_->has_core_clock; }
bool PowerLogReader::has_memory_clock() const { return parser_->has_memory_clock; }
bool PowerLogReader::has_temperature() const { return parser_->has_temperature; }
PowerKind PowerLogReader::power_kind() const { return parser_->power_kind; }
bool PowerLogReader::has_energy_counter() const { return parser_->has_energy_counter; }
bool PowerLogReader::has_clock_reasons() const { return parser_->has_clock_reasons; }
bool PowerLogReader::has_power_limit() const { return parser_->has_power_limit; }
const std::string& PowerLogReader::path() const { return path_; }
const PowerLogSummary& PowerLogReader::stats() const { return stats_; }

}  // namespace wattcal
