// Tests of ReadCounters on the real profiler exports in ../shared/samples (values checked
// by hand against the files), on small fixtures for what no public sample shows (a raw
// page with its units row, ncu's digit grouping, decimal commas, n/a, rule rows), on one
// bad input per error, and of NcuDetailsCsv read back exactly.
#include "ingest/counters.h"

#include <gtest/gtest.h>

#include <boost/filesystem.hpp>
#include <array>
#include <cmath>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "certified_values.h"
#include "test_support.h"
#include "util/errors.h"

namespace wattcal {
namespace {

using ::wattcal::testing::ScratchDir;
using ::wattcal::testing::SeedFromTestName;
using ::wattcal::testing::WriteFile;

using ::wattcal::testing::Sample;
using ::wattcal::testing::SamplesDir;
#define REQUIRE_SAMPLES() WATTCAL_REQUIRE_SAMPLES()

std::string Fixture(const std::string& name) { return ::wattcal::testing::FixturePath("" + name); }

// Relative tolerance for values averaged over launches (the hand sums: certified_values.h, recomputed
// by scripts/certify/hand_values.py).
constexpr double kMeanRelTol = 1e-12;

void ExpectRel(double actual, double expected, double rel_tol = kMeanRelTol) {
  EXPECT_NEAR(actual, expected, std::fabs(expected) * rel_tol + 1e-300)
      << "actual " << actual << ", expected " << expected;
}

const KernelCounters& Find(const std::vector<KernelCounters>& kernels, const std::string& name,
                           const std::string& benchmark = "") {
  for (const KernelCounters& k : kernels) {
    if (k.kernel == name && k.benchmark == benchmark) return k;
  }
  static const KernelCounters kNone;
  ADD_FAILURE() << "kernel '" << name << "' not found";
  return kNone;
}

double Metric(const KernelCounters& k, const std::string& name) {
  const auto it = k.metrics.find(name);
  if (it == k.metrics.end()) {
    ADD_FAILURE() << "kernel '" << k.kernel << "' has no metric '" << name << "'";
    return NAN;
  }
  return it->second;
}

// Runs ReadCounters on `content` and returns the InputError it throws.
InputError ReadError(const std::string& content) {
  const std::string path = WriteFile(ScratchDir() + "/bad.csv", content);
  try {
    ReadCounters(path);
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), path);
    return e;
  }
  ADD_FAILURE() << "no InputError for:\n" << content;
  return InputError("", 0, "", "");
}

// ---- Real samples ------------------------------------------------------------------------

TEST(CountersNcuSample, AwsDetailsPageWithAppStdoutBeforeTheCsv) {
  REQUIRE_SAMPLES();
  CounterFormat format;
  const auto kernels = ReadCounters(
      Sample("ncu/nvnsightcucli-2020_details-page_csv_with-app-stdout_v100-aws.csv"), &format);
  EXPECT_EQ(format, CounterFormat::kNcuDetails);
  ASSERT_EQ(kernels.size(), 2u);
  // Kernel names keep their commas; IDs 0,2,...,12 are Kernel2, 1,3,...,11 Kernel.
  EXPECT_EQ(kernels[0].kernel, "Kernel2(bool*,bool*,bool*,bool*,int)");
  EXPECT_EQ(kernels[1].kernel, "Kernel(Node*,int*,bool*,bool*,bool*,int*,int)");
  EXPECT_EQ(kernels[0].launches, 7);
  EXPECT_EQ(kernels[1].launches, 6);
  EXPECT_EQ(kernels[0].line, 18);  // header on line 17 after 16 lines of app output
  EXPECT_EQ(kernels[1].line, 44);
  // Line 23: "Duration","nsecond","3200"; the mean of the 7 launches is 22208/7 ns.
  ExpectRel(Metric(kernels[0], "Duration"), 22208.0 / 7.0 * 1e-9);
  ExpectRel(Metric(kernels[0], "Duration"), certified::kAwsKernel2DurationS.value);
  ExpectRel(Metric(kernels[1], "Duration"), 49760.0 / 6.0 * 1e-9);
  ExpectRel(Metric(kernels[1], "Duration"), certified::kAwsKernelDurationS.value);
  // Line 18: "Memory Frequency","cycle/second","645000000" is launch 0 of 7.
  ExpectRel(Metric(kernels[0], "Memory Frequency"), certified::kAwsKernel2MemoryFrequencyHz.value);
  ExpectRel(Metric(kernels[0], "SM Frequency"), certified::kAwsKernel2SmFrequencyHz.value);
  ExpectRel(Metric(kernels[0], "Achieved Occupancy"),
            certified::kAwsKernel2AchievedOccupancyPct.value);  // percent
  EXPECT_EQ(Metric(kernels[1], "Registers Per Thread"), 21.0);
  EXPECT_EQ(Metric(kernels[0], "Dynamic Shared Memory Per Block"), 0.0);  // byte/block
  EXPECT_EQ(kernels[0].metrics.size(), 26u);
}

TEST(CountersNcuSample, LassenDetailsPageWithoutArgumentLists) {
  REQUIRE_SAMPLES();
  const auto kernels = ReadCounters(
      Sample("ncu/nvnsightcucli-2020_details-page_csv_with-app-stdout_v100-lassen.csv"));
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].kernel, "Kernel2");
  EXPECT_EQ(kernels[1].kernel, "Kernel");
  EXPECT_EQ(kernels[0].line, 17);
  // Line 32: "Memory Throughput","byte/second","5986301369.86" (launch 0 of 7).
  ExpectRel(Metric(kernels[0], "Memory Throughput"),
            certified::kLassenKernel2MemoryThroughputBps.value);
  ExpectRel(Metric(kernels[1], "Memory Throughput"),
            certified::kLassenKernelMemoryThroughputBps.value);
  ExpectRel(Metric(kernels[0], "Duration"), certified::kLassenKernel2DurationS.value);
  EXPECT_EQ(kernels[0].metrics.size(), 52u);
}

TEST(CountersNvprofSample, MetricsAllWithUnitSuffixesAndLevels) {
  REQUIRE_SAMPLES();
  CounterFormat format;
  const auto kernels = ReadCounters(Sample("nvprof/nvprof_csv_metrics-all_k20c.csv"), &format);
  EXPECT_EQ(format, CounterFormat::kNvprofMetrics);
  ASSERT_EQ(kernels.size(), 1u);
  const KernelCounters& k = kernels[0];
  EXPECT_EQ(k.kernel, "__kernel___forma_kernel__0__(float*, int, int, int, int, int, int, float*)");
  EXPECT_EQ(k.launches, 2);  // Invocations
  EXPECT_EQ(k.line, 7);
  EXPECT_EQ(k.metrics.size(), 124u);
  // Line 22: dram_read_throughput Avg 24.389612GB/s -> bytes per second (SI).
  ExpectRel(Metric(k, "dram_read_throughput"), 24.389612e9);
  // Line 66: sysmem_write_throughput Avg 2.758000KB/s.
  ExpectRel(Metric(k, "sysmem_write_throughput"), 2758.0);
  // Line 39: issue_slot_utilization Avg 49.000666% stays in percent.
  ExpectRel(Metric(k, "issue_slot_utilization"), 49.000666);
  // Line 87: l1_shared_utilization "Mid (5)" -> level 5; line 93: alu "Mid (4)".
  EXPECT_EQ(Metric(k, "l1_shared_utilization"), 5.0);
  EXPECT_EQ(Metric(k, "alu_fu_utilization"), 4.0);
  EXPECT_EQ(Metric(k, "cf_fu_utilization"), 1.0);
  // Line 75: flop_count_sp_fma 16776911424 (a count).
  EXPECT_EQ(Metric(k, "flop_count_sp_fma"), 16776911424.0);
  ExpectRel(Metric(k, "ipc"), 2.489326);
}

TEST(CountersNvprofSample, MetricsSubsetSeveralKernels) {
  REQUIRE_SAMPLES();
  const auto kernels = ReadCounters(Sample("nvprof/nvprof_csv_metrics-subset_k20c.csv"));
  ASSERT_EQ(kernels.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(kernels[i].kernel,
              "__kernel___forma_kernel__" + std::to_string(i) + "__(float*, int, int, float*)");
    EXPECT_EQ(kernels[i].launches, 3);
    EXPECT_EQ(kernels[i].metrics.size(), 19u);
  }
  // Line 11: inst_issued Avg 134326434.
  EXPECT_EQ(Metric(kernels[0], "inst_issued"), 134326434.0);
  ExpectRel(Metric(kernels[0], "stall_exec_dependency"), 17.931227);
}

TEST(CountersAccelWattchSample, HwPerfKeyedByBenchmarkAndKernel) {
  REQUIRE_SAMPLES();
  CounterFormat format;
  const auto kernels = ReadCounters(Sample("accelwattch/hw_perf.csv"), &format);
  EXPECT_EQ(format, CounterFormat::kAccelWattchHwPerf);
  ASSERT_EQ(kernels.size(), 25u);
  // Line 2.
  const KernelCounters& first = kernels[0];
  EXPECT_EQ(first.benchmark, "b+tree-rodinia-3.1");
  EXPECT_EQ(first.kernel, "findRangeK");
  EXPECT_EQ(first.line, 2);
  EXPECT_EQ(first.launches, 1);
  EXPECT_EQ(first.metrics.size(), 17u);
  EXPECT_EQ(Metric(first, "L1_RH"), 1634256.0);
  EXPECT_EQ(Metric(first, "Pipeline_Duty"), 0.3268163900773488);
  EXPECT_EQ(Metric(first, "Elapsed_Cycles"), 66542.7);
  EXPECT_EQ(Metric(first, "Chip Voltage"), 1.0);
  // The three CUTLASS runs share one mangled kernel name and stay three records.
  int cutlass = 0;
  for (const KernelCounters& k : kernels)
    cutlass += k.benchmark.rfind("cutlass_perf_test_k", 0) == 0;
  EXPECT_EQ(cutlass, 3);
  // Line 26.
  const KernelCounters& gemm =
      Find(kernels, "_Z12compute_gemmPK6__halfS1_PKfPfff", "cudaTensorCoreGemm");
  EXPECT_EQ(gemm.line, 26);
  EXPECT_EQ(Metric(gemm, "SHRD_ACC"), 30146560.0);
  EXPECT_EQ(Metric(gemm, "Elapsed_Cycles"), 3871172.375);
}

// ---- Fixtures ----------------------------------------------------------------------------

TEST(CountersNcuRaw, UnitsRowGroupingNaAndTextAttributes) {
  CounterFormat format;
  const auto kernels = ReadCounters(Fixture("ncu_raw_page.csv"), &format);
  EXPECT_EQ(format, CounterFormat::kNcuRaw);
  ASSERT_EQ(kernels.size(), 2u);
  const KernelCounters& stencil = kernels[0];
  EXPECT_EQ(stencil.kernel, "stencil_kernel");
  EXPECT_EQ(stencil.launches, 2);
  EXPECT_EQ(stencil.line, 10);  // 7 lines of app output, header, units row
  ExpectRel(Metric(stencil, "dram__bytes.sum"), 12.60e6);                   // Mbyte
  ExpectRel(Metric(stencil, "gpu__time_duration.sum"), 45.0e-6);            // usecond
  EXPECT_EQ(Metric(stencil, "launch__grid_size"), 1024.0);                  // "1,024"
  ExpectRel(Metric(stencil, "lts__t_bytes.sum"), 3250.0e3);                 // "3,251.20" Kbyte
  EXPECT_EQ(Metric(stencil, "sm__cycles_active.avg"), 51000.0);             // "51,234.50"
  ExpectRel(Metric(stencil, "sm__cycles_elapsed.avg.per_second"), 1.39e9);  // cycle/nsecond
  ExpectRel(Metric(stencil, "sm__throughput.avg.pct_of_peak_sustained_elapsed"), 61.0);
  EXPECT_EQ(stencil.metrics.count("device__attribute_display_name"), 0u);  // text attribute
  const KernelCounters& reduce = kernels[1];
  EXPECT_EQ(reduce.kernel, "reduce(float const*, float*, int)");
  EXPECT_EQ(reduce.launches, 1);
  EXPECT_EQ(reduce.metrics.count("lts__t_bytes.sum"), 0u);  // n/a
  EXPECT_EQ(Metric(reduce, "sm__cycles_active.avg"), 10917.0);
}

TEST(CountersNcuDetails, NewHeaderGroupingRulesNaAndRepeatedNames) {
  const auto kernels = ReadCounters(Fixture("ncu_details_grouped.csv"));
  ASSERT_EQ(kernels.size(), 1u);
  const KernelCounters& k = kernels[0];
  EXPECT_EQ(k.kernel, "saxpy(int, float, float const*, float*)");
  EXPECT_EQ(k.launches, 2);
  EXPECT_EQ(k.line, 7);
  EXPECT_EQ(Metric(k, "DRAM Frequency"), 1215000000.0);  // "1,215,000,000.00" hz
  ExpectRel(Metric(k, "SM Frequency"), 1.40e9);          // Ghz
  EXPECT_EQ(Metric(k, "Elapsed Cycles"), 2848500.0);     // "2,847,533", "2,849,467"
  ExpectRel(Metric(k, "Duration"), 2.025e-3);            // 2.02 msecond, "2,030.00" usecond
  ExpectRel(Metric(k, "Memory Throughput"), 87.5);       // Speed Of Light, %
  ExpectRel(Metric(k, "Memory Workload Analysis/Memory Throughput"), 830.0e9);  // Gbyte/second
  ExpectRel(Metric(k, "L2 Cache Throughput"), 41.20);  // n/a in launch 0: mean of one
  EXPECT_EQ(Metric(k, "Registers Per Thread"), 16.0);
  EXPECT_EQ(k.metrics.count("Function Cache Configuration"), 0u);
  EXPECT_EQ(k.metrics.size(), 8u);
}

TEST(CountersNcuDetails, DecimalCommaLocaleOldHeaderCrlf) {
  const auto kernels = ReadCounters(Fixture("ncu_details_decimal_comma.csv"));
  ASSERT_EQ(kernels.size(), 1u);
  const KernelCounters& k = kernels[0];
  EXPECT_EQ(k.kernel, "matmul_kernel(float*, float*, float*, int)");
  EXPECT_EQ(Metric(k, "Elapsed Cycles"), 2508800.0);   // "2.508.800"
  EXPECT_EQ(Metric(k, "SM [%]"), 65.77);               // "65,77"
  ExpectRel(Metric(k, "Duration"), 1834.5e-6);         // "1.834,50" usecond
  EXPECT_EQ(Metric(k, "Waves Per SM"), 1.234);         // "1,234" in a decimal-comma file
  ExpectRel(Metric(k, "Memory Throughput"), 412.6e9);  // "412,6" Gbyte/second
}

TEST(CountersNvprof, EventsLevelsRangesAndWeightedRepeats) {
  const std::string path = WriteFile(
      ScratchDir() + "/events.csv",
      "==7== NVPROF is profiling process 7, command: ./app\n"
      "==7== Profiling result:\n"
      "\"Device\",\"Kernel\",\"Invocations\",\"Event Name\",\"Min\",\"Max\",\"Avg\",\"Total\"\n"
      "\"GeForce GTX TITAN X (0)\",\"k(int, float)\",1,\"active_cycles\",100,100,100,100\n"
      "\"GeForce GTX TITAN X (0)\",\"k(int, float)\",3,\"active_cycles\",200,200,200,600\n"
      "\"GeForce GTX TITAN X (0)\",\"k(int, float)\",4,\"dram_util\",\"Low (1..3)\",\"Low (1..3)\","
      "\"Low (1..3)\",n/a\n"
      "\"GeForce GTX TITAN X (0)\",\"k(int, float)\",4,\"max_level\",\"Max (10)\",\"Max (10)\","
      "\"Max (10)\",n/a\n"
      "\"GeForce GTX TITAN X (0)\",\"k(int, float)\",4,\"gone\",n/a,n/a,n/a,n/a\n"
      "\"GeForce GTX TITAN X (0)\",\"k(int, float)\",4,\"rate\",1MB/s,1MB/s,1.5MB/s,0\n");
  const auto kernels = ReadCounters(path);
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].launches, 4);
  ExpectRel(Metric(kernels[0], "active_cycles"), (100.0 + 3 * 200.0) / 4.0);
  EXPECT_EQ(Metric(kernels[0], "dram_util"), 2.0);
  EXPECT_EQ(Metric(kernels[0], "max_level"), 10.0);
  EXPECT_EQ(Metric(kernels[0], "rate"), 1.5e6);
  EXPECT_EQ(kernels[0].metrics.count("gone"), 0u);
}

TEST(CountersUnits, KnownUnitsAndTheirFactors) {
  struct Case {
    const char* unit;
    double value_in_base;  // of 1 unit
    const char* base;
  };
  const Case cases[] = {
      {"", 1, ""},
      {"%", 1, "%"},
      {"byte", 1, "byte"},
      {"Kbyte", 1e3, "byte"},
      {"Mbyte", 1e6, "byte"},
      {"Gbyte", 1e9, "byte"},
      {"KiB", 1024, "byte"},
      {"nsecond", 1e-9, "second"},
      {"usecond", 1e-6, "second"},
      {"msecond", 1e-3, "second"},
      {"ns", 1e-9, "second"},
      {"us", 1e-6, "second"},
      {"second", 1, "second"},
      {"cycle/second", 1, "cycle/second"},
      {"cycle/nsecond", 1e9, "cycle/second"},
      {"hz", 1, "cycle/second"},
      {"Ghz", 1e9, "cycle/second"},
      {"MHz", 1e6, "cycle/second"},
      {"byte/second", 1, "byte/second"},
      {"Gbyte/second", 1e9, "byte/second"},
      {"GB/s", 1e9, "byte/second"},
      {"KB/s", 1e3, "byte/second"},
      {"B/s", 1, "byte/second"},
      {"byte/block", 1, "byte/block"},
      {"Kbyte/block", 1e3, "byte/block"},
      {"register/thread", 1, "register/thread"},
      {"inst/cycle", 1, "inst/cycle"},
      {"warp", 1, "warp"},
      {"sector", 1, "sector"},
      {"1/second", 1, "1/second"},
  };
  for (const Case& c : cases) {
    CounterUnit unit;
    ASSERT_TRUE(ParseCounterUnit(c.unit, &unit)) << c.unit;
    ExpectRel(unit.multiply / unit.divide, c.value_in_base, 1e-15);
    EXPECT_EQ(unit.base, c.base) << c.unit;
  }
  for (const char* bad : {"furlong", "Xbyte", "byte/%", "%/second", "a/b/c", "cycle/", "/s"}) {
    CounterUnit unit;
    EXPECT_FALSE(ParseCounterUnit(bad, &unit)) << bad;
  }
  EXPECT_STREQ(CounterFormatName(CounterFormat::kNcuRaw), "ncu-raw");
}

// ---- Errors: FILE:LINE: FIELD: MESSAGE ---------------------------------------------------

const char kOldHeader[] =
    "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Kernel Time\","
    "\"Context\",\"Stream\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n";

std::string OldRow(const std::string& id, const std::string& metric, const std::string& unit,
                   const std::string& value) {
  return "\"" + id + "\",\"1\",\"app\",\"h\",\"k(int, int)\",\"t\",\"1\",\"7\",\"S\",\"" + metric +
         "\",\"" + unit + "\",\"" + value + "\"\n";
}

TEST(CountersErrors, TruncatedRowNamesItsLine) {
  const InputError e = ReadError(
      std::string("app says hi\n") + kOldHeader + OldRow("0", "Duration", "nsecond", "3200") +
      "\"0\",\"1\",\"app\",\"h\",\"k(int, int)\",\"t\",\"1\",\"7\",\"S\","
      "\"Elapsed Cycles\",\"cycle\"\n");
  EXPECT_EQ(e.line(), 4);
  EXPECT_NE(e.message().find("truncated row: expected 12 fields"), std::string::npos) << e.what();
}

// An unknown unit does not fail the read; asking for that metric does, naming it and its unit.
TEST(CountersErrors, UnknownUnitFailsOnlyWhenTheMetricIsAskedFor) {
  const std::string path =
      WriteFile(ScratchDir() + "/furlong.csv", std::string(kOldHeader) +
                                                   OldRow("0", "Duration", "nsecond", "1") +
                                                   OldRow("0", "Distance", "furlong", "3"));
  const auto kernels = ReadCounters(path);
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].metrics.count("Distance"), 0u);
  EXPECT_EQ(kernels[0].unknown_units.at("Distance"), "furlong");
  ExpectRel(Metric(kernels[0], "Duration"), 1e-9);
  const auto launches = ReadCounterLaunches(path);
  ASSERT_EQ(launches.size(), 1u);
  ExpectRel(LaunchMetric(launches[0], "Duration"), 1e-9);
  ::wattcal::testing::ExpectInputError([&] { LaunchMetric(launches[0], "Distance"); }, 2,
                                       {path + ":2: Distance: unknown unit 'furlong'"});
  ::wattcal::testing::ExpectInputError([&] { LaunchMetric(launches[0], "Speed"); }, 2,
                                       {path + ":2: Speed: no value in this launch"});
}

TEST(CountersErrors, NonNumericValueWithAUnit) {
  const InputError e = ReadError(std::string(kOldHeader) + OldRow("0", "Bytes", "byte", "12x"));
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(e.field(), "Metric Value");
  EXPECT_NE(e.message().find("got '12x'"), std::string::npos) << e.what();
}

TEST(CountersErrors, TextWhereTheMetricIsNumericElsewhere) {
  const InputError e = ReadError(std::string(kOldHeader) + OldRow("0", "Waves", "", "0.5") +
                                 OldRow("1", "Waves", "", "lots"));
  EXPECT_EQ(e.line(), 3);
  EXPECT_NE(e.message().find("numeric on line 2"), std::string::npos) << e.what();
}

TEST(CountersErrors, UnitChangesKind) {
  const InputError e = ReadError(std::string(kOldHeader) + OldRow("0", "Duration", "nsecond", "5") +
                                 OldRow("1", "Duration", "byte", "5"));
  EXPECT_EQ(e.line(), 3);
  EXPECT_EQ(e.field(), "Metric Unit");
  EXPECT_NE(e.message().find("was second on line 2"), std::string::npos) << e.what();
}

TEST(CountersErrors, InconsistentDecimalSeparators) {
  const InputError e = ReadError(std::string(kOldHeader) + OldRow("0", "A", "", "12.75") +
                                 OldRow("0", "B", "", "0,5"));
  EXPECT_EQ(e.line(), 3);
  EXPECT_NE(e.message().find("inconsistent decimal separators"), std::string::npos) << e.what();
}

TEST(CountersErrors, MetricTwiceInOneLaunchAndSection) {
  const InputError e =
      ReadError(std::string(kOldHeader) + OldRow("0", "A", "", "1") + OldRow("0", "A", "", "2"));
  EXPECT_EQ(e.line(), 3);
  EXPECT_NE(e.message().find("appears twice in launch ID 0"), std::string::npos) << e.what();
}

TEST(CountersErrors, NoCsvFound) {
  const InputError e = ReadError("Result = PASS\n==PROF== Disconnected from process 1\n");
  EXPECT_EQ(e.line(), 0);
  EXPECT_NE(e.message().find("no profiler CSV found"), std::string::npos) << e.what();
}

TEST(CountersErrors, HeaderWithoutRows) {
  const InputError e = ReadError(std::string("==PROF== Disconnected\n") + kOldHeader);
  EXPECT_EQ(e.line(), 2);
  EXPECT_NE(e.message().find("no metric rows"), std::string::npos) << e.what();
}

TEST(CountersErrors, UnbalancedQuoteBeforeTheHeader) {
  const InputError e = ReadError(std::string("\"app output with an open quote\n") + kOldHeader +
                                 OldRow("0", "A", "", "1"));
  EXPECT_NE(e.message().find("hidden inside a quoted field"), std::string::npos) << e.what();
}

TEST(CountersErrors, RawPageWithoutUnitsRow) {
  const InputError e =
      ReadError("\"ID\",\"Kernel Name\",\"dram__bytes.sum\"\n\"0\",\"k\",\"12\"\n");
  EXPECT_EQ(e.line(), 2);
  EXPECT_NE(e.message().find("expected the units row"), std::string::npos) << e.what();
}

TEST(CountersErrors, RawPageUnknownUnitNamesTheColumnWhenAskedFor) {
  const std::string path = WriteFile(ScratchDir() + "/parsec.csv",
                                     "\"ID\",\"Kernel Name\",\"dram__bytes.sum\",\"x.sum\"\n"
                                     "\"\",\"\",\"parsec\",\"byte\"\n"
                                     "\"0\",\"k\",\"12\",\"7\"\n");
  const auto launches = ReadCounterLaunches(path);
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(LaunchMetric(launches[0], "x.sum"), 7.0);
  ::wattcal::testing::ExpectInputError([&] { LaunchMetric(launches[0], "dram__bytes.sum"); }, 3,
                                       {path + ":3: dram__bytes.sum: unknown unit 'parsec'"});
}

TEST(CountersErrors, NvprofBadInvocationsAndUnknownSuffix) {
  const std::string header =
      "\"Device\",\"Kernel\",\"Invocations\",\"Metric Name\",\"Metric Description\",\"Min\","
      "\"Max\",\"Avg\"\n";
  InputError e = ReadError(header + "\"D (0)\",\"k\",two,\"ipc\",\"IPC\",1,1,1\n");
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(e.field(), "Invocations");
  e = ReadError(header +
                "\"D (0)\",\"k\",1,\"ipc\",\"IPC\",1,1,1\n"
                "\"D (0)\",\"k\",1,\"bw\",\"BW\",1XB/s,1XB/s,1XB/s\n");
  EXPECT_EQ(e.line(), 3);
  EXPECT_EQ(e.field(), "Avg");
  EXPECT_NE(e.message().find("unknown unit 'XB/s'"), std::string::npos) << e.what();
}

TEST(CountersErrors, HwPerfNonNumericCell) {
  const InputError e = ReadError("Benchmark,Kernel,L1_RH,NOC\nb,k,1.0,2.0\nb,k2,oops,2.0\n");
  EXPECT_EQ(e.line(), 3);
  EXPECT_EQ(e.field(), "L1_RH");
}

TEST(CountersErrors, ReadCountersRefusesToAverageDifferentLaunchConfigs) {
  const std::string raw =
      "\"ID\",\"Kernel Name\",\"Block Size\",\"Grid Size\",\"x.sum\"\n"
      "\"\",\"\",\"\",\"\",\"inst\"\n"
      "\"0\",\"k\",\"(256, 1, 1)\",\"(1056, 1, 1)\",\"10\"\n"
      "\"1\",\"k\",\"(256, 1, 1)\",\"(1056, 1, 1)\",\"20\"\n"
      "\"2\",\"k\",\"(1024, 1, 1)\",\"(1, 1, 1)\",\"30\"\n";
  const InputError e = ReadError(raw);
  EXPECT_EQ(e.line(), 5);
  EXPECT_EQ(e.field(), "Grid Size");
  EXPECT_NE(e.message().find("grid (1, 1, 1) and block (1024, 1, 1) here but with grid (1056, 1, "
                             "1) and block (256, 1, 1) on line 3"),
            std::string::npos)
      << e.what();
  EXPECT_NE(e.message().find("wattcal-ingest --capture"), std::string::npos) << e.what();
  // The same launches read one by one; identical configurations are still averaged.
  const std::string path = WriteFile(ScratchDir() + "/raw.csv", raw);
  const auto launches = ReadCounterLaunches(path);
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_EQ(launches[2].grid, (std::array<int64_t, 3>{{1, 1, 1}}));
  EXPECT_EQ(launches[2].block, (std::array<int64_t, 3>{{1024, 1, 1}}));
  EXPECT_EQ(LaunchMetric(launches[2], "x.sum"), 30.0);
  const std::string same = WriteFile(ScratchDir() + "/same.csv", raw.substr(0, raw.rfind("\"2\"")));
  const auto kernels = ReadCounters(same);
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].launches, 2);
  EXPECT_EQ(Metric(kernels[0], "x.sum"), 15.0);
}

// Application output between the rows of a details page is skipped, wherever it is; a row that
// starts like a table row (quoted numeric ID) but is cut short is still an error, and so is a
// skipped line whose '"' swallows the rows after it.
TEST(CountersNcuDetails, AppOutputAmongTheRows) {
  const std::string rows = std::string(kOldHeader) + OldRow("0", "Duration", "nsecond", "3200") +
                           "iteration 1 done, error = 0.5\n" + "\"quoted output\", from the app\n" +
                           "42\n" + OldRow("0", "Elapsed Cycles", "cycle", "77") +
                           "==PROF== Profiling \"k\" - 1: 0%....50%....100% - 9 passes\n" +
                           OldRow("1", "Duration", "nsecond", "4800");
  const std::string path = WriteFile(ScratchDir() + "/mixed.csv", rows);
  const auto launches = ReadCounterLaunches(path);
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(launches[0].id, 0);
  EXPECT_EQ(launches[0].line, 2);
  EXPECT_EQ(LaunchMetric(launches[0], "Elapsed Cycles"), 77.0);
  EXPECT_EQ(launches[1].line, 8);
  EXPECT_FALSE(launches[0].has_launch_config);  // the 2020 header has no Grid/Block Size

  InputError e = ReadError(rows + "\"2\",\"1\",\"app\",\"h\",\"k(int, int)\",\"t\"\n");
  EXPECT_EQ(e.line(), 9);
  EXPECT_NE(e.message().find("truncated row: expected 12 fields"), std::string::npos) << e.what();
  e = ReadError(std::string(kOldHeader) + OldRow("0", "A", "", "1") + "\"unbalanced output\n" +
                OldRow("0", "B", "", "2") + OldRow("0", "C", "", "3"));
  EXPECT_NE(e.message().find("('unbalanced output'): a '\"' in a line that is not a row"),
            std::string::npos)
      << e.what();
  // A quoted line of another width is skipped, unless its '"' swallows the lines after it.
  e = ReadError(std::string(kOldHeader) + OldRow("0", "A", "", "1") + "\"x\",\"y\"\n" +
                "\"z\",\"unbalanced\n" + OldRow("0", "B", "", "2"));
  EXPECT_EQ(e.line(), 4);
  EXPECT_NE(e.message().find("runs over line 5"), std::string::npos) << e.what();
}

// ---- The H100 capture (../shared/datasets/h100_capture, ncu 2025.3) ------------------------

const char* const kCaptureFolders[] = {"ubench_random", "mix_random", "ubench_zeros", "mix_zeros"};

std::string CaptureRaw(const std::string& folder) {
  return ::wattcal::testing::Dataset("h100_capture/" + folder + "/ncu_raw.csv");
}

// Every raw page reads launch by launch: the header on line 4 after ==WARNING==/==PROF== lines,
// the units row on line 5 (with the 'cluster' and 'SM' units), one launch per row.
TEST(CountersH100Capture, EveryRawPageReadsPerLaunch) {
  WATTCAL_REQUIRE_DATASETS();
  const std::map<std::string, size_t> expected = {
      {"ubench_random", 41}, {"mix_random", 102}, {"ubench_zeros", 39}, {"mix_zeros", 100}};
  for (const char* folder : kCaptureFolders) {
    SCOPED_TRACE(folder);
    CounterFormat format;
    const auto launches = ReadCounterLaunches(CaptureRaw(folder), &format);
    EXPECT_EQ(format, CounterFormat::kNcuRaw);
    ASSERT_EQ(launches.size(), expected.at(folder));
    // The *_random folders start with two set-up launches (the buffer fill).
    const bool random = std::string(folder).find("random") != std::string::npos;
    const size_t setup = random ? 2 : 0;
    for (size_t i = 0; i < setup; ++i) {
      EXPECT_EQ(launches[i].kernel, "k_fill_random(float *, unsigned long)");
    }
    EXPECT_EQ(launches[setup].kernel,
              std::string(folder).rfind("mix", 0) == 0 ? "k_mix(P, Mix)" : "k_sleep(P)");
    for (size_t i = 0; i < launches.size(); ++i) {
      const CounterLaunch& l = launches[i];
      EXPECT_EQ(l.id, static_cast<int64_t>(i));
      EXPECT_EQ(l.line, static_cast<int64_t>(6 + i));
      EXPECT_TRUE(l.has_launch_config);
      EXPECT_GT(LaunchMetric(l, "smsp__inst_executed.sum"), 0.0);
      EXPECT_GT(LaunchMetric(l, "gpu__time_duration.sum"), 0.0);
      EXPECT_EQ(LaunchMetric(l, "launch__cluster_max_active"), 0.0);  // unit 'cluster'
      EXPECT_EQ(LaunchMetric(l, "launch__sm_count"), 132.0);          // unit 'SM'
      EXPECT_TRUE(l.unknown_units.empty());
    }
  }
}

// ubench_random's rows follow windows.csv after the two fills: sm_sweep_int_add_001 (window 24,
// k_int_add on 1 block of 1024 threads) is launch ID 25 on line 31.
TEST(CountersH100Capture, SmSweepLaunchHasItsOwnGridAndValues) {
  WATTCAL_REQUIRE_DATASETS();
  const auto launches = ReadCounterLaunches(CaptureRaw("ubench_random"));
  ASSERT_EQ(launches.size(), 41u);
  const CounterLaunch& sweep1 = launches[25];
  EXPECT_EQ(sweep1.kernel, "k_int_add(P)");
  EXPECT_EQ(sweep1.line, 31);
  EXPECT_EQ(sweep1.grid, (std::array<int64_t, 3>{{1, 1, 1}}));
  EXPECT_EQ(sweep1.block, (std::array<int64_t, 3>{{1024, 1, 1}}));
  // Line 31: "14,009,344" inst, "2,074,112" ns, "0.75" %.
  EXPECT_EQ(LaunchMetric(sweep1, "smsp__inst_executed.sum"), 14009344.0);
  ExpectRel(LaunchMetric(sweep1, "gpu__time_duration.sum"), 2074112e-9);
  EXPECT_EQ(LaunchMetric(sweep1, "sm__throughput.avg.pct_of_peak_sustained_elapsed"), 0.75);
  EXPECT_EQ(sweep1.metric_base.at("gpu__time_duration.sum"), "second");
  // The same kernel name on 1056 blocks (int_add) and on 132 blocks (sm_sweep_int_add_132).
  EXPECT_EQ(launches[3].kernel, "k_int_add(P)");
  EXPECT_EQ(launches[3].grid, (std::array<int64_t, 3>{{1056, 1, 1}}));
  EXPECT_EQ(launches[3].block, (std::array<int64_t, 3>{{256, 1, 1}}));
  EXPECT_EQ(launches[33].grid, (std::array<int64_t, 3>{{132, 1, 1}}));
}

// ReadCounters used to average the 39 benchmarks into 18 kernel names; now it refuses.
TEST(CountersH100Capture, ReadCountersRefusesToAverageDifferentConfigs) {
  WATTCAL_REQUIRE_DATASETS();
  // k_fp32_fma(P): launch ID 5 (line 11) on (1056, 1, 1) x (256, 1, 1), launch ID 23 (line
  // 29, fp32_fma_half_occ) on (132, 1, 1) x (128, 1, 1).
  ::wattcal::testing::ExpectInputError(
      [] { ReadCounters(CaptureRaw("ubench_random")); }, 29,
      {":29: Grid Size: kernel 'k_fp32_fma(P)'", "on line 11", "wattcal-ingest --capture"});
  for (const char* folder : {"mix_random", "ubench_zeros", "mix_zeros"}) {
    EXPECT_THROW(ReadCounters(CaptureRaw(folder)), InputError) << folder;
  }
}

// An unknown unit on a column nobody asked for does not fail the read (ncu 2025.3 prints
// ~300 columns); asking for the metric does. The real page with one unit made unknown.
TEST(CountersH100Capture, UnknownUnitOnlyFailsTheMetricAskedFor) {
  WATTCAL_REQUIRE_DATASETS();
  std::string text = ::wattcal::testing::ReadFile(CaptureRaw("ubench_zeros"));
  const size_t units_row = text.find("\n\"\",") + 1;
  const size_t cluster = text.find("\"cluster\"", units_row);
  ASSERT_LT(cluster, text.find('\n', units_row));
  text.replace(cluster, 9, "\"cluster group\"");
  const std::string path = WriteFile(ScratchDir() + "/ncu_raw.csv", text);
  const auto launches = ReadCounterLaunches(path);
  ASSERT_EQ(launches.size(), 39u);
  EXPECT_EQ(launches[0].unknown_units.at("launch__cluster_max_active"), "cluster group");
  EXPECT_GT(LaunchMetric(launches[0], "smsp__inst_executed.sum"), 0.0);
  ::wattcal::testing::ExpectInputError(
      [&] { LaunchMetric(launches[1], "launch__cluster_max_active"); }, 7,
      {path + ":7: launch__cluster_max_active: unknown unit 'cluster group'"});
}

// `ncu --csv --page details` with the program's output in the CSV: ncu 2025.3 ends metric rows
// after the value (16 fields for a 20-column header; only rule rows fill the rule columns),
// writes "no data" for some values, and the program's lines come before the header; more
// program lines pasted among the rows are skipped too.
TEST(CountersH100Capture, DetailsPageWithAppOutput) {
  WATTCAL_REQUIRE_DATASETS();
  const std::string real =
      ::wattcal::testing::Dataset("h100_capture/ncu_details_page_with_app_output.csv");
  std::string text = ::wattcal::testing::ReadFile(real);
  size_t line20 = 0;
  for (int i = 0; i < 19; ++i) line20 = text.find('\n', line20) + 1;
  text.insert(line20, "profiled dram_ld iters=1\n\"quoted app output\", 3 fields, here\n");
  const std::string mixed = WriteFile(ScratchDir() + "/details.csv", text);
  for (const std::string& path : {real, mixed}) {
    SCOPED_TRACE(path);
    CounterFormat format;
    const auto launches = ReadCounterLaunches(path, &format);
    EXPECT_EQ(format, CounterFormat::kNcuDetails);
    ASSERT_EQ(launches.size(), 4u);
    for (int64_t i = 0; i < 4; ++i) {
      EXPECT_EQ(launches[i].id, i);
      EXPECT_EQ(launches[i].kernel, "k_load_cg(P)");
      EXPECT_EQ(launches[i].grid, (std::array<int64_t, 3>{{1056, 1, 1}}));
      EXPECT_EQ(launches[i].block, (std::array<int64_t, 3>{{256, 1, 1}}));
      EXPECT_EQ(launches[i].metrics.count("Local Memory Spilling Request Overhead"), 0u);
    }
    EXPECT_EQ(launches[0].line, 8);
    // Line 13: "Duration","ns","1,385,760"; line 27: "Memory Throughput","byte/s".
    ExpectRel(LaunchMetric(launches[0], "Duration"), 1385760e-9);
    ExpectRel(LaunchMetric(launches[0], "Memory Workload Analysis/Memory Throughput"),
              3101075441634.92);
    EXPECT_EQ(LaunchMetric(launches[0], "Memory Throughput"), 92.51);  // Speed Of Light, %
    const auto kernels = ReadCounters(path);  // one configuration: averaged as before
    ASSERT_EQ(kernels.size(), 1u);
    EXPECT_EQ(kernels[0].launches, 4);
    ExpectRel(Metric(kernels[0], "Duration"), (1385760.0 * 2 + 18464 + 17504) / 4 * 1e-9);
  }
}

// Two exports appended into one file (cat a.csv b.csv > c.csv), each with its ==PROF== lines,
// header and units row: the union of the launches, in order.
TEST(CountersH100Capture, AppendedExportsReadAsOne) {
  WATTCAL_REQUIRE_DATASETS();
  const std::string raw = WriteFile(ScratchDir() + "/appended.csv",
                                    ::wattcal::testing::ReadFile(CaptureRaw("ubench_zeros")) +
                                        ::wattcal::testing::ReadFile(CaptureRaw("mix_zeros")));
  const auto launches = ReadCounterLaunches(raw);
  ASSERT_EQ(launches.size(), 139u);
  EXPECT_EQ(launches[0].kernel, "k_sleep(P)");
  EXPECT_EQ(launches[38].kernel, "k_fp32_fma(P)");
  EXPECT_EQ(launches[38].line, 44);
  // ubench_zeros has 44 lines: mix_zeros's header is on line 48, its units row on 49.
  EXPECT_EQ(launches[39].kernel, "k_mix(P, Mix)");
  EXPECT_EQ(launches[39].id, 0);
  EXPECT_EQ(launches[39].line, 50);
  EXPECT_EQ(launches[138].line, 149);
  const auto alone = ReadCounterLaunches(CaptureRaw("mix_zeros"));
  for (size_t i = 0; i < alone.size(); ++i) {
    EXPECT_EQ(launches[39 + i].metrics, alone[i].metrics) << i;
  }
  // Details pages: IDs restart at 0 in each export, and stay separate launches.
  const std::string details_text = ::wattcal::testing::ReadFile(
      ::wattcal::testing::Dataset("h100_capture/ncu_details_page_with_app_output.csv"));
  const std::string details =
      WriteFile(ScratchDir() + "/details_twice.csv", details_text + details_text);
  const auto twice = ReadCounterLaunches(details);
  ASSERT_EQ(twice.size(), 8u);
  EXPECT_EQ(twice[4].id, 0);
  EXPECT_EQ(twice[4].line, 123 + 8);
  EXPECT_EQ(twice[4].metrics, twice[0].metrics);
}

// Hand check on launches ID 25 and 26 of ubench_random (k_int_add on 1 and 2 blocks, lines 31
// and 32): counts add, percentages and rates are weighted by gpu__time_duration.sum.
TEST(CountersH100Capture, SumCounterLaunchesSumsCountsAndTimeWeightsRatios) {
  WATTCAL_REQUIRE_DATASETS();
  const auto launches = ReadCounterLaunches(CaptureRaw("ubench_random"));
  ASSERT_EQ(launches.size(), 41u);
  const KernelCounters sum = SumCounterLaunches("sweep_1_2", {launches[25], launches[26]});
  EXPECT_EQ(sum.kernel, "sweep_1_2");
  EXPECT_EQ(sum.launches, 2);
  EXPECT_EQ(sum.line, 31);
  EXPECT_EQ(Metric(sum, "smsp__inst_executed.sum"), 14009344.0 + 28043456.0);
  ExpectRel(Metric(sum, "gpu__time_duration.sum"), (2074112.0 + 2075904.0) * 1e-9);
  // (0.75 * 2074112 + 1.51 * 2075904) / (2074112 + 2075904)
  ExpectRel(Metric(sum, "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
            certified::kH100Sweep12SmThroughputPct.value, 1e-12);
  // hz: (1,979,992,467.31 * 2074112 + 1,979,973,201.01 * 2075904) / (same sum)
  ExpectRel(Metric(sum, "sm__cycles_elapsed.avg.per_second"),
            certified::kH100Sweep12SmClockHz.value, 1e-12);
  EXPECT_EQ(Metric(sum, "launch__sm_count"), 132.0);  // an attribute, not summed
  // One launch sums to itself.
  const KernelCounters one = SumCounterLaunches("one", {launches[25]});
  EXPECT_EQ(one.metrics, launches[25].metrics);
}

TEST(CountersSum, EqualWeightsWithoutDurationAndKindsMustAgree) {
  CounterLaunch a, b;
  a.path = b.path = "x.csv";
  a.line = 3;
  b.line = 4;
  a.metrics = {{"bytes", 10.0}, {"util", 20.0}};
  a.metric_base = {{"bytes", "byte"}, {"util", "%"}};
  b.metrics = {{"bytes", 30.0}, {"util", 60.0}};
  b.metric_base = {{"bytes", "byte"}, {"util", "%"}};
  b.launches = 3;  // an nvprof record of 3 invocations
  const KernelCounters sum = SumCounterLaunches("w", {a, b});
  EXPECT_EQ(sum.launches, 4);
  EXPECT_EQ(Metric(sum, "bytes"), 10.0 + 3 * 30.0);
  EXPECT_EQ(Metric(sum, "util"), (20.0 + 3 * 60.0) / 4);
  b.metric_base["bytes"] = "second";
  ::wattcal::testing::ExpectInputError(
      [&] {
        SumCounterLaunches("w", {a, b});
      },
      4, {"x.csv:4: bytes: ", "on line 3"});
  b.metric_base["bytes"] = "byte";
  b.unknown_units["odd"] = "furlong";
  EXPECT_EQ(SumCounterLaunches("w", {a, b}).unknown_units.at("odd"), "furlong");
  EXPECT_THROW(SumCounterLaunches("w", {}), std::invalid_argument);
  EXPECT_TRUE(IsSummedCounter("dram__bytes.sum", "byte"));
  EXPECT_TRUE(IsSummedCounter("sm__cycles_active.avg", "cycle"));
  EXPECT_TRUE(IsSummedCounter("launches", ""));
  EXPECT_FALSE(IsSummedCounter("dram__bytes.sum.per_second", "byte/second"));
  EXPECT_FALSE(IsSummedCounter("sm__throughput.avg.pct_of_peak_sustained_elapsed", "%"));
  EXPECT_FALSE(IsSummedCounter("smsp__thread_inst_executed_per_inst_executed.ratio", ""));
  EXPECT_FALSE(IsSummedCounter("launch__grid_size", ""));
  EXPECT_FALSE(IsSummedCounter("device__attribute_clock_rate", ""));
}

// ---- Writer ------------------------------------------------------------------------------

TEST(CountersNcuWriter, DetailsCsvReadsBackExactly) {
  std::mt19937 rng(SeedFromTestName());
  std::uniform_real_distribution<double> mantissa(1.0, 10.0);
  std::uniform_int_distribution<int> exponent(-9, 12);
  std::vector<KernelCounters> kernels(3);
  kernels[0].kernel = "vecAdd(float const*, float const*, float*, int)";
  kernels[0].launches = 3;
  kernels[1].kernel = "k\"quoted\", with commas";
  kernels[1].launches = 1;
  kernels[2].kernel = "plain";
  kernels[2].launches = 2;
  const std::vector<std::string> names = {"gpu__time_duration.sum",
                                          "sm__cycles_active.avg",
                                          "dram__bytes.sum",
                                          "lts__t_bytes.sum",
                                          "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
                                          "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                                          "dram__bytes.sum.per_second",
                                          "launch__grid_size",
                                          "Duration"};
  for (KernelCounters& k : kernels) {
    for (const std::string& name : names) {
      k.metrics[name] = mantissa(rng) * std::pow(10.0, exponent(rng));
    }
  }
  kernels[2].metrics["launch__grid_size"] = 1024;  // integral
  const std::string path = WriteFile(ScratchDir() + "/round_trip.csv", NcuDetailsCsv(kernels));
  CounterFormat format;
  const auto back = ReadCounters(path, &format);
  EXPECT_EQ(format, CounterFormat::kNcuDetails);
  ASSERT_EQ(back.size(), kernels.size());
  for (size_t i = 0; i < kernels.size(); ++i) {
    EXPECT_EQ(back[i].kernel, kernels[i].kernel);
    EXPECT_EQ(back[i].launches, kernels[i].launches);
    EXPECT_EQ(back[i].metrics, kernels[i].metrics) << back[i].kernel;  // bit for bit
  }
  EXPECT_EQ(NcuBaseUnitForMetric("gpu__time_duration.sum"), "nsecond");
  EXPECT_EQ(NcuBaseUnitForMetric("dram__bytes.sum"), "byte");
  EXPECT_EQ(NcuBaseUnitForMetric("sm__cycles_active.avg"), "cycle");
  EXPECT_EQ(NcuBaseUnitForMetric("sm__inst_executed_pipe_xu.sum"), "inst");
}

}  // namespace
}  // namespace wattcal
