// Tests of PowerLogReader: every real nvidia-smi sample in shared/samples (values read by hand
// from the files), hand-written fixtures for the shapes with no real sample (nounits, [N/A],
// appended runs, several GPUs, raw NVML CSV, dcgmi dmon), unit conversion, and one bad input
// per rule (file, line and column of the InputError).
#include "ingest/power_log.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "test_support.h"
#include "util/errors.h"

namespace wattcal {
namespace {

using ::wattcal::testing::ExpectInputError;
using ::wattcal::testing::FileExists;
using ::wattcal::testing::ScratchDir;
using ::wattcal::testing::WriteFile;

// Times are epoch seconds near 1.7e9: a double resolves them to ~2.4e-7 s.
constexpr double kTimeTolS = 1e-6;
constexpr double kPowerTolW = 1e-9;

std::string SampleFile(const std::string& name) {
  return ::wattcal::testing::SamplesDir() + "/nvidia-smi/" + name;
}

std::string Fixture(const std::string& name) {
  return ::wattcal::testing::FixturePath("power/" + name);
}

#define WATTCAL_REQUIRE_SAMPLE(path) \
  WATTCAL_NEED(                      \
      FileExists(path),              \
      "sample not found: " << (path) << " (expected ../shared/samples beside the checkout)")

struct LogContents {
  std::vector<PowerSample> samples;
  PowerLogFormat format = PowerLogFormat::kNvidiaSmi;
  std::string power_field;
  PowerLogSummary stats;
  bool core = false, mem = false, temp = false;
};

LogContents ReadAll(const std::string& path, const PowerLogOptions& options = {}) {
  PowerLogReader reader(path, options);
  LogContents out;
  PowerSample s;
  while (reader.Next(&s)) out.samples.push_back(s);
  out.format = reader.format();
  out.power_field = reader.power_field();
  out.stats = reader.stats();
  out.core = reader.has_core_clock();
  out.mem = reader.has_memory_clock();
  out.temp = reader.has_temperature();
  return out;
}

const PowerSample& AtLine(const LogContents& log, int64_t line) {
  for (const PowerSample& s : log.samples) {
    if (s.line == line) return s;
  }
  ADD_FAILURE() << "no sample from line " << line;
  static const PowerSample none;
  return none;
}

// ------------------------------------------------------------------ real nvidia-smi samples

// A100 PCIe, `-lms` loop, both power.draw and power.draw.instant, values with units.
TEST(PowerLogSample, A100ReadsEveryRowAndPrefersInstantPower) {
  const std::string path = SampleFile("a100-pcie_query-gpu_units_lms.csv");
  WATTCAL_REQUIRE_SAMPLE(path);
  const LogContents log = ReadAll(path);
  EXPECT_EQ(log.format, PowerLogFormat::kNvidiaSmi);
  EXPECT_EQ(log.power_field, "power.draw.instant");
  ASSERT_EQ(log.samples.size(), 1999u);  // 2000 lines, one header
  EXPECT_TRUE(log.core && log.mem && log.temp);
  EXPECT_EQ(log.stats.missing_power_rows, 0);
  // Line 2: 2023/08/24 22:20:16.285, 0 %, 43, 44, 64.07 W, 64.07 W, 1410 MHz, 1215 MHz
  const PowerSample& first = log.samples.front();
  EXPECT_EQ(first.line, 2);
  EXPECT_NEAR(first.time_s, 1692915616.285, kTimeTolS);
  EXPECT_NEAR(first.power_w, 64.07, kPowerTolW);
  EXPECT_EQ(first.f_core_mhz, 1410.0);
  EXPECT_EQ(first.f_mem_mhz, 1215.0);
  EXPECT_EQ(first.temperature_c, 43.0);
  // Line 3: power.draw 64.07 W but power.draw.instant 63.40 W.
  EXPECT_NEAR(AtLine(log, 3).power_w, 63.40, kPowerTolW);
  // Line 200: 2023/08/24 22:20:19.522, 100 %, 51, 48, 237.13 W, 237.13 W, 1275 MHz, 1215 MHz
  const PowerSample& mid = AtLine(log, 200);
  EXPECT_NEAR(mid.time_s, 1692915616.285 + 3.237, kTimeTolS);
  EXPECT_NEAR(mid.power_w, 237.13, kPowerTolW);
  EXPECT_EQ(mid.f_core_mhz, 1275.0);
  EXPECT_EQ(mid.temperature_c, 51.0);
  // Line 2000: 2023/08/24 22:20:56.506, 100 %, 56, 55, 254.74 W, 254.74 W, 1275 MHz, 1215 MHz
  const PowerSample& last = log.samples.back();
  EXPECT_EQ(last.line, 2000);
  EXPECT_NEAR(last.time_s, 1692915656.506, kTimeTolS);
  EXPECT_NEAR(last.power_w, 254.74, kPowerTolW);
  EXPECT_EQ(last.f_core_mhz, 1275.0);
}

TEST(PowerLogSample, A100PowerFieldOptionSelectsTheAveragedColumn) {
  const std::string path = SampleFile("a100-pcie_query-gpu_units_lms.csv");
  WATTCAL_REQUIRE_SAMPLE(path);
  PowerLogOptions options;
  options.power_field = "power.draw [W]";
  const LogContents log = ReadAll(path, options);
  EXPECT_EQ(log.power_field, "power.draw");
  EXPECT_NEAR(AtLine(log, 3).power_w, 64.07, kPowerTolW);
}

// H100, `-lms 1`: rows every ~3 ms, each reading repeated for ~22 rows; clocks.sm was
// rewritten to `clocks.current.sm [MHz]` in the header.
TEST(PowerLogSample, H100FastLoopWithAliasedClockHeader) {
  const std::string path = SampleFile("h100_power-draw-instant_clocks-sm_lms.csv");
  WATTCAL_REQUIRE_SAMPLE(path);
  const LogContents log = ReadAll(path);
  EXPECT_EQ(log.power_field, "power.draw.instant");
  ASSERT_EQ(log.samples.size(), 1999u);
  EXPECT_TRUE(log.core);
  EXPECT_FALSE(log.mem);
  EXPECT_FALSE(log.temp);
  const PowerSample& first = log.samples.front();
  EXPECT_NEAR(first.time_s, 1693491403.874, kTimeTolS);
  EXPECT_NEAR(first.power_w, 77.08, kPowerTolW);
  EXPECT_EQ(first.f_core_mhz, 1755.0);
  EXPECT_TRUE(std::isnan(first.f_mem_mhz));
  EXPECT_TRUE(std::isnan(first.temperature_c));
  // Line 200: 2023/08/31 14:16:44.692, 77.08 W, 1755 MHz
  EXPECT_NEAR(AtLine(log, 200).time_s, 1693491404.692, kTimeTolS);
  EXPECT_NEAR(AtLine(log, 200).power_w, 77.08, kPowerTolW);
  // Line 594: 2023/08/31 14:16:46.322, 437.37 W, 1440 MHz (the first rise under load)
  EXPECT_NEAR(AtLine(log, 594).power_w, 437.37, kPowerTolW);
  EXPECT_EQ(AtLine(log, 594).f_core_mhz, 1440.0);
  const PowerSample& last = log.samples.back();
  EXPECT_NEAR(last.time_s, 1693491413.070, kTimeTolS);
  EXPECT_NEAR(last.power_w, 338.00, kPowerTolW);
  EXPECT_EQ(last.f_core_mhz, 1230.0);
  // Repeated readings are kept as logged: far fewer distinct values than rows.
  int changes = 0;
  for (size_t i = 1; i < log.samples.size(); ++i) {
    if (log.samples[i].power_w != log.samples[i - 1].power_w) ++changes;
  }
  EXPECT_LT(changes, 200);
}

// GTX 1650, twelve columns incl. name, uuid, pstate; the uuid column names the one GPU.
TEST(PowerLogSample, Gtx1650WithUuidColumn) {
  const std::string path = SampleFile("gtx1650_query-gpu_pstate_units.csv");
  WATTCAL_REQUIRE_SAMPLE(path);
  const LogContents log = ReadAll(path);
  EXPECT_EQ(log.power_field, "power.draw");
  ASSERT_EQ(log.samples.size(), 80u);
  EXPECT_FALSE(log.core);
  EXPECT_TRUE(log.temp);
  EXPECT_NEAR(log.samples.front().time_s, 1728790411.779, kTimeTolS);
  EXPECT_NEAR(log.samples.front().power_w, 19.46, kPowerTolW);
  EXPECT_EQ(log.samples.front().temperature_c, 50.0);
  EXPECT_NEAR(log.samples.back().time_s, 1728790411.779 + 0.918, kTimeTolS);
  EXPECT_NEAR(log.samples.back().power_w, 18.86, kPowerTolW);

  PowerLogOptions by_uuid;
  by_uuid.gpu = "GPU-eced1bd8-b3e7-abfc-0555-6f654cee60a5";
  EXPECT_EQ(ReadAll(path, by_uuid).samples.size(), 80u);
  PowerLogOptions other;
  other.gpu = "GPU-00000000-0000-0000-0000-000000000000";
  ExpectInputError([&] { ReadAll(path, other); }, 0,
                   {"gpu", "no row of GPU", "GPU-eced1bd8-b3e7-abfc-0555-6f654cee60a5"});
}

// `--format=csv,noheader`: needs the column names from the options.
TEST(PowerLogSample, NoheaderNeedsColumnNames) {
  const std::string path = SampleFile("noheader_units_unknown-gpu.csv");
  WATTCAL_REQUIRE_SAMPLE(path);
  ExpectInputError([&] { ReadAll(path); }, 1, {"no header line", "PowerLogOptions::columns"});

  PowerLogOptions options;
  // Column meaning from shared/samples/README.md (by inspection).
  options.columns = {"timestamp",   "utilization.gpu", "utilization.memory", "memory.used",
                     "memory.free", "temperature.gpu", "power.draw"};
  const LogContents log = ReadAll(path, options);
  EXPECT_EQ(log.power_field, "power.draw");
  ASSERT_EQ(log.samples.size(), 1923u);
  EXPECT_EQ(log.samples.front().line, 1);
  EXPECT_NEAR(log.samples.front().time_s, 1777133166.780, kTimeTolS);
  EXPECT_NEAR(log.samples.front().power_w, 11.64, kPowerTolW);
  EXPECT_EQ(log.samples.front().temperature_c, 27.0);
  // Line 200: 2026/04/25 16:22:44.723, 0 %, 0 %, 20137 MiB, 11 MiB, 28, 11.51 W
  EXPECT_NEAR(AtLine(log, 200).power_w, 11.51, kPowerTolW);
  EXPECT_EQ(AtLine(log, 200).temperature_c, 28.0);
  // Line 1923: 2026/04/25 18:46:43.733, ..., 27, 11.28 W
  EXPECT_NEAR(log.samples.back().time_s, 1777133166.780 + 9636.953, kTimeTolS);
  EXPECT_NEAR(log.samples.back().power_w, 11.28, kPowerTolW);

  // Local time two hours ahead of UTC.
  options.utc_offset_h = 2.0;
  EXPECT_NEAR(ReadAll(path, options).samples.front().time_s, 1777133166.780 - 7200.0, kTimeTolS);

  // A wrong column count is reported against the options.
  options.columns.pop_back();
  options.columns.push_back("power.draw");
  options.columns.erase(options.columns.begin() + 1);
  ExpectInputError([&] { ReadAll(path, options); }, 1,
                   {"7 fields", "PowerLogOptions::columns names 6"});
}

// ------------------------------------------------------------------ fixtures (other shapes)

TEST(PowerLogFixture, NounitsValuesTakeTheHeaderUnit) {
  const LogContents log = ReadAll(Fixture("smi_nounits.csv"));
  EXPECT_EQ(log.power_field, "power.draw.instant");
  ASSERT_EQ(log.samples.size(), 4u);
  const double t0 = 1705312800.0;  // 2024/01/15 10:00:00.000 UTC
  const double instant_w[] = {101.25, 150.00, 200.75, 210.00};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(log.samples[i].time_s, t0 + 0.1 * static_cast<double>(i), kTimeTolS);
    EXPECT_NEAR(log.samples[i].power_w, instant_w[i], kPowerTolW);
    EXPECT_EQ(log.samples[i].f_mem_mhz, 10501.0);
  }
  EXPECT_EQ(log.samples[2].f_core_mhz, 1965.0);
  EXPECT_EQ(log.samples[3].temperature_c, 47.0);
}

TEST(PowerLogFixture, MissingValuesSkipRowsOrBecomeNaN) {
  const LogContents log = ReadAll(Fixture("smi_na_values.csv"));
  EXPECT_EQ(log.power_field, "power.draw");
  ASSERT_EQ(log.samples.size(), 2u);
  EXPECT_EQ(log.stats.missing_power_rows, 2);  // [N/A] on line 2, N/A on line 4
  EXPECT_EQ(log.samples[0].line, 3);
  EXPECT_NEAR(log.samples[0].power_w, 15.20, kPowerTolW);
  EXPECT_TRUE(std::isnan(log.samples[0].f_core_mhz));  // [Not Supported]
  EXPECT_EQ(log.samples[1].line, 5);
  EXPECT_NEAR(log.samples[1].power_w, 120.40, kPowerTolW);
  EXPECT_EQ(log.samples[1].f_core_mhz, 1777.0);
  EXPECT_EQ(log.samples[1].temperature_c, 42.0);
}

TEST(PowerLogFixture, AppendedRunsRepeatTheHeader) {
  const LogContents log = ReadAll(Fixture("smi_appended_runs.csv"));
  ASSERT_EQ(log.samples.size(), 5u);
  EXPECT_EQ(log.stats.repeated_headers, 2);
  EXPECT_EQ(log.samples[2].line, 5);
  EXPECT_NEAR(log.samples[2].power_w, 60.0, kPowerTolW);
  EXPECT_EQ(log.samples[2].f_core_mhz, 1395.0);
  EXPECT_TRUE(std::isnan(log.samples[3].temperature_c));
  EXPECT_EQ(log.samples[4].temperature_c, 52.0);  // the third run added temperature.gpu
  EXPECT_TRUE(log.temp);
}

TEST(PowerLogFixture, SeveralGpusNeedTheGpuOption) {
  const std::string path = Fixture("smi_multi_gpu.csv");
  ExpectInputError([&] { ReadAll(path); }, 3,
                   {"column 2 (index)", "several GPUs", "'0' on line 2", "'1' here"});
  PowerLogOptions one;
  one.gpu = "1";
  LogContents log = ReadAll(path, one);
  ASSERT_EQ(log.samples.size(), 3u);
  EXPECT_EQ(log.stats.other_gpu_rows, 3);
  EXPECT_NEAR(log.samples[0].power_w, 65.0, kPowerTolW);
  EXPECT_NEAR(log.samples[1].power_w, 66.0, kPowerTolW);
  EXPECT_NEAR(log.samples[2].power_w, 64.0, kPowerTolW);
  PowerLogOptions by_uuid;
  by_uuid.gpu = "GPU-11111111-2222-3333-4444-555555555555";
  log = ReadAll(path, by_uuid);
  ASSERT_EQ(log.samples.size(), 3u);
  EXPECT_NEAR(log.samples[1].power_w, 250.0, kPowerTolW);
  EXPECT_EQ(log.samples[1].f_core_mhz, 1380.0);
  PowerLogOptions absent;
  absent.gpu = "7";
  ExpectInputError([&] { ReadAll(path, absent); }, 0, {"no row of GPU '7'", "'0'", "'1'"});
}

TEST(PowerLogFixture, WindowsLineEndings) {
  // nvidia-smi on Windows writes CRLF.
  const std::string dir = ScratchDir();
  const std::string path = WriteFile(dir + "/crlf.csv",
                                     "timestamp, power.draw [W], clocks.current.sm [MHz]\r\n"
                                     "2024/01/15 10:00:00.000, 64.07 W, 1410 MHz\r\n"
                                     "2024/01/15 10:00:00.010, 65.00 W, 1395 MHz\r\n");
  const LogContents log = ReadAll(path);
  ASSERT_EQ(log.samples.size(), 2u);
  EXPECT_EQ(log.samples[1].line, 3);
  EXPECT_NEAR(log.samples[1].power_w, 65.0, kPowerTolW);
  EXPECT_EQ(log.samples[1].f_core_mhz, 1395.0);
}

TEST(PowerLogFixture, RawNvmlMicrosecondsAndMilliwatts) {
  const LogContents log = ReadAll(Fixture("nvml_raw_us_mw.csv"));
  EXPECT_EQ(log.format, PowerLogFormat::kNvmlRaw);
  EXPECT_EQ(log.power_field, "power_mw");
  ASSERT_EQ(log.samples.size(), 5u);
  const double power_w[] = {50.0, 52.0, 150.0, 151.0, 151.0};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_NEAR(log.samples[i].time_s, 1700000000.0 + 0.01 * static_cast<double>(i), kTimeTolS);
    EXPECT_NEAR(log.samples[i].power_w, power_w[i], kPowerTolW);
  }
  EXPECT_EQ(log.samples[2].f_core_mhz, 1380.0);
  EXPECT_EQ(log.samples[4].temperature_c, 42.0);
  EXPECT_TRUE(std::isnan(log.samples[0].f_mem_mhz));
}

TEST(PowerLogFixture, RawNvmlOtherUnitsAndGpuColumn) {
  const std::string dir = ScratchDir();
  const std::string path = WriteFile(dir + "/raw.csv",
                                     "timestamp_ms,gpu,power_w,sm_clock_ghz\n"
                                     "1000,0,100.5,1.41\n"
                                     "1000,1,50,1.2\n"
                                     "1015,0,,1.41\n"
                                     "1030,0,101.5,1.395\n");
  PowerLogOptions options;
  options.gpu = "0";
  const LogContents log = ReadAll(path, options);
  ASSERT_EQ(log.samples.size(), 2u);
  EXPECT_EQ(log.stats.missing_power_rows, 0);
  EXPECT_EQ(log.stats.empty_power_rows, 1);  // the empty power cell, counted apart from [N/A]
  EXPECT_EQ(log.stats.first_empty_power_line, 4);
  EXPECT_NEAR(log.samples[0].time_s, 1.0, kTimeTolS);
  EXPECT_NEAR(log.samples[1].time_s, 1.030, kTimeTolS);
  EXPECT_NEAR(log.samples[1].power_w, 101.5, kPowerTolW);
  EXPECT_NEAR(log.samples[1].f_core_mhz, 1395.0, 1e-9);
}

// Issue 11 (item 11): NaN and empty power cells are counted apart from [N/A] and named in a
// warning, with the first line of each.
TEST(PowerLogFixture, EmptyAndNanPowerCellsAreCountedAndNamed) {
  const std::string dir = ScratchDir();
  const std::string path = WriteFile(dir + "/smi.csv",
                                     "timestamp, power.draw [W]\n"
                                     "2024/05/01 12:00:00.000, 100.0 W\n"
                                     "2024/05/01 12:00:00.100, [N/A]\n"
                                     "2024/05/01 12:00:00.200, \n"
                                     "2024/05/01 12:00:00.300, nan\n"
                                     "2024/05/01 12:00:00.400, NaN W\n"
                                     "2024/05/01 12:00:00.500, 101.0 W\n");
  ::testing::internal::CaptureStderr();
  const LogContents log = ReadAll(path, PowerLogOptions());
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(log.samples.size(), 2u);
  EXPECT_EQ(log.stats.missing_power_rows, 1);
  EXPECT_EQ(log.stats.empty_power_rows, 1);
  EXPECT_EQ(log.stats.nan_power_rows, 2);
  EXPECT_EQ(log.stats.first_empty_power_line, 4);
  EXPECT_EQ(log.stats.first_nan_power_line, 5);
  EXPECT_NE(err.find("1 rows with an empty power cell and 2 with NaN were skipped (" + path +
                     ":4, NaN at " + path + ":5 first)"),
            std::string::npos)
      << err;
}

// Issue 11 (item 3): power, clocks, temperature, energy and time outside their physical bounds
// (util/bounds.h) are input errors naming FILE:LINE: FIELD.
TEST(PowerLogFixture, ValuesOutsidePhysicalBoundsAreRejected) {
  const std::string dir = ScratchDir();
  struct Case {
    const char* row;
    const char* expected;
  } cases[] = {
      {"1000,1e308,1410,40,10", "power 1e+308 W is outside the physical bound"},
      {"1000,-5,1410,40,10", "power -5 W is outside the physical bound"},
      {"1000,100,1e12,40,10", "frequency 1000000000000 MHz is outside"},
      {"1000,100,1410,9999,10", "temperature 9999 C is outside"},
      {"1000,100,1410,40,1e300", "energy"},
      {"1e300,100,1410,40,10", "time 1e+297 s is outside"},
  };
  for (const Case& c : cases) {
    const std::string path =
        WriteFile(dir + "/raw.csv", std::string("timestamp_ms,power_w,f_core_mhz,temperature_c,"
                                                "energy_j\n") +
                                        c.row + "\n");
    try {
      ReadAll(path, PowerLogOptions());
      ADD_FAILURE() << "accepted " << c.row;
    } catch (const InputError& e) {
      EXPECT_EQ(e.line(), 2) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.expected), std::string::npos) << e.what();
    }
  }
}

TEST(PowerLogFixture, DcgmiDmonWithDelayOption) {
  const std::string path = Fixture("dcgmi_dmon_two_gpus_d100.txt");
  PowerLogOptions options;
  options.gpu = "0";
  ExpectInputError([&] { ReadAll(path, options); }, 3, {"dmon_interval_ms", "no timestamps"});
  options.dmon_interval_ms = 100.0;
  options.dmon_start_s = 1000.0;
  LogContents log = ReadAll(path, options);
  EXPECT_EQ(log.format, PowerLogFormat::kDcgmiDmon);
  EXPECT_EQ(log.power_field, "POWINST");
  EXPECT_TRUE(log.core && log.mem && log.temp);
  ASSERT_EQ(log.samples.size(), 4u);
  EXPECT_EQ(log.stats.repeated_headers, 1);
  EXPECT_EQ(log.stats.other_gpu_rows, 4);
  const double instant_w[] = {62.032, 80.250, 150.000, 151.500};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(log.samples[i].time_s, 1000.0 + 0.1 * static_cast<double>(i), kTimeTolS);
    EXPECT_NEAR(log.samples[i].power_w, instant_w[i], kPowerTolW);
  }
  EXPECT_EQ(log.samples[0].line, 3);
  EXPECT_EQ(log.samples[3].line, 11);
  EXPECT_EQ(log.samples[3].f_core_mhz, 1380.0);
  EXPECT_EQ(log.samples[3].f_mem_mhz, 1215.0);
  EXPECT_EQ(log.samples[3].temperature_c, 36.0);

  // GPU 1's last POWINST is N/A: skipped and counted.
  options.gpu = "1";
  log = ReadAll(path, options);
  EXPECT_EQ(log.samples.size(), 3u);
  EXPECT_EQ(log.stats.missing_power_rows, 1);
  // Field 155 (the running average) on request.
  options.power_field = "155";
  log = ReadAll(path, options);
  EXPECT_EQ(log.power_field, "POWER");
  EXPECT_NEAR(log.samples[3].power_w, 55.125, kPowerTolW);
  // Without the gpu option the second entity is an error.
  options.gpu.clear();
  ExpectInputError([&] { ReadAll(path, options); }, 4, {"#Entity", "several GPUs"});
}

TEST(PowerLogFixture, DcgmiDmonWithTimestampPrefix) {
  PowerLogOptions options;
  options.utc_offset_h = -5.0;  // logged on a machine 5 h behind UTC
  const LogContents log = ReadAll(Fixture("dcgmi_dmon_ts_prefixed.txt"), options);
  EXPECT_EQ(log.format, PowerLogFormat::kDcgmiDmon);
  ASSERT_EQ(log.samples.size(), 3u);
  EXPECT_EQ(log.stats.missing_power_rows, 1);
  const double t0 = 1714564800.0 + 5 * 3600.0;  // 2024-05-01T12:00:00 local = 17:00 UTC
  EXPECT_NEAR(log.samples[0].time_s, t0 + 0.0503, kTimeTolS);
  EXPECT_NEAR(log.samples[1].time_s, t0 + 0.1505, kTimeTolS);
  EXPECT_NEAR(log.samples[2].time_s, t0 + 0.2006, kTimeTolS);
  EXPECT_NEAR(log.samples[2].power_w, 300.0, kPowerTolW);
  EXPECT_EQ(log.samples[2].f_core_mhz, 1395.0);
  EXPECT_EQ(log.samples[2].temperature_c, 42.0);
}

TEST(PowerLogFixture, DcgmiDmonEpochPrefixAndErrors) {
  const std::string dir = ScratchDir();
  const std::string good = WriteFile(dir + "/epoch.txt",
                                     "1714564800.000 #Entity   POWER\n"
                                     "1714564800.001 ID        mW\n"
                                     "1714564800.010 GPU 0     61364.000\n"
                                     "1714564800.020 GPU 0     62000.000\n");
  const LogContents log = ReadAll(good);
  ASSERT_EQ(log.samples.size(), 2u);
  EXPECT_NEAR(log.samples[0].time_s, 1714564800.010, kTimeTolS);
  EXPECT_NEAR(log.samples[0].power_w, 61.364, kPowerTolW);  // mW from the units line

  const std::string short_row = WriteFile(dir + "/short.txt",
                                          "#Entity   POWER     SMCLK\n"
                                          "ID        W         MHz\n"
                                          "GPU 0     61.364\n");
  PowerLogOptions options;
  options.dmon_interval_ms = 100.0;
  ExpectInputError([&] { ReadAll(short_row, options); }, 3,
                   {"1 values after 'GPU 0'", "header on line 1 names 2", "cut line"});
  const std::string bad_unit = WriteFile(dir + "/unit.txt",
                                         "#Entity   POWER     SMCLK\n"
                                         "ID        kJ        MHz\n"
                                         "GPU 0     61.364    1410\n");
  ExpectInputError([&] { ReadAll(bad_unit, options); }, 2, {"POWER", "unknown power unit 'kJ'"});
  const std::string no_power = WriteFile(dir + "/nopower.txt",
                                         "#Entity   SMACT     SMCLK\n"
                                         "ID                  MHz\n"
                                         "GPU 0     0.5       1410\n");
  ExpectInputError([&] { ReadAll(no_power, options); }, 1, {"no power field", "157"});
}

// ------------------------------------------------------------------ units and values

TEST(PowerLogUnits, ValuesCarryTheirOwnUnits) {
  const std::string dir = ScratchDir();
  const std::string path =
      WriteFile(dir + "/units.csv",
                "timestamp, power.draw [W], clocks.sm [MHz], clocks.mem [MHz]\n"
                "2024/01/15 10:00:00.000, 64070 mW, 1.41 GHz, 1215000 kHz\n"
                "2024/01/15 10:00:00.010, 0.064 kW, 1410 MHz, 1215 MHz\n"
                "2024/01/15 10:00:00.020, 65, 1410, 1215\n");
  const LogContents log = ReadAll(path);
  ASSERT_EQ(log.samples.size(), 3u);
  EXPECT_NEAR(log.samples[0].power_w, 64.07, 1e-12);
  EXPECT_NEAR(log.samples[0].f_core_mhz, 1410.0, 1e-9);
  EXPECT_NEAR(log.samples[0].f_mem_mhz, 1215.0, 1e-9);
  EXPECT_NEAR(log.samples[1].power_w, 64.0, 1e-12);
  EXPECT_NEAR(log.samples[2].power_w, 65.0, 1e-12);  // bare value: the header's [W]
}

TEST(PowerLogUnits, HeaderInMilliwatts) {
  const std::string dir = ScratchDir();
  const std::string path = WriteFile(dir + "/mw.csv",
                                     "timestamp, power.draw [mW]\n"
                                     "2024/01/15 10:00:00.000, 64070\n");
  EXPECT_NEAR(ReadAll(path).samples.at(0).power_w, 64.07, 1e-12);
}

TEST(PowerLogUnits, UnknownUnitNamesFileLineAndColumn) {
  const std::string dir = ScratchDir();
  const std::string path = WriteFile(dir + "/volts.csv",
                                     "timestamp, power.draw [W]\n"
                                     "2024/01/15 10:00:00.000, 64.07 W\n"
                                     "2024/01/15 10:00:00.010, 64.07 V\n");
  ExpectInputError([&] { ReadAll(path); }, 3,
                   {path + ":3: column 2 (power.draw [W])", "unknown power unit 'V'"});
  const std::string header = WriteFile(dir + "/header.csv",
                                       "timestamp, power.draw [V]\n"
                                       "2024/01/15 10:00:00.000, 64.07\n");
  ExpectInputError([&] { ReadAll(header); }, 1, {"column 2 (power.draw [V])", "'[V]'"});
  const std::string clock = WriteFile(dir + "/clock.csv",
                                      "timestamp, power.draw [W], clocks.sm [MHz]\n"
                                      "2024/01/15 10:00:00.000, 64.07 W, 1410 rpm\n");
  // (Frequency words match in any case since the one unit table, io/units.h: "1410 Mhz" is
  // read as MHz, as counters read ncu's "Ghz".)
  ExpectInputError([&] { ReadAll(clock); }, 2, {"column 3 (clocks.sm [MHz])", "'rpm'"});
  const std::string garbage = WriteFile(dir + "/garbage.csv",
                                        "timestamp, power.draw [W]\n"
                                        "2024/01/15 10:00:00.000, lots\n");
  ExpectInputError([&] { ReadAll(garbage); }, 2, {"column 2", "got 'lots'"});
}

// ------------------------------------------------------------------ errors

TEST(PowerLogErrors, EmptyAndHeaderOnlyLogs) {
  const std::string dir = ScratchDir();
  ExpectInputError([&] { ReadAll(WriteFile(dir + "/empty.csv", "")); }, 0, {"empty power log"});
  ExpectInputError([&] { ReadAll(WriteFile(dir + "/blank.csv", "\n  \n")); }, 0,
                   {"only blank lines"});
  ExpectInputError([&] { ReadAll(WriteFile(dir + "/header.csv", "timestamp, power.draw [W]\n")); },
                   0, {"no power readings"});
  ExpectInputError(
      [&] {
        ReadAll(WriteFile(dir + "/allna.csv",
                          "timestamp, power.draw [W]\n2024/01/15 10:00:00.000, [N/A]\n"));
      },
      0, {"all 1 rows have a missing power value"});
  ExpectInputError([&] { ReadAll(dir + "/absent.csv"); }, 0, {"cannot open"});
}

TEST(PowerLogErrors, CutLastLine) {
  const std::string dir = ScratchDir();
  // The logger was killed mid-write: the last line has no end-of-line.
  const std::string cut = WriteFile(dir + "/cut.csv",
                                    "timestamp, power.draw [W], clocks.sm [MHz]\n"
                                    "2024/01/15 10:00:00.000, 64.07 W, 1410 MHz\n"
                                    "2024/01/15 10:00:00.010, 64.0");
  ExpectInputError([&] { ReadAll(cut); }, 3, {cut + ":3", "no end-of-line", "cut"});
  // A line cut short inside the file (e.g. two logs concatenated).
  const std::string short_row = WriteFile(dir + "/short.csv",
                                          "timestamp, power.draw [W], clocks.sm [MHz]\n"
                                          "2024/01/15 10:00:00.000, 64.07 W\n"
                                          "2024/01/15 10:00:00.010, 64.07 W, 1410 MHz\n");
  ExpectInputError([&] { ReadAll(short_row); }, 2,
                   {"2 fields", "the header on line 1 names 3", "cut line"});
  const std::string bad_time = WriteFile(dir + "/time.csv",
                                         "timestamp, power.draw [W]\n"
                                         "2024/01/15 10:00:0, 64.07 W\n");
  ExpectInputError([&] { ReadAll(bad_time); }, 2,
                   {"column 1 (timestamp)", "YYYY/MM/DD HH:MM:SS.mmm"});
}

TEST(PowerLogErrors, TimeGoingBackwards) {
  const std::string dir = ScratchDir();
  const std::string path = WriteFile(dir + "/back.csv",
                                     "timestamp, power.draw [W]\n"
                                     "2024/01/15 10:00:00.000, 60 W\n"
                                     "2024/01/15 10:00:00.010, 61 W\n"
                                     "2024/01/15 10:00:00.010, 61 W\n"  // same time: fine
                                     "2024/01/15 10:00:00.005, 62 W\n");
  ExpectInputError([&] { ReadAll(path); }, 5, {"time", "backwards", "on line 4"});
}

TEST(PowerLogErrors, MissingColumnsAndBadOptions) {
  const std::string dir = ScratchDir();
  ExpectInputError(
      [&] {
        ReadAll(
            WriteFile(dir + "/notime.csv", "power.draw [W], clocks.sm [MHz]\n60 W, 1410 MHz\n"));
      },
      1, {"no timestamp column", "never assumes a sampling period"});
  ExpectInputError(
      [&] {
        ReadAll(WriteFile(dir + "/nopower.csv",
                          "timestamp, clocks.sm [MHz]\n2024/01/15 10:00:00.000, 1410 MHz\n"));
      },
      1, {"no power column"});
  PowerLogOptions options;
  options.power_field = "power.draw.average";
  ExpectInputError(
      [&] {
        ReadAll(WriteFile(dir + "/draw.csv",
                          "timestamp, power.draw [W]\n2024/01/15 10:00:00.000, 60 W\n"),
                options);
      },
      1, {"power_field", "no column 'power.draw.average'"});
  options.power_field.clear();
  options.gpu = "0";
  ExpectInputError(
      [&] {
        ReadAll(WriteFile(dir + "/noid.csv",
                          "timestamp, power.draw [W]\n2024/01/15 10:00:00.000, 60 W\n"),
                options);
      },
      1, {"gpu", "no column to tell GPUs apart"});
  ExpectInputError(
      [&] { ReadAll(WriteFile(dir + "/rawunit.csv", "timestamp_xs,power_mw\n1,2\n")); }, 1,
      {"column 1 (timestamp_xs)", "unknown time unit 'xs'"});
  ExpectInputError(
      [&] { ReadAll(WriteFile(dir + "/rawnum.csv", "timestamp_us,power_mw\n1,2\n2,many\n")); }, 3,
      {"column 2 (power_mw)", "got 'many'"});
  // A new header that switches between averaged and instant power.
  ExpectInputError(
      [&] {
        ReadAll(WriteFile(dir + "/switch.csv",
                          "timestamp, power.draw [W]\n2024/01/15 10:00:00.000, 60 W\n"
                          "timestamp, power.draw.instant [W]\n2024/01/15 10:00:01.000, 60 W\n"));
      },
      3, {"changes the power column", "never mixed"});
}

TEST(PowerLogOptions, DefaultsPassAndEachRuleNamesItsField) {
  std::string error;
  EXPECT_TRUE(PowerLogOptions().Check(&error)) << error;
  PowerLogOptions o;
  o.utc_offset_h = std::nan("");
  EXPECT_FALSE(o.Check(&error));
  EXPECT_NE(error.find("utc_offset_h = nan"), std::string::npos) << error;
  o = PowerLogOptions();
  o.dmon_interval_ms = -1.0;
  EXPECT_FALSE(o.Check(&error));
  EXPECT_NE(error.find("dmon_interval_ms = -1"), std::string::npos) << error;
  o = PowerLogOptions();
  o.columns = {"timestamp", " "};
  EXPECT_FALSE(o.Check(&error));
  EXPECT_NE(error.find("columns[1]"), std::string::npos) << error;
  EXPECT_THROW(PowerLogReader(Fixture("smi_nounits.csv"), o), OptionError);
}

TEST(PowerLogTimestamp, ParsesNvidiaSmiAndIsoForms) {
  double t = 0.0;
  const std::string a = "2023/08/24 22:20:16.285";
  ASSERT_TRUE(ParseSmiTimestamp(a.data(), a.size(), &t));
  EXPECT_NEAR(t, 1692915616.285, kTimeTolS);
  const std::string b = "2024-02-29T23:59:59.123456789123";  // leap day, extra digits
  ASSERT_TRUE(ParseSmiTimestamp(b.data(), b.size(), &t));
  EXPECT_NEAR(t, 1709251199.123456789, kTimeTolS);
  const std::string c = "1970/01/01 00:00:00";
  ASSERT_TRUE(ParseSmiTimestamp(c.data(), c.size(), &t));
  EXPECT_EQ(t, 0.0);
  for (const std::string bad :
       {"2023/02/29 00:00:00", "2023/08/24 24:00:00", "2023/08/24", "2023/08-24 22:20:16",
        "2023/08/24 22:20:16.", "yesterday", "2023/08/24 22:20:16.285 W"}) {
    EXPECT_FALSE(ParseSmiTimestamp(bad.data(), bad.size(), &t)) << bad;
  }
}

// ------------------------------------------------------------------ energy counter, reasons,
// power limit and power kind

// A raw NVML log with both power columns: the instantaneous one is chosen, the energy counter is
// read in joules, the reasons mask from hex or decimal, the limit in watts.
TEST(PowerLogRaw, EnergyCounterReasonsLimitAndInstantPowerPreferred) {
  const std::string dir = ScratchDir();
  const std::string path = WriteFile(
      dir + "/nvml.csv",
      "timestamp_us,power_mw,power_instant_mw,energy_mj,power_limit_mw,clocks_event_reasons,"
      "sm_clock_mhz\n"
      "1000000,71158,71014,3001646,700000,0x0000000000000001,345\n"
      "1005000,71158,90000,3001646,700000,4,1980\n"
      "1010000,80000,95000,[N/A],650000,[N/A],1965\n");
  PowerLogReader reader(path, PowerLogOptions());
  PowerSample s;
  ASSERT_TRUE(reader.Next(&s));
  EXPECT_EQ(reader.power_field(), "power_instant_mw");
  EXPECT_EQ(reader.power_kind(), PowerKind::kInstant);
  EXPECT_TRUE(reader.has_energy_counter());
  EXPECT_TRUE(reader.has_clock_reasons());
  EXPECT_TRUE(reader.has_power_limit());
  EXPECT_NEAR(s.power_w, 71.014, kPowerTolW);
  EXPECT_NEAR(s.energy_j, 3001.646, 1e-9);
  EXPECT_NEAR(s.power_limit_w, 700.0, kPowerTolW);
  EXPECT_TRUE(s.has_clock_reasons);
  EXPECT_EQ(s.clock_reasons, kClockReasonGpuIdle);
  ASSERT_TRUE(reader.Next(&s));
  EXPECT_EQ(s.clock_reasons, kClockReasonSwPowerCap);  // decimal 4
  ASSERT_TRUE(reader.Next(&s));
  EXPECT_TRUE(std::isnan(s.energy_j));
  EXPECT_FALSE(s.has_clock_reasons);
  EXPECT_EQ(s.clock_reasons, 0u);
  EXPECT_NEAR(s.power_limit_w, 650.0, kPowerTolW);
  EXPECT_FALSE(reader.Next(&s));
  EXPECT_STREQ(PowerKindName(reader.power_kind()), "instant");
}

// power_mw beside power_instant_mw is the averaged reading (nvmlDeviceGetPowerUsage on Ampere
// and newer); alone it is of unknown kind. energy_uj and energy_j are converted to joules.
TEST(PowerLogRaw, PowerKindOfTheRawColumns) {
  const std::string dir = ScratchDir();
  const std::string both =
      WriteFile(dir + "/both.csv",
                "timestamp_us,power_mw,power_instant_mw,energy_uj\n1,100000,90000,5000000\n");
  PowerLogOptions options;
  options.power_field = "power_mw";
  {
    PowerLogReader reader(both, options);
    PowerSample s;
    ASSERT_TRUE(reader.Next(&s));
    EXPECT_EQ(reader.power_kind(), PowerKind::kAveraged);
    EXPECT_NEAR(s.power_w, 100.0, kPowerTolW);
    EXPECT_NEAR(s.energy_j, 5.0, 1e-12);
    EXPECT_FALSE(reader.has_clock_reasons());
    EXPECT_FALSE(reader.has_power_limit());
    EXPECT_TRUE(std::isnan(s.power_limit_w));
  }
  const std::string alone =
      WriteFile(dir + "/alone.csv", "timestamp_s,power_w,energy_j\n1,100,12.5\n");
  PowerLogReader reader(alone, PowerLogOptions());
  PowerSample s;
  ASSERT_TRUE(reader.Next(&s));
  EXPECT_EQ(reader.power_kind(), PowerKind::kUnknown);
  EXPECT_EQ(s.energy_j, 12.5);
  const std::string none = WriteFile(dir + "/none.csv", "timestamp_s,power_w\n1,100\n");
  PowerLogReader plain(none, PowerLogOptions());
  ASSERT_TRUE(plain.Next(&s));
  EXPECT_FALSE(plain.has_energy_counter());
  EXPECT_TRUE(std::isnan(s.energy_j));
}

// nvidia-smi: clocks_throttle_reasons.active (older drivers) and enforced.power.limit; the
// power column's kind follows its name.
TEST(PowerLogSmi, ThrottleReasonsEnforcedLimitAndPowerKind) {
  const std::string dir = ScratchDir();
  const std::string path = WriteFile(
      dir + "/smi.csv",
      "timestamp, power.draw [W], power.draw.instant [W], power.limit [W], "
      "enforced.power.limit [W], clocks_throttle_reasons.active\n"
      "2026/11/24 11:30:42.944, 71.12 W, 71.01 W, 700.00 W, 650.00 W, 0x0000000000000024\n"
      "2026/11/24 11:30:42.964, 71.12 W, 71.01 W, 700.00 W, 650.00 W, [N/A]\n");
  LogContents log = ReadAll(path);
  {
    PowerLogReader reader(path, PowerLogOptions());
    PowerSample s;
    ASSERT_TRUE(reader.Next(&s));
    EXPECT_EQ(reader.power_field(), "power.draw.instant");
    EXPECT_EQ(reader.power_kind(), PowerKind::kInstant);
    EXPECT_FALSE(reader.has_energy_counter());
    EXPECT_TRUE(reader.has_clock_reasons());
    EXPECT_TRUE(reader.has_power_limit());
    EXPECT_EQ(s.clock_reasons, kClockReasonSwPowerCap | kClockReasonSwThermalSlowdown);
    EXPECT_NEAR(s.power_limit_w, 650.0, kPowerTolW);  // the enforced limit
    EXPECT_TRUE(std::isnan(s.energy_j));
    ASSERT_TRUE(reader.Next(&s));
    EXPECT_FALSE(s.has_clock_reasons);
  }
  for (const char* field : {"power.draw", "power.draw.average"}) {
    const std::string avg = WriteFile(
        dir + "/avg.csv",
        "timestamp, power.draw [W], power.draw.average [W]\n2026/11/24 11:30:42.944, 1 W, 2 W\n");
    PowerLogOptions options;
    options.power_field = field;
    PowerLogReader reader(avg, options);
    PowerSample s;
    ASSERT_TRUE(reader.Next(&s));
    EXPECT_EQ(reader.power_kind(), PowerKind::kAveraged) << field;
  }
  EXPECT_EQ(log.samples.size(), 2u);
}

TEST(PowerLogErrors, BadClockReasonsNameTheLineAndColumn) {
  const std::string dir = ScratchDir();
  const std::string path =
      WriteFile(dir + "/smi.csv",
                "timestamp, power.draw.instant [W], clocks_event_reasons.active\n"
                "2026/11/24 11:30:42.944, 71.01 W, 0x1\n"
                "2026/11/24 11:30:42.964, 71.01 W, 0xZZ\n");
  ExpectInputError([&] { ReadAll(path); }, 3,
                   {path + ":3", "clocks_event_reasons.active", "bitmask", "0xZZ"});
}

// ------------------------------------------------------------------ the H100 capture

// Every capture folder's NVML and nvidia-smi logs stream to the end, with the columns the
// capture's README lists; first rows checked by hand against the files.
TEST(PowerLogH100Capture, EveryFolderStreams) {
  WATTCAL_REQUIRE_DATASETS();
  for (const char* folder : {"ubench_random", "mix_random", "ubench_zeros", "mix_zeros"}) {
    SCOPED_TRACE(folder);
    const std::string base = ::wattcal::testing::Dataset(std::string("h100_capture/") + folder);
    {
      PowerLogReader nvml(base + "/nvml_power.csv", PowerLogOptions());
      PowerSample s;
      int64_t rows = 0;
      while (nvml.Next(&s)) ++rows;
      EXPECT_GT(rows, 10000);
      EXPECT_EQ(nvml.stats().missing_power_rows, 0);
      EXPECT_EQ(nvml.format(), PowerLogFormat::kNvmlRaw);
      EXPECT_EQ(nvml.power_field(), "power_instant_mw");
      EXPECT_EQ(nvml.power_kind(), PowerKind::kInstant);
      EXPECT_TRUE(nvml.has_energy_counter());
      EXPECT_TRUE(nvml.has_core_clock());
      EXPECT_TRUE(nvml.has_memory_clock());
      EXPECT_FALSE(nvml.has_clock_reasons());
      EXPECT_FALSE(nvml.has_power_limit());
      EXPECT_FALSE(std::isnan(s.energy_j));
    }
    {
      PowerLogReader smi(base + "/nvidia_smi_power.csv", PowerLogOptions());
      PowerSample s;
      int64_t rows = 0;
      while (smi.Next(&s)) {
        ++rows;
        ASSERT_TRUE(s.has_clock_reasons) << "line " << s.line;
        EXPECT_NEAR(s.power_limit_w, 700.0, kPowerTolW);
      }
      EXPECT_GT(rows, 3000);
      EXPECT_EQ(smi.format(), PowerLogFormat::kNvidiaSmi);
      EXPECT_EQ(smi.power_field(), "power.draw.instant");
      EXPECT_EQ(smi.power_kind(), PowerKind::kInstant);
      EXPECT_FALSE(smi.has_energy_counter());
      EXPECT_TRUE(smi.has_clock_reasons());
      EXPECT_TRUE(smi.has_power_limit());
    }
  }
  // ubench_random line 2 of each log.
  const std::string base = ::wattcal::testing::Dataset("h100_capture/ubench_random");
  PowerLogReader nvml(base + "/nvml_power.csv", PowerLogOptions());
  PowerSample s;
  ASSERT_TRUE(nvml.Next(&s));
  EXPECT_EQ(s.line, 2);
  EXPECT_NEAR(s.time_s, 1795519843.106649, kTimeTolS);
  EXPECT_NEAR(s.power_w, 71.014, kPowerTolW);
  EXPECT_NEAR(s.energy_j, 3001.646, 1e-9);
  EXPECT_EQ(s.f_core_mhz, 345.0);
  EXPECT_EQ(s.f_mem_mhz, 2619.0);
  PowerLogReader smi(base + "/nvidia_smi_power.csv", PowerLogOptions());
  ASSERT_TRUE(smi.Next(&s));
  EXPECT_NEAR(s.power_w, 71.01, kPowerTolW);
  EXPECT_EQ(s.clock_reasons, kClockReasonGpuIdle);
  EXPECT_NEAR(s.power_limit_w, 700.0, kPowerTolW);
  EXPECT_EQ(s.f_core_mhz, 345.0);
}

}  // namespace
}  // namespace wattcal
