// io/units.h, the one unit table: every unit of every quantity converts exactly, unknown units
// are refused, the word and suffix forms agree, and one reader per family reads a column in a
// unit it refused before the table (issue 26) or follows the same rule.
#include "io/units.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "accelwattch/component_table.h"
#include "ingest/counters.h"
#include "ingest/power_log.h"
#include "io/clock_runs.h"
#include "io/corpus_io.h"
#include "io/idle_curve.h"
#include "io/measured_voltage.h"
#include "test_support.h"

namespace wattcal {
namespace {

using ::wattcal::testing::ExpectInputError;
using ::wattcal::testing::ScratchDir;
using ::wattcal::testing::WriteFile;

// One unit and the value of 1 of it in the canonical unit.
struct Expected {
  Dimension dimension;
  const char* word;
  double canonical;
};

// The table as units.h documents it; 1 of each unit in W, MHz, s, J, V, C or bytes.
const std::vector<Expected>& ExpectedUnits() {
  static const std::vector<Expected> units = {
      {Dimension::kPower, "W", 1.0},
      {Dimension::kPower, "mW", 1e-3},
      {Dimension::kPower, "kW", 1e3},
      {Dimension::kPower, "uW", 1e-6},
      {Dimension::kFrequency, "MHz", 1.0},
      {Dimension::kFrequency, "GHz", 1e3},
      {Dimension::kFrequency, "kHz", 1e-3},
      {Dimension::kFrequency, "Hz", 1e-6},
      {Dimension::kTime, "s", 1.0},
      {Dimension::kTime, "ms", 1e-3},
      {Dimension::kTime, "us", 1e-6},
      {Dimension::kTime, "ns", 1e-9},
      {Dimension::kTime, "second", 1.0},
      {Dimension::kTime, "seconds", 1.0},
      {Dimension::kTime, "sec", 1.0},
      {Dimension::kTime, "msecond", 1e-3},
      {Dimension::kTime, "msec", 1e-3},
      {Dimension::kTime, "usecond", 1e-6},
      {Dimension::kTime, "usec", 1e-6},
      {Dimension::kTime, "\xC2\xB5s", 1e-6},
      {Dimension::kTime, "nsecond", 1e-9},
      {Dimension::kTime, "nsec", 1e-9},
      {Dimension::kEnergy, "J", 1.0},
      {Dimension::kEnergy, "mJ", 1e-3},
      {Dimension::kEnergy, "uJ", 1e-6},
      {Dimension::kEnergy, "kJ", 1e3},
      {Dimension::kVoltage, "V", 1.0},
      {Dimension::kVoltage, "mV", 1e-3},
      {Dimension::kTemperature, "C", 1.0},
      {Dimension::kData, "byte", 1.0},
      {Dimension::kData, "B", 1.0},
      {Dimension::kData, "bytes", 1.0},
      {Dimension::kData, "Kbyte", 1e3},
      {Dimension::kData, "kB", 1e3},
      {Dimension::kData, "MB", 1e6},
      {Dimension::kData, "Gbytes", 1e9},
      {Dimension::kData, "TB", 1e12},
      {Dimension::kData, "Pbyte", 1e15},
      {Dimension::kData, "KiB", 1024.0},
      {Dimension::kData, "MiB", 1048576.0},
      {Dimension::kData, "Gibyte", 1073741824.0},
      {Dimension::kData, "Tibytes", 1099511627776.0},
  };
  return units;
}

constexpr Dimension kAllDimensions[] = {
    Dimension::kPower,   Dimension::kFrequency,   Dimension::kTime, Dimension::kEnergy,
    Dimension::kVoltage, Dimension::kTemperature, Dimension::kData};

TEST(Units, EveryUnitConvertsExactly) {
  for (const Expected& e : ExpectedUnits()) {
    const Unit* unit = FindUnitWord(e.dimension, e.word);
    ASSERT_NE(unit, nullptr) << e.word;
    EXPECT_EQ(unit->dimension, e.dimension) << e.word;
    // One of the two factors is 1 and the other an exact integer.
    const UnitFactor& f = unit->to_canonical;
    EXPECT_TRUE(f.multiply == 1.0 || f.divide == 1.0) << e.word;
    EXPECT_EQ(f.multiply, std::round(f.multiply)) << e.word;
    EXPECT_EQ(f.divide, std::round(f.divide)) << e.word;
    // 1 unit, and a value whose conversion a multiplication by 1e-3 would round wrongly.
    EXPECT_EQ(f.Apply(1.0), e.canonical) << e.word;
    for (double v : {1.0, 3.0, 250000.0, 1693491403874000.0, 0.1}) {
      const double expected =
          e.canonical >= 1.0 ? v * e.canonical : v / std::round(1.0 / e.canonical);
      EXPECT_EQ(f.Apply(v), expected) << v << " " << e.word;
    }
  }
  // The cases readers rely on: microseconds to the same seconds as a timestamp, milliwatts to
  // whole watts.
  EXPECT_EQ(FindUnitWord(Dimension::kTime, "us")->to_canonical.Apply(1693491403874000.0),
            1693491403.874);
  EXPECT_EQ(FindUnitWord(Dimension::kPower, "mW")->to_canonical.Apply(250000.0), 250.0);
  EXPECT_EQ(FindUnitWord(Dimension::kFrequency, "GHz")->to_canonical.Apply(1.41), 1410.0);
}

TEST(Units, EveryTableRowIsExpectedAndCanonicalComesFirst) {
  size_t rows = 0;
  for (Dimension d : kAllDimensions) {
    ASSERT_FALSE(UnitsOf(d).empty()) << DimensionName(d);
    EXPECT_TRUE(CanonicalUnit(d).to_canonical.IsIdentity()) << DimensionName(d);
    EXPECT_EQ(&CanonicalUnit(d), &UnitsOf(d).front());
    rows += UnitsOf(d).size();
  }
  EXPECT_STREQ(CanonicalUnit(Dimension::kPower).word, "W");
  EXPECT_STREQ(CanonicalUnit(Dimension::kFrequency).word, "MHz");
  EXPECT_STREQ(CanonicalUnit(Dimension::kTime).word, "s");
  EXPECT_STREQ(CanonicalUnit(Dimension::kEnergy).word, "J");
  EXPECT_STREQ(CanonicalUnit(Dimension::kVoltage).word, "V");
  // 4 power, 4 frequency, 14 time, 4 energy, 2 voltage, 1 temperature, 33 data.
  EXPECT_EQ(rows, 4u + 4u + 14u + 4u + 2u + 1u + 33u);
  EXPECT_EQ(UnitWordList(Dimension::kPower), "W, mW, kW or uW");
  EXPECT_EQ(UnitWordList(Dimension::kFrequency), "MHz, GHz, kHz or Hz");
  EXPECT_EQ(UnitWordList(Dimension::kEnergy), "J, mJ, uJ or kJ");
  EXPECT_EQ(UnitColumnList("power", Dimension::kPower), "power_w, power_mw, power_kw or power_uw");
}

TEST(Units, UnknownUnitsAreRefused) {
  // A unit of another quantity, a misspelling, an empty word, an SI prefix in the wrong case.
  const std::pair<Dimension, const char*> refused[] = {
      {Dimension::kPower, "V"},     {Dimension::kPower, "MW"},   {Dimension::kPower, "w"},
      {Dimension::kPower, "Watt"},  {Dimension::kPower, ""},     {Dimension::kFrequency, "rpm"},
      {Dimension::kFrequency, "s"}, {Dimension::kTime, "Ms"},    {Dimension::kTime, "min"},
      {Dimension::kTime, "S"},      {Dimension::kEnergy, "Wh"},  {Dimension::kEnergy, "MJ"},
      {Dimension::kVoltage, "MV"},  {Dimension::kVoltage, "uV"}, {Dimension::kTemperature, "K"},
      {Dimension::kData, "Xbyte"},  {Dimension::kData, "kib"},   {Dimension::kData, "furlong"}};
  for (const auto& [dimension, word] : refused) {
    EXPECT_EQ(FindUnitWord(dimension, word), nullptr) << DimensionName(dimension) << " " << word;
  }
  for (const char* suffix : {"", "x", "wh", "hzz", "v"}) {
    EXPECT_EQ(FindUnitSuffix(Dimension::kPower, suffix), nullptr) << suffix;
  }
  EXPECT_EQ(MatchUnitColumn("power", "power", Dimension::kPower), nullptr);
  EXPECT_EQ(MatchUnitColumn("power_", "power", Dimension::kPower), nullptr);
  EXPECT_EQ(MatchUnitColumn("power_limit_w", "power", Dimension::kPower), nullptr);
  EXPECT_EQ(MatchUnitColumn("powerx_w", "power", Dimension::kPower), nullptr);
  std::string stem = "unchanged";
  EXPECT_EQ(SplitUnitColumn("_w", Dimension::kPower, &stem), nullptr);
  EXPECT_EQ(SplitUnitColumn("alu", Dimension::kPower, &stem), nullptr);
  EXPECT_EQ(SplitUnitColumn("alu_v", Dimension::kPower, &stem), nullptr);
  EXPECT_EQ(stem, "unchanged");
}

TEST(Units, SuffixAndWordFormsAgree) {
  for (Dimension d : kAllDimensions) {
    for (const Unit& unit : UnitsOf(d)) {
      const std::string word = unit.word;
      std::string lower = word, upper = word;
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      // A suffix in any case names the unit whose word it spells (data units that differ only
      // by case, k/K, are both 1000 bytes).
      for (const std::string& suffix : {word, lower, upper}) {
        const Unit* s = FindUnitSuffix(d, suffix);
        ASSERT_NE(s, nullptr) << suffix;
        EXPECT_EQ(s->to_canonical.multiply, unit.to_canonical.multiply) << suffix;
        EXPECT_EQ(s->to_canonical.divide, unit.to_canonical.divide) << suffix;
      }
      EXPECT_EQ(FindUnitWord(d, word), &unit) << word;
      const Unit* column = MatchUnitColumn("Stem_" + upper, "stem", d);
      ASSERT_NE(column, nullptr) << upper;
      EXPECT_EQ(column->to_canonical.Apply(7.0), unit.to_canonical.Apply(7.0)) << upper;
      std::string stem;
      ASSERT_NE(SplitUnitColumn("my_stem_" + lower, d, &stem), nullptr) << lower;
      EXPECT_EQ(stem, "my_stem");
    }
  }
  // Frequencies match in any case as words too (ncu prints Ghz); the others as spelled.
  EXPECT_EQ(FindUnitWord(Dimension::kFrequency, "Ghz"), FindUnitWord(Dimension::kFrequency, "GHz"));
  EXPECT_EQ(FindUnitWord(Dimension::kFrequency, "mhz"), &CanonicalUnit(Dimension::kFrequency));
  EXPECT_EQ(FindUnitWord(Dimension::kPower, "mw"), nullptr);
  EXPECT_NE(FindUnitSuffix(Dimension::kPower, "mw"), nullptr);
}

TEST(Units, FactorBetweenUnitsOfOneDimension) {
  const auto between = [](Dimension d, const char* from, const char* to) {
    return FactorBetween(*FindUnitWord(d, from), *FindUnitWord(d, to));
  };
  EXPECT_EQ(between(Dimension::kFrequency, "kHz", "Hz").multiply, 1e3);
  EXPECT_EQ(between(Dimension::kFrequency, "GHz", "Hz").multiply, 1e9);
  EXPECT_EQ(between(Dimension::kFrequency, "Hz", "Hz").multiply, 1.0);
  EXPECT_EQ(between(Dimension::kVoltage, "V", "mV").multiply, 1e3);
  EXPECT_TRUE(between(Dimension::kVoltage, "mV", "mV").IsIdentity());
  EXPECT_EQ(between(Dimension::kTime, "s", "ns").multiply, 1e9);
  EXPECT_EQ(between(Dimension::kTime, "ns", "us").divide, 1e3);
  EXPECT_EQ(between(Dimension::kTime, "ms", "s").divide, 1e3);
}

// ---- the readers ---------------------------------------------------------------------------

// Counters keep their own outputs (Hz, seconds, bytes) and take every time, frequency and data
// unit from the table: the same rule, no unit of their own.
TEST(UnitsReaders, CountersFollowTheTable) {
  const Unit& hertz = *FindUnitWord(Dimension::kFrequency, "Hz");
  const std::pair<Dimension, const char*> families[] = {{Dimension::kTime, "second"},
                                                        {Dimension::kFrequency, "cycle/second"},
                                                        {Dimension::kData, "byte"}};
  for (const auto& [dimension, base] : families) {
    for (const Unit& unit : UnitsOf(dimension)) {
      CounterUnit parsed;
      ASSERT_TRUE(ParseCounterUnit(unit.word, &parsed)) << unit.word;
      EXPECT_EQ(parsed.base, base) << unit.word;
      const UnitFactor expected =
          dimension == Dimension::kFrequency ? FactorBetween(unit, hertz) : unit.to_canonical;
      EXPECT_EQ(parsed.multiply, expected.multiply) << unit.word;
      EXPECT_EQ(parsed.divide, expected.divide) << unit.word;
    }
  }
  CounterUnit parsed;
  EXPECT_TRUE(ParseCounterUnit("Ghz", &parsed));
  EXPECT_EQ(parsed.multiply, 1e9);
  EXPECT_FALSE(ParseCounterUnit("Ms", &parsed));
  EXPECT_FALSE(ParseCounterUnit("furlong", &parsed));
}

// A raw NVML log with a time in usec (refused before: its time table knew ns, us, ms, s only)
// and power in uW.
TEST(UnitsReaders, PowerLogReadsATimeAliasAndMicrowatts) {
  const std::string dir = ScratchDir();
  const std::string path = WriteFile(dir + "/raw_usec.csv",
                                     "timestamp_usec,power_uw,f_core_ghz\n"
                                     "1693491403874000,250000000,1.41\n"
                                     "1693491403974000,251000000,1.41\n");
  PowerLogOptions options;
  PowerLogReader reader(path, options);
  PowerSample sample;
  ASSERT_TRUE(reader.Next(&sample));
  EXPECT_EQ(sample.time_s, 1693491403.874);
  EXPECT_EQ(sample.power_w, 250.0);
  EXPECT_EQ(sample.f_core_mhz, 1410.0);
  const std::string bad = WriteFile(dir + "/raw_min.csv", "timestamp_min,power_w\n1,2\n");
  ExpectInputError(
      [&] {
        PowerLogReader r(bad, options);
        r.Next(&sample);
      },
      1, {"raw_min.csv:1: column 1 (timestamp_min)", "unknown time unit 'min'"});
}

// Per-run tables at locked clocks: power in kW, clocks in Hz, energy in uJ, time in ns (none of
// them accepted before).
TEST(UnitsReaders, ClockRunsReadNewUnits) {
  const std::string dir = ScratchDir();
  const ClockRunTable power = ReadClockRuns(
      WriteFile(dir + "/runs_kw.csv", "workload,f_core_hz,power_kw\ngemm,1410000000,0.25\n"));
  ASSERT_EQ(power.runs.size(), 1u);
  EXPECT_EQ(power.runs[0].f_core_mhz, 1410.0);
  EXPECT_EQ(power.runs[0].power_w, 250.0);
  const ClockRunTable energy = ReadClockRuns(WriteFile(
      dir + "/runs_uj.csv", "workload,f_core_mhz,energy_uj,time_ns\ngemm,1410,500000000,2e9\n"));
  ASSERT_EQ(energy.runs.size(), 1u);
  EXPECT_EQ(energy.runs[0].time_s, 2.0);
  EXPECT_EQ(energy.runs[0].power_w, 250.0);
}

// Measured voltages: clocks in kHz and the voltage column's unit in any case (the reader took
// f_core_mhz/_ghz and voltage_mv/_v, spelled exactly, before).
TEST(UnitsReaders, MeasuredVoltageReadsKilohertzAndVolts) {
  const std::string path = WriteFile(ScratchDir() + "/volts_khz.csv",
                                     "f_core_khz,voltage_V\n1410000,0.875\n600000,0.7\n");
  const std::vector<VoltageReading> readings = ReadMeasuredVoltages(path);
  ASSERT_EQ(readings.size(), 2u);
  EXPECT_EQ(readings[0].f_core_mhz, 600.0);
  EXPECT_EQ(readings[0].voltage_mv, 700.0);
  EXPECT_EQ(readings[1].f_core_mhz, 1410.0);
  EXPECT_EQ(readings[1].voltage_mv, 875.0);
}

// Component tables: a component in kW and the measured power in uW (the reader knew _W and _mW
// only); a column with a unit of another quantity is refused, naming file:line and the column.
TEST(UnitsReaders, ComponentTableReadsKilowattsAndMicrowatts) {
  const std::string dir = ScratchDir();
  const ComponentTable table = ReadComponentTable(
      WriteFile(dir + "/components_kw.csv",
                "kernel,measured_uw,const_w,static_w,idle_w,alu_kW\nk1,100000000,10,5,3,0.05\n"));
  ASSERT_EQ(table.num_kernels(), 1);
  EXPECT_EQ(table.measured_w[0], 100.0);
  ASSERT_EQ(table.components, std::vector<std::string>{"alu"});
  EXPECT_EQ(table.dynamic_w[0][0], 50.0);
  const std::string bad = WriteFile(
      dir + "/components_v.csv", "kernel,measured_w,const_w,static_w,idle_w,alu_V\nk1,1,1,1,1,1\n");
  ExpectInputError([&] { ReadComponentTable(bad); }, 1,
                   {"components_v.csv:1: alu_V", "not a power column with its unit"});
}

// The idle curve (now read in io/) takes any frequency and power unit, in any case.
TEST(UnitsReaders, IdleCurveReadsAnyUnit) {
  const IdleCurve curve = ReadIdleCurve(
      WriteFile(ScratchDir() + "/idle_hz.csv", "F_Core_Hz,power_uw\n1410000000,60000000\n"));
  ASSERT_EQ(curve.f_core_mhz.size(), 1u);
  EXPECT_EQ(curve.f_core_mhz[0], 1410.0);
  EXPECT_EQ(curve.power_w[0], 60.0);
}

// A tidy corpus refuses a power column in an unknown unit, naming file:line, the column and the
// units it may have.
TEST(UnitsReaders, TidyCorpusRefusesAnUnknownUnit) {
  const std::string path = WriteFile(ScratchDir() + "/tidy_wh.csv",
                                     "benchmark,power_wh,f_core_mhz,alu\nb1,100,1410,0.5\n");
  ExpectInputError([&] { ReadCorpus(path); }, 1,
                   {"tidy_wh.csv:1: power_wh", "unknown unit in column 'power_wh'",
                    "power_w, power_mw, power_kw or power_uw"});
}

}  // namespace
}  // namespace wattcal
