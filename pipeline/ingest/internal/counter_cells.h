// The cells of a counter export, shared by the counter readers (ingest/counters.cc,
// counters_ncu.cc, counters_nvprof.cc): units, numbers with their decimal marks and the
// decimal separator of a file (counter_cells.cc). Internal to ingest/.
#pragma once

#include <cstdint>
#include <string>

#include "ingest/counters.h"
#include "io/units.h"

namespace wattcal {
namespace counters_internal {

// ----------------------------------------------------------------------------------------
// Small string helpers.

// "n/a" in any case (ncu, nvprof) and "no data" (ncu 2025.3); `empty_is_absent` adds "" and "nan" (pandas' NaN in
// hw_perf.csv).
bool IsAbsent(const std::string& cell, bool empty_is_absent);

// ----------------------------------------------------------------------------------------
// Units.

struct UnitPart {
  double multiply = 1.0;
  double divide = 1.0;
  std::string base;  // "byte", "second", "1/second" (hz), "%", "" (count) or a count unit
};

bool ParseUnitPart(const std::string& part, UnitPart* out);

std::string KnownUnitsText();

// ----------------------------------------------------------------------------------------
// Numbers with locale digit grouping.

enum class Decimal { kUnknown, kDot, kComma };

bool LooksNumeric(const std::string& s);

// What a single value says about the decimal separator (FORMATS.md §2.1).
Decimal DecimalEvidence(const std::string& cell);

bool AllDigits(const std::string& s);

// Parses `cell` with '.' or ',' as the decimal separator (`decimal`, kUnknown = '.') and the
// other one as the digit-group separator (groups of three). False when not a number.
bool ParseGroupedNumber(const std::string& cell, Decimal decimal, double* value);

// The decimal separator of a file, decided from all its values (see counters.h).
class DecimalDetector {
 public:
  void Observe(const std::string& cell, int64_t line);
  Decimal Decide(const std::string& path, const std::string& field) const;

 private:
  int64_t dot_line_ = 0, comma_line_ = 0;
  std::string dot_example_, comma_example_;
};

}  // namespace counters_internal
}  // namespace wattcal
