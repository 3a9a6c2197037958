// The one table of units every reader converts through (issue 26): per quantity the units it
// accepts and each one's factor to wattcal's canonical unit (util/bounds.h: W, MHz, s, J, V, C;
// bytes for data sizes).
//
//   quantity     canonical  accepted (aliases in brackets)
//   power        W          W, mW, kW, uW
//   frequency    MHz        MHz, GHz, kHz, Hz
//   time         s          s, ms, us, ns  [second(s), sec, msecond, msec, usecond, usec, µs,
//                                             nsecond, nsec]
//   energy       J          J, mJ, uJ, kJ
//   voltage      V          V, mV
//   temperature  C          C
//   data         byte       byte, B, bytes with SI (K/k, M, G, T, P) or IEC (Ki, Mi, Gi, Ti)
//                           prefixes: Kbyte, KB, KiB ...
//
// The one rule, in both forms a reader meets:
//   - a unit word ("250.00 W", "power.draw [mW]", an ncu unit) is matched as spelled: SI
//     prefixes differ by case (mW is a milliwatt, MW would be a megawatt and is refused).
//     Frequencies are the exception and match in any case: tools print Ghz, MHZ or mhz for the
//     same unit, and no GPU clock is in millihertz;
//   - a column-name suffix (`power_mw`, `f_core_GHz`: the part after the stem's underscore)
//     matches in any case, as column names do.
// A unit not in its quantity's table is refused; readers name FILE:LINE and the column.
//
// Conversion is exact where it can be: every factor is an integer (a power of ten, or of 1024)
// to multiply by or to divide by, so 1693491403874000 us is exactly the seconds of the same
// instant written as a timestamp, and 250000 mW is exactly 250 W.
// (UnitFactor::Apply. CsvReader::ParseBounded and the readers that always multiplied by the
// factor as one double, x * 1e-3, still do: their outputs stay byte-identical; x * 1e-3 and
// x / 1000 differ in the last bit for some x.)
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace wattcal {

// What a unit measures.
enum class Dimension { kPower, kFrequency, kTime, kEnergy, kVoltage, kTemperature, kData };

// value * multiply / divide, both exact integers; from the table, one of them is 1.
struct UnitFactor {
  double multiply = 1.0;
  double divide = 1.0;
  // The converted value: a multiplication or a division by an exact integer, so the double
  // nearest the true value.
  double Apply(double value) const {
    return divide == 1.0 ? value * multiply : value * multiply / divide;
  }
  bool IsIdentity() const { return multiply == 1.0 && divide == 1.0; }
};

// One row of the table.
struct Unit {
  Dimension dimension;
  // As printed ("mW", "GHz", "usecond").
  const char* word;
  // From this unit to the canonical one (mW: divide by 1000).
  UnitFactor to_canonical;
  // An alias is accepted but left out of the lists in messages.
  bool alias;
};

// "power", "frequency", "time", "energy", "voltage", "temperature", "data".
const char* DimensionName(Dimension dimension);

// The canonical unit of `dimension` ("W", "MHz", "s", "J", "V", "C", "byte").
const Unit& CanonicalUnit(Dimension dimension);

// Every unit of `dimension`, the canonical one first, aliases included.
const std::vector<Unit>& UnitsOf(Dimension dimension);

// The unit written as `word` after a value or in a header (the word rule above), or nullptr.
const Unit* FindUnitWord(Dimension dimension, std::string_view word);

// The unit a column-name suffix names (`mw`, `GHz`; no underscore), any case, or nullptr.
const Unit* FindUnitSuffix(Dimension dimension, std::string_view suffix);

// The unit of a column named `<stem>_<unit>` (name and stem in any case), or nullptr when the
// name is not the stem, an underscore and a unit of `dimension`.
const Unit* MatchUnitColumn(std::string_view name, std::string_view stem, Dimension dimension);

// Splits a column name at its last underscore into `*stem` (as written) and its unit of
// `dimension`; nullptr (and *stem untouched) when the part after it is not such a unit.
const Unit* SplitUnitColumn(const std::string& name, Dimension dimension, std::string* stem);

// The factor from `from` to `to`, units of one dimension (kHz to Hz: multiply by 1000; ms to
// us: multiply by 1000; ns to s: divide by 1e9), for readers whose outputs are not in the
// canonical unit (counters in Hz, measured voltages in mV, kernel windows in ns).
UnitFactor FactorBetween(const Unit& from, const Unit& to);

// The listed (non-alias) words of `dimension` for a message: "W, mW, kW or uW"; with
// `aliases`, every word.
std::string UnitWordList(Dimension dimension, bool aliases = false);

// The same as column names with `stem`: "power_w, power_mw, power_kw or power_uw" (lower case).
std::string UnitColumnList(const std::string& stem, Dimension dimension);

}  // namespace wattcal
