// Issue 11, the input items: NUL and control bytes in fields (item 2), physical bounds on every
// value read (items 3, 8, 9; util/bounds.h, docs/bounds.md), a UTF-8 byte order mark accepted
// by every reader (item 10). Where the contract is about files the stage is run as a user runs
// it (build/bin/wattcal-<stage> through RunStage): exit 2, FILE:LINE: FIELD, inputs intact and
// no partial output.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <boost/filesystem.hpp>
#include <string>
#include <vector>

#include "ingest/kernel_windows.h"
#include "ingest/power_log.h"
#include "io/corpus_io.h"
#include "io/csv_reader.h"
#include "test_support.h"
#include "util/bounds.h"
#include "util/json_check.h"
#include "util/output.h"
#include "util/errors.h"

namespace wattcal {
namespace {

namespace fs = boost::filesystem;
using ::wattcal::testing::CommandResult;
using ::wattcal::testing::ReadFile;
using ::wattcal::testing::RunStage;
using ::wattcal::testing::ScratchDir;
using ::wattcal::testing::WriteFile;

const char kBom[] = "\xEF\xBB\xBF";

// The small gpmTOOL training file (tests/fixtures/gpmtool; 2 domains, SP, INT, DRAM; rows on
// lines 5-12).
const std::vector<std::string>& kGpmtoolRows = ::wattcal::testing::SmallGpmtoolFixture().rows;

std::string GpmtoolFile(const std::vector<std::string>& rows) {
  return ::wattcal::testing::SmallGpmtoolFixture().Text(rows);
}

std::vector<std::string> WithRow(std::vector<std::string> rows, size_t index,
                                 const std::string& replacement) {
  rows.at(index) = replacement;
  return rows;
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  if (!fs::is_directory(dir)) return names;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Runs wattcal-calibrate on `content`; checks exit 2, FILE:LINE:, the mentions, the input
// unchanged and the output folder empty.
void ExpectCalibrateRejects(const std::string& content, int line,
                            const std::vector<std::string>& mentions) {
  const std::string dir = ScratchDir();
  fs::create_directories(dir + "/in");
  fs::create_directories(dir + "/out");
  const std::string train = WriteFile(dir + "/in/train.csv", content);
  const CommandResult r =
      RunStage("wattcal-calibrate", {"--train", train, "--out", dir + "/out/model.json",
                                     "--export-gpmtool", dir + "/out/model_gpmtool.csv"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(train + ":" + std::to_string(line) + ":"), std::string::npos) << r.output;
  for (const std::string& m : mentions) {
    EXPECT_NE(r.output.find(m), std::string::npos) << "expected '" << m << "' in\n" << r.output;
  }
  EXPECT_TRUE(ListDir(dir + "/out").empty()) << "partial output left behind";
  EXPECT_EQ(ReadFile(train), content) << "the input was changed";
  EXPECT_EQ(ListDir(dir + "/in"), std::vector<std::string>{"train.csv"});
}

// ------------------------------------------------------------------------------ item 2: NUL

TEST(InputNulBytes, NulInsideAGpmtoolFieldIsRejectedNamingFileLineField) {
  // "1\0 83.1325" once read as 1 W: strtod stopped at the NUL.
  const std::string row = std::string("1\0 83.1325", 10) + ",975,3505,0.1,0.0,0.1";
  ExpectCalibrateRejects(GpmtoolFile(WithRow(kGpmtoolRows, 0, row)), 5,
                         {"power_w", "expected a finite number", "1\\x00 83.1325"});
}

TEST(InputNulBytes, NulInsideATidyFieldIsRejected) {
  const std::string content =
      std::string("benchmark,power_w,f_core_mhz,f_mem_mhz,SP,INT,mem:DRAM\n") +
      "b1,99.114,975,3505,0.1,0.0,0.1\n" +
      std::string(
          "b1,104.261,11\0"
          "00,3505,0.1,0.0,0.1\n",
          34);
  const std::string path = WriteFile(ScratchDir() + "/tidy.csv", content);
  try {
    ReadCorpus(path);
    ADD_FAILURE() << "a NUL byte in a number was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 3);
    EXPECT_EQ(e.field(), "f_core_mhz");
  }
}

TEST(InputNulBytes, ParseFiniteDoubleRejectsAnEmbeddedNul) {
  double value = 0.0;
  EXPECT_FALSE(ParseFiniteDouble(std::string("1\0 2", 4), &value));
  EXPECT_FALSE(ParseFiniteDouble(std::string("1\0", 2), &value));
  EXPECT_TRUE(ParseFiniteDouble("83.1325", &value));
}

// Control bytes of an input (a terminal escape sequence) are escaped in every error message.
TEST(InputControlBytes, EscapeSequencesInAFieldAreEscapedInTheMessage) {
  const std::string row = "\x1b[31mred\x1b[0m,975,3505,0.1,0.0,0.1";
  ExpectCalibrateRejects(GpmtoolFile(WithRow(kGpmtoolRows, 0, row)), 5, {"\\x1b[31mred\\x1b[0m"});
  const InputError e("f.csv", 3, "power_w", std::string("got '\x07\x7f\0'", 9));
  EXPECT_EQ(std::string(e.what()), "f.csv:3: power_w: got '\\x07\\x7f\\x00'");
  EXPECT_EQ(std::string(OptionError("--x \x1b").what()), "--x \\x1b");
  EXPECT_EQ(std::string(FitError("a\nb").what()), "a\\x0ab");
}

// ---------------------------------------------------------------------- item 3: the bounds

TEST(InputBounds, TheTableHoldsTheDocumentedLimits) {
  EXPECT_TRUE(WithinBound(PhysicalQuantity::kPower, 700.0));
  EXPECT_TRUE(WithinBound(PhysicalQuantity::kPower, kMaxPowerW));
  EXPECT_FALSE(WithinBound(PhysicalQuantity::kPower, 1e308));
  EXPECT_FALSE(WithinBound(PhysicalQuantity::kPower, -1.0));
  EXPECT_FALSE(WithinBound(PhysicalQuantity::kFrequency, 0.5));
  EXPECT_FALSE(WithinBound(PhysicalQuantity::kFrequency, 2e5));
  EXPECT_TRUE(WithinBound(PhysicalQuantity::kTime, 1.8e9));
  EXPECT_FALSE(WithinBound(PhysicalQuantity::kDuration, 1e299));
  EXPECT_FALSE(WithinBound(PhysicalQuantity::kCount, 1e19));
  EXPECT_TRUE(WithinBound(PhysicalQuantity::kUtilisation, 1.42));  // the RX 580's maximum
  EXPECT_FALSE(WithinBound(PhysicalQuantity::kUtilisation, 1.51));
  EXPECT_FALSE(WithinBound(PhysicalQuantity::kCoefficient, 3.9e301));
  EXPECT_FALSE(WithinBound(PhysicalQuantity::kVoltage, 0.0));
  EXPECT_FALSE(WithinBound(PhysicalQuantity::kPower, std::numeric_limits<double>::quiet_NaN()));
  EXPECT_EQ(BoundViolation(PhysicalQuantity::kPower, 700.0), "");
  EXPECT_EQ(BoundViolation(PhysicalQuantity::kPower, 1e308),
            "power 1e+308 W is outside the physical bound 0 <= power <= 10000 W "
            "(docs/bounds.md)");
}

TEST(InputBounds, CalibrateRejectsAbsurdFinitePowerFrequencyAndUtilisation) {
  ExpectCalibrateRejects(GpmtoolFile(WithRow(kGpmtoolRows, 2, "1e308,975,3505,0.8,0.1,0.05")), 7,
                         {"power_w", "1e+308", "10000 W"});
  ExpectCalibrateRejects(GpmtoolFile(WithRow(kGpmtoolRows, 3, "160.483,1e9,3505,0.8,0.1,0.05")), 8,
                         {"f_core_mhz", "frequency 1000000000 MHz"});
  ExpectCalibrateRejects(GpmtoolFile(WithRow(kGpmtoolRows, 4, "131.007,975,3505,0.0,1.6,0.2")), 9,
                         {"U[INT]", "utilisation 1.6", "1.5"});
}

// ------------------------------------------------------------------------ item 10: the BOM

TEST(InputByteOrderMark, CalibrateAcceptsABomBeforeAGpmtoolOrTidyFile) {
  const std::string dir = ScratchDir();
  const std::string gpm = WriteFile(dir + "/gpm.csv", kBom + GpmtoolFile(kGpmtoolRows));
  CommandResult r = RunStage("wattcal-calibrate", {"--train", gpm, "--out", dir + "/a/model.json"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::string tidy = std::string(kBom) +
                     "# wattcal-tidy default_f_core_mhz=975 default_f_mem_mhz=3505\n" +
                     "benchmark,power_w,f_core_mhz,f_mem_mhz,SP,INT,mem:DRAM\n";
  const char* names[] = {"b1", "b1", "b2", "b2", "b3", "b3", "b4", "b4"};
  for (size_t i = 0; i < kGpmtoolRows.size(); ++i)
    tidy += std::string(names[i]) + "," + kGpmtoolRows[i] + "\n";
  const std::string tidy_path = WriteFile(dir + "/tidy.csv", tidy);
  r = RunStage("wattcal-calibrate", {"--train", tidy_path, "--out", dir + "/b/model.json"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // Accepted is not enough: the model must be the one the same bytes give without the BOM (the
  // BOM read as part of the first field would shift or lose a column).
  const std::string gpm_plain = WriteFile(dir + "/gpm_plain.csv", GpmtoolFile(kGpmtoolRows));
  const std::string tidy_plain =
      WriteFile(dir + "/tidy_plain.csv", tidy.substr(std::string(kBom).size()));
  ASSERT_EQ(RunStage("wattcal-calibrate", {"--train", gpm_plain, "--out", dir + "/c/model.json"})
                .exit_code,
            0);
  ASSERT_EQ(RunStage("wattcal-calibrate", {"--train", tidy_plain, "--out", dir + "/d/model.json"})
                .exit_code,
            0);
  auto without_source = [&](const std::string& path) {
    nlohmann::json j = nlohmann::json::parse(ReadFile(path));
    j.erase("trained_on");
    return j.dump();
  };
  EXPECT_EQ(without_source(dir + "/a/model.json"), without_source(dir + "/c/model.json"));
  EXPECT_EQ(without_source(dir + "/b/model.json"), without_source(dir + "/d/model.json"));
}

TEST(InputByteOrderMark, PowerLogsAndKernelWindowsAcceptABom) {
  const std::string dir = ScratchDir();
  const std::string smi = WriteFile(dir + "/smi.csv", std::string(kBom) +
                                                          "timestamp, power.draw [W]\n"
                                                          "2024/05/01 12:00:00.000, 100.0 W\n");
  const std::string raw = WriteFile(dir + "/raw.csv", std::string(kBom) +
                                                          "timestamp_us,power_mw\n"
                                                          "1000,100000\n");
  const std::string dmon = WriteFile(dir + "/dmon.txt", std::string(kBom) +
                                                            "#Entity   POWER\n"
                                                            "ID        W\n"
                                                            "GPU 0     61.364\n");
  for (const std::string& path : {smi, raw, dmon}) {
    PowerLogOptions options;
    options.dmon_interval_ms = 100;
    PowerLogReader reader(path, options);
    PowerSample s;
    ASSERT_TRUE(reader.Next(&s)) << path;
    EXPECT_GT(s.power_w, 50.0) << path;
  }
  const std::string windows = WriteFile(dir + "/windows.csv", std::string(kBom) +
                                                                  "kernel,start_us,end_us\n"
                                                                  "k,1000,2000\n");
  const std::vector<KernelWindow> w = ReadKernelWindows(windows);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].kernel, "k");
}

// ------------------------------------------------------- items 3, 8: models, validate, perf

// A model whose coefficient is 3.9e301 W/MHz (what calibrate once wrote from a 1e308 W row) is
// refused by validate at input, naming the file, line and field; nothing is written.
TEST(InputBounds, ValidateRefusesAModelWithAnAbsurdCoefficient) {
  const std::string dir = ScratchDir();
  const std::string train = WriteFile(dir + "/train.csv", GpmtoolFile(kGpmtoolRows));
  CommandResult r = RunStage("wattcal-calibrate", {"--train", train, "--out", dir + "/model.json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string model = ReadFile(dir + "/model.json");
  const size_t at = model.find("\"w_per_mhz\": ");
  ASSERT_NE(at, std::string::npos);
  const size_t end = model.find_first_of(",\n}", at + 13);
  model.replace(at + 13, end - at - 13, "3.9e301");
  fs::create_directories(dir + "/in");
  const std::string bad = WriteFile(dir + "/in/bad_model.json", model);
  fs::create_directories(dir + "/out");
  r = RunStage("wattcal-validate",
               {"--mode", "fixed", "--model", bad, "--heldout", train, "--predictions",
                dir + "/out/p.csv", "--metrics", dir + "/out/m.json"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(bad + ":"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("w_per_mhz: coefficient 3.9e+301"), std::string::npos) << r.output;
  EXPECT_TRUE(ListDir(dir + "/out").empty());
}

// perf: a run time of 1e299 s is refused at input (it once gave 1e299 s predictions, exit 0).
TEST(InputBounds, PerfRefusesAbsurdRunTimes) {
  const std::string dir = ScratchDir();
  const std::string specs = std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/";
  CommandResult r = RunStage(
      "wattcal-perf", {"--simulate", specs + "perf_kernels.json", "--out-dir", dir + "/sim", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string actual = ReadFile(dir + "/sim/actual_times.csv");
  const size_t line2 = actual.find('\n') + 1;
  const size_t comma = actual.rfind(',', actual.find('\n', line2));
  actual.replace(comma + 1, actual.find('\n', line2) - comma - 1, "1e299");
  const std::string bad = WriteFile(dir + "/actual_bad.csv", actual);
  fs::create_directories(dir + "/out");
  r = RunStage("wattcal-perf", {"--counters", dir + "/sim/counters.csv", "--targets-mhz",
                                "900,1200", "--out", dir + "/out/times.csv", "--actual", bad,
                                "--validation-out", dir + "/out/validation.json"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(bad + ":2: actual_time_s: duration 1e+299 s is outside"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(ListDir(dir + "/out").empty());
}

// ------------------------------------------------------------- item 9: sweep rows, counters

TEST(InputBounds, ConstantRefusesASweepRowOf1e308Watts) {
  const std::string dir = ScratchDir();
  fs::create_directories(dir + "/in");
  const std::string sweep = WriteFile(dir + "/in/sweep.csv",
                                      "benchmark,power_w,f_core_mhz\n"
                                      "k1,100,1000\n"
                                      "k1,1e308,1100\n");
  fs::create_directories(dir + "/out");
  const CommandResult r =
      RunStage("wattcal-constant", {"--sweep", sweep, "--out", dir + "/out/constant.json"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(sweep + ":3: power_w: power 1e+308 W is outside"), std::string::npos)
      << r.output;
  EXPECT_TRUE(ListDir(dir + "/out").empty());
}

TEST(InputBounds, JsonOutputsNeverHoldNonFiniteNumbers) {
  nlohmann::json j = {{"metrics", {{"mape_pct", std::numeric_limits<double>::quiet_NaN()}}}};
  EXPECT_EQ(FirstNonFiniteNumber(j), "/metrics/mape_pct");
  EXPECT_THROW(DumpJson(j), std::logic_error);
  j["metrics"]["mape_pct"] = 5.5;
  EXPECT_EQ(FirstNonFiniteNumber(j), "");
  EXPECT_NO_THROW(DumpJson(j));
}

// wattcal-ingest --accelwattch-activity with one counter of 1e308 (once an internal error, exit
// 4): exit 2 naming the counters file, line and metric; no output.
TEST(InputBounds, IngestRefusesACounterOf1e308NamingFileLineMetric) {
  const std::string dir = ScratchDir();
  fs::create_directories(dir);
  WriteFile(dir + "/list.cfg", "DYN_INT_ADD 1000\n");
  CommandResult r =
      RunStage("wattcal-synth",
               {"--spec", std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/virtual_volta.json",
                "--out-dir", dir, "--accelwattch-sweeps", "--ubench", dir + "/list.cfg",
                "--f-core-levels-mhz", "1447", "--seed", "1", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string counters = ReadFile(dir + "/counters.csv");
  // Line 3 is the first launch: its last cell becomes 1e308.
  size_t line3 = counters.find('\n', counters.find('\n') + 1) + 1;
  const size_t end3 = counters.find('\n', line3);
  const size_t last = counters.rfind(",\"", end3);
  counters.replace(last + 2, end3 - last - 3, "1e308");
  const std::string bad = WriteFile(dir + "/counters_bad.csv", counters);
  r = RunStage("wattcal-ingest",
               {"--power-log", dir + "/power_log.csv", "--windows", dir + "/windows.csv", "--out",
                dir + "/out_kernels.csv", "--counters", bad, "--description", dir + "/sweep.csv",
                "--accelwattch-activity", dir + "/out_act.csv", "--quiet"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(bad + ":3: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("count 1e+308 is outside"), std::string::npos) << r.output;
  EXPECT_FALSE(::wattcal::testing::FileExists(dir + "/out_act.csv"));
  EXPECT_FALSE(::wattcal::testing::FileExists(dir + "/out_kernels.csv"));
}

// ------------------------------------------------------------------ item 15: integer times

TEST(InputTimes, AOneMicrosecondWindowAtEpoch1p8e9LastsExactly1e6Seconds) {
  const std::string dir = ScratchDir();
  const std::string path = WriteFile(dir + "/windows.csv",
                                     "kernel,start_us,end_us\n"
                                     "k,1800000000000000,1800000000000001\n"
                                     "k,1800000000.000001,1800000000.000002\n");
  std::string windows = ReadFile(path);
  const std::vector<KernelWindow> us = ReadKernelWindows(path);
  ASSERT_EQ(us.size(), 2u);
  EXPECT_EQ(us[0].start_ns, 1800000000000000000LL);
  EXPECT_EQ(us[0].end_ns - us[0].start_ns, 1000);
  EXPECT_EQ(DurationS(us[0]), 1e-6);
  const std::string s_path = WriteFile(dir + "/windows_s.csv",
                                       "kernel,start_s,end_s\n"
                                       "k,1800000000.000001,1800000000.000002\n");
  const std::vector<KernelWindow> s = ReadKernelWindows(s_path);
  EXPECT_EQ(s[0].start_ns, 1800000000000001000LL);
  EXPECT_EQ(DurationS(s[0]), 1e-6);
  const std::string ts_path = WriteFile(dir + "/windows_ts.csv",
                                        "kernel,start,duration_ns\n"
                                        "k,2027/01/15 08:00:00.000001,1000\n");
  const std::vector<KernelWindow> ts = ReadKernelWindows(ts_path);
  EXPECT_EQ(DurationS(ts[0]), 1e-6);
  EXPECT_EQ(ts[0].start_ns % 1000000000, 1000);
}

TEST(InputTimes, WindowTimesOutsideTheBoundsAreRejected) {
  const std::string dir = ScratchDir();
  const std::string path = WriteFile(dir + "/windows.csv",
                                     "kernel,start_s,end_s\n"
                                     "k,1,2\n"
                                     "k,1,1e299\n");
  try {
    ReadKernelWindows(path);
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 3);
    EXPECT_EQ(e.field(), "end_s");
  }
}

}  // namespace
}  // namespace wattcal
