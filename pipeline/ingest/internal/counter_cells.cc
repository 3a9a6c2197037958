#include "ingest/internal/counter_cells.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "io/csv_reader.h"
#include "util/errors.h"
#include "util/strings.h"

namespace wattcal {
namespace counters_internal {

bool IsAbsent(const std::string& cell, bool empty_is_absent) {
  const std::string lower = ToLower(Trim(cell));
  if (lower == "n/a" || lower == "no data") return true;
  return empty_is_absent && (lower.empty() || lower == "nan");
}

bool ParseUnitPart(const std::string& part, UnitPart* out) {
  *out = UnitPart();
  if (part.empty() || part == "1") return true;  // a plain count
  if (part == "%") {
    out->base = "%";
    return true;
  }
  // Bytes, times and frequencies from the unit table (io/units.h): bytes and seconds as they
  // are, frequencies in Hz (cycles per second; the table's are in MHz). "mhz" is mega:
  // frequencies match in any case, millihertz never occurs in these exports.
  const auto take = [out](const UnitFactor& factor, const char* base) {
    out->multiply = factor.multiply;
    out->divide = factor.divide;
    out->base = base;
    return true;
  };
  if (const Unit* unit = FindUnitWord(Dimension::kData, part)) {
    return take(unit->to_canonical, "byte");
  }
  if (const Unit* unit = FindUnitWord(Dimension::kTime, part)) {
    return take(unit->to_canonical, "second");
  }
  if (const Unit* unit = FindUnitWord(Dimension::kFrequency, part)) {
    static const Unit& kHertz = *FindUnitWord(Dimension::kFrequency, "Hz");
    return take(FactorBetween(*unit, kHertz), "cycle/second");  // a clock's frequency
  }
  const std::string lower = ToLower(part);
  // Count units keep their value; plurals ("cycles", "passes") are accepted.
  // "cluster" (thread-block clusters, launch__cluster_max_active), "sm" (ncu's "SM",
  // launch__sm_count) and "block" are in ncu 2025.3 raw pages.
  static const std::set<std::string> kCounts = {
      "cycle",   "inst",      "warp",        "thread", "block", "cluster", "register", "sector",
      "request", "wavefront", "transaction", "flop",   "sm",    "pass",    "launch",   "lane"};
  if (lower == "ratio") return true;  // a plain number
  std::string word = lower == "instruction" || lower == "instructions" ? "inst" : lower;
  for (const size_t plural : {0, 1, 2}) {
    if (word.size() <= plural) break;
    const std::string singular = word.substr(0, word.size() - plural);
    const char* ending[] = {"", "s", "es"};
    if (kCounts.count(singular) > 0 && EndsWith(word, ending[plural])) {
      out->base = singular;
      return true;
    }
  }
  return false;
}

std::string KnownUnitsText() {
  return fmt::format(
      "bytes ({}), times ({}), frequencies ({}), %, counts (\"\", cycle, inst, "
      "warp, thread, block, cluster, register, sector, request, wavefront, "
      "transaction, flop, sm, pass, launch, lane, ratio) and A/B of these",
      UnitWordList(Dimension::kData), UnitWordList(Dimension::kTime, true),
      UnitWordList(Dimension::kFrequency));
}

bool LooksNumeric(const std::string& s) {
  if (s.empty()) return false;
  bool digit = false;
  for (char c : s) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digit = true;
    } else if (c != '.' && c != ',' && c != '+' && c != '-' && c != 'e' && c != 'E') {
      return false;
    }
  }
  return digit;
}

Decimal DecimalEvidence(const std::string& cell) {
  const std::string s = Trim(cell);
  if (!LooksNumeric(s)) return Decimal::kUnknown;
  if (s.find_first_of("eE") != std::string::npos) {
    return s.find('.') != std::string::npos && s.find(',') == std::string::npos ? Decimal::kDot
                                                                                : Decimal::kUnknown;
  }
  const size_t commas = std::count(s.begin(), s.end(), ',');
  const size_t dots = std::count(s.begin(), s.end(), '.');
  if (commas > 0 && dots > 0) {
    return s[s.find_last_of(".,")] == '.' ? Decimal::kDot : Decimal::kComma;
  }
  if (commas >= 2) return Decimal::kDot;  // comma groups digits
  if (dots >= 2) return Decimal::kComma;  // dot groups digits
  const char sep = commas == 1 ? ',' : dots == 1 ? '.' : '\0';
  if (sep == '\0') return Decimal::kUnknown;
  const size_t digits_after = s.size() - s.find(sep) - 1;
  if (digits_after == 3) return Decimal::kUnknown;  // "1,234" / "1.234": grouping or decimal
  return sep == '.' ? Decimal::kDot : Decimal::kComma;
}

bool AllDigits(const std::string& s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

bool ParseGroupedNumber(const std::string& cell, Decimal decimal, double* value) {
  std::string s = Trim(cell);
  if (s.find_first_of("eE") != std::string::npos) {
    return s.find(',') == std::string::npos && ParseFiniteDouble(s, value);
  }
  std::string sign;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    sign = s.substr(0, 1);
    s = s.substr(1);
  }
  const char dec = decimal == Decimal::kComma ? ',' : '.';
  const char group = dec == '.' ? ',' : '.';
  if (std::count(s.begin(), s.end(), dec) > 1) return false;
  const size_t dec_pos = s.find(dec);
  const std::string integer = s.substr(0, dec_pos);
  const std::string fraction = dec_pos == std::string::npos ? "" : s.substr(dec_pos + 1);
  if (!AllDigits(fraction)) return false;
  std::string digits;
  size_t start = 0;
  bool first_group = true;
  while (true) {
    const size_t next = integer.find(group, start);
    const std::string piece =
        integer.substr(start, next == std::string::npos ? std::string::npos : next - start);
    if (!AllDigits(piece)) return false;
    const bool grouped = next != std::string::npos || !first_group;
    if (grouped) {
      if (first_group ? (piece.empty() || piece.size() > 3) : piece.size() != 3) return false;
    }
    digits += piece;
    first_group = false;
    if (next == std::string::npos) break;
    start = next + 1;
  }
  if (digits.empty() && fraction.empty()) return false;
  return ParseFiniteDouble(sign + (digits.empty() ? "0" : digits) + "." + fraction, value);
}

void DecimalDetector::Observe(const std::string& cell, int64_t line) {
  const Decimal d = DecimalEvidence(cell);
  if (d == Decimal::kDot && dot_line_ == 0) {
    dot_line_ = line;
    dot_example_ = Trim(cell);
  } else if (d == Decimal::kComma && comma_line_ == 0) {
    comma_line_ = line;
    comma_example_ = Trim(cell);
  }
}

Decimal DecimalDetector::Decide(const std::string& path, const std::string& field) const {
  if (dot_line_ > 0 && comma_line_ > 0) {
    throw InputError(
        path, std::max(dot_line_, comma_line_), field,
        fmt::format("inconsistent decimal separators: line {} has '{}' (decimal point '.') "
                    "but line {} has '{}' (decimal comma ',')",
                    dot_line_, dot_example_, comma_line_, comma_example_));
  }
  return comma_line_ > 0 ? Decimal::kComma : Decimal::kDot;
}

}  // namespace counters_internal
}  // namespace wattcal
