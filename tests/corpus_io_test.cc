// Tests of ReadCorpus on every gpmTOOL file of the harvested TPDS 2019 datasets, on tidy
// CSVs, and on one bad input per validation rule (file, line and field of the InputError).
#include "io/corpus_io.h"

#include <gtest/gtest.h>

#include <boost/filesystem.hpp>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "io/csv_reader.h"
#include "test_support.h"
#include "util/errors.h"

namespace wattcal {
namespace {

using ::wattcal::testing::Dataset;
using ::wattcal::testing::ScratchDir;
using ::wattcal::testing::WriteFile;

// What a dataset file's header and first data row say, checked by hand against the file.
struct GpmtoolFileFacts {
  std::string file;  // relative to the datasets folder
  CorpusKind kind;
  int rows;
  std::vector<double> default_freq_mhz;
  std::vector<int> components_per_domain;
  std::string first_component;
  std::string last_component;
  // First data row (line 5).
  std::string first_benchmark;
  double first_power_w;  // 0 for activity files
  std::vector<double> first_freq_mhz;
  double first_util;
  double last_util;
};

const std::vector<GpmtoolFileFacts>& AllGpmtoolFiles() {
  static const std::vector<GpmtoolFileFacts> facts = {
      {"gpmtool_tpds2019/amd_rx580/micro_dvfs_13comp.csv",
       CorpusKind::kTraining,
       1560,
       {1380, 2000},
       {11, 2},
       "cVALUBusy",
       "cWRITEBusy",
       "micro_001",
       37.223,
       {300, 300},
       0.99961,
       0.012114},
      {"gpmtool_tpds2019/gtx_980/micro_dvfs_6comp.csv",
       CorpusKind::kTraining,
       765,
       {975, 3505},
       {6, 1},
       "SP",
       "DRAM",
       "micro_001",
       108.053,
       {1164, 4005},
       0,
       0.024986},
      {"gpmtool_tpds2019/gtx_980/micro_fixed_6comp.csv",
       CorpusKind::kTraining,
       85,
       {975, 3505},
       {6, 1},
       "SP",
       "DRAM",
       "micro_001",
       102.67,
       {975, 3505},
       0,
       0.021026},
      {"gpmtool_tpds2019/gtx_titan_x/DERIVED_real_power_allF_11comp.csv",
       CorpusKind::kMeasured,
       1920,
       {975, 3505},
       {11, 1},
       "SP ADD",
       "DRAM",
       "mri-gridding",
       183.1325,
       {1164, 4005},
       0.12455,
       0.028274},
      {"gpmtool_tpds2019/gtx_titan_x/real_power_allF_7comp.csv",
       CorpusKind::kMeasured,
       2240,
       {975, 3505},
       {7, 1},
       "SP",
       "DRAM",
       "mri-gridding",
       183.1325,
       {1164, 4005},
       0.32229,
       0.027894},
      {"gpmtool_tpds2019/gtx_titan_x/real_utils_11comp_names_misaligned.csv",
       CorpusKind::kActivity,
       30,
       {975, 3505},
       {11, 1},
       "FP32 ADD",
       "DRAM",
       "mri-gridding",
       0,
       {},
       0.12455,
       0.028274},
      {"gpmtool_tpds2019/gtx_titan_x/train_micro_dvfs_11comp.csv",
       CorpusKind::kTraining,
       6528,
       {975, 3505},
       {11, 1},
       "SP ADD",
       "DRAM",
       "micro_001",
       142.6985,
       {1164, 4005},
       0.034938,
       0.004449},
      {"gpmtool_tpds2019/gtx_titan_x/train_micro_dvfs_7comp.csv",
       CorpusKind::kTraining,
       6528,
       {975, 3505},
       {7, 1},
       "SP",
       "DRAM",
       "micro_001",
       142.6985,
       {1164, 4005},
       0.11544,
       0.0044102},
      {"gpmtool_tpds2019/gtx_titan_x/train_micro_dvfs_7comp_named.csv",
       CorpusKind::kMeasured,
       6528,
       {975, 3505},
       {7, 1},
       "SP",
       "DRAM",
       "v1_2_512",
       142.6985,
       {1164, 4005},
       0.11544,
       0.0044102},
      {"gpmtool_tpds2019/gtx_titan_x/train_micro_fixed_11comp.csv",
       CorpusKind::kTraining,
       102,
       {975, 3505},
       {11, 1},
       "SP ADD",
       "DRAM",
       "micro_001",
       108.612,
       {975, 3505},
       0.034938,
       0.004449},
      {"gpmtool_tpds2019/tesla_k40c/train_micro_dvfs_7comp.csv",
       CorpusKind::kTraining,
       400,
       {875, 3004},
       {7, 1},
       "SP ADD",
       "DRAM",
       "micro_001",
       114.9499,
       {875, 3004},
       0.078001,
       0.0052764},
      {"gpmtool_tpds2019/tesla_k40c/train_micro_fixed_7comp.csv",
       CorpusKind::kTraining,
       100,
       {875, 3004},
       {7, 1},
       "SP ADD",
       "DRAM",
       "micro_001",
       114.9499,
       {875, 3004},
       0.078001,
       0.0052764},
      {"gpmtool_tpds2019/titan_v/micro_dvfs_11comp.csv",
       CorpusKind::kTraining,
       1760,
       {1200, 850},
       {11, 1},
       "SP ADD",
       "DRAM",
       "micro_001",
       125.553,
       {1402, 850},
       0.032075,
       0.007993},
      {"gpmtool_tpds2019/titan_xp/train_micro_dvfs_11comp.csv",
       CorpusKind::kTraining,
       1608,
       {1404, 5705},
       {11, 1},
       "SP ADD",
       "DRAM",
       "micro_001",
       155.5287,
       {1911, 5705},
       0.038725,
       0.0060267},
      {"gpmtool_tpds2019/titan_xp/train_micro_fixed_11comp.csv",
       CorpusKind::kTraining,
       67,
       {1404, 5705},
       {11, 1},
       "SP ADD",
       "DRAM",
       "micro_001",
       88.4877,
       {1404, 5705},
       0.038725,
       0.0060267},
  };
  return facts;
}

// data_rows of every gpmtool_tpds2019 file in the datasets' MANIFEST.csv.
std::map<std::string, int> ManifestDataRows() {
  CsvReader reader(Dataset("MANIFEST.csv"));
  std::vector<std::string> fields;
  reader.Next(&fields);  // header: file,data_rows,...
  std::map<std::string, int> rows;
  while (reader.Next(&fields)) {
    if (fields[0].rfind("gpmtool_tpds2019/", 0) == 0) rows[fields[0]] = std::stoi(fields[1]);
  }
  return rows;
}

TEST(CorpusIoOptions, DefaultsPassCheck) {
  std::string error;
  EXPECT_TRUE(CorpusReadOptions().Check(&error)) << error;
}

TEST(CorpusIoOptions, NegativeOrNonFiniteDefaultFailsCheckNamingTheField) {
  CorpusReadOptions options;
  options.default_mem_mhz = -1.0;
  std::string error;
  EXPECT_FALSE(options.Check(&error));
  EXPECT_NE(error.find("default_mem_mhz = -1"), std::string::npos) << error;
  options.default_mem_mhz = 0.0;
  options.default_core_mhz = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(options.Check(&error));
  EXPECT_NE(error.find("default_core_mhz"), std::string::npos) << error;
  const std::string path = WriteFile(ScratchDir() + "/t.csv", "benchmark,A\nb,0.5\n");
  EXPECT_THROW(ReadCorpus(path, options), OptionError);
}

TEST(CorpusIoGpmtool, ReadsEveryDatasetFile) {
  WATTCAL_REQUIRE_DATASETS();
  const std::map<std::string, int> manifest_rows = ManifestDataRows();
  std::set<std::string> covered;
  for (const GpmtoolFileFacts& facts : AllGpmtoolFiles()) {
    SCOPED_TRACE(facts.file);
    covered.insert(facts.file);
    const Corpus corpus = ReadCorpus(Dataset(facts.file));
    ASSERT_EQ(corpus.rows(), facts.rows);
    ASSERT_EQ(manifest_rows.count(facts.file), 1u);
    EXPECT_EQ(corpus.rows(), manifest_rows.at(facts.file));
    EXPECT_EQ(corpus.kind, facts.kind);
    EXPECT_EQ(corpus.path, Dataset(facts.file));

    const Layout& layout = corpus.layout;
    ASSERT_EQ(layout.num_domains(), 2);
    for (int d = 0; d < 2; ++d) {
      EXPECT_EQ(layout.domains[d].name, d == 0 ? "core" : "mem");
      EXPECT_EQ(layout.domains[d].default_freq_mhz, facts.default_freq_mhz[d]);
      EXPECT_EQ(static_cast<int>(layout.domains[d].components.size()),
                facts.components_per_domain[d]);
    }
    EXPECT_EQ(layout.ComponentNames().front(), facts.first_component);
    EXPECT_EQ(layout.ComponentNames().back(), facts.last_component);

    const int n = layout.num_components();
    ASSERT_EQ(corpus.util_frac.rows(), facts.rows);
    ASSERT_EQ(corpus.util_frac.cols(), n);
    ASSERT_EQ(static_cast<int>(corpus.benchmark.size()), facts.rows);
    EXPECT_EQ(corpus.line.front(), 5);
    EXPECT_EQ(corpus.line.back(), 4 + facts.rows);
    EXPECT_EQ(corpus.benchmark[0], facts.first_benchmark);
    EXPECT_EQ(corpus.util_frac(0, 0), facts.first_util);
    EXPECT_EQ(corpus.util_frac(0, n - 1), facts.last_util);
    if (facts.kind == CorpusKind::kActivity) {
      EXPECT_FALSE(corpus.has_power());
      EXPECT_FALSE(corpus.has_freq());
    } else {
      ASSERT_EQ(corpus.power_w.size(), facts.rows);
      ASSERT_EQ(corpus.freq_mhz.cols(), 2);
      EXPECT_EQ(corpus.power_w(0), facts.first_power_w);
      EXPECT_EQ(corpus.freq_mhz(0, 0), facts.first_freq_mhz[0]);
      EXPECT_EQ(corpus.freq_mhz(0, 1), facts.first_freq_mhz[1]);
      EXPECT_GT(corpus.power_w.minCoeff(), 0.0);
    }
    EXPECT_GE(corpus.util_frac.minCoeff(), 0.0);
  }
  // Every gpmTOOL corpus in the folder is covered above (model files are ModelIo's).
  namespace fs = boost::filesystem;
  for (const auto& entry : fs::recursive_directory_iterator(Dataset("gpmtool_tpds2019"))) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".csv" || name.rfind("ref_model_", 0) == 0 ||
        name.find("mapping") != std::string::npos) {
      continue;
    }
    const std::string relative =
        "gpmtool_tpds2019/" + entry.path().parent_path().filename().string() + "/" + name;
    EXPECT_EQ(covered.count(relative), 1u) << relative << " is not checked by this test";
  }
}

TEST(CorpusIoGpmtool, GroupsTitanXTrainingInto102BenchmarksOf64Rows) {
  WATTCAL_REQUIRE_DATASETS();
  const Corpus corpus =
      ReadCorpus(Dataset("gpmtool_tpds2019/gtx_titan_x/train_micro_dvfs_11comp.csv"));
  const std::vector<std::string> benchmarks = corpus.Benchmarks();
  ASSERT_EQ(benchmarks.size(), 102u);
  EXPECT_EQ(benchmarks.front(), "micro_001");
  EXPECT_EQ(benchmarks.back(), "micro_102");
  std::map<std::string, std::set<std::pair<double, double>>> pairs;
  std::map<std::string, int> rows;
  for (int r = 0; r < corpus.rows(); ++r) {
    ++rows[corpus.benchmark[r]];
    pairs[corpus.benchmark[r]].insert({corpus.freq_mhz(r, 0), corpus.freq_mhz(r, 1)});
  }
  for (const std::string& b : benchmarks) {
    EXPECT_EQ(rows[b], 64) << b;
    EXPECT_EQ(pairs[b].size(), 64u) << b << ": one row per V-F pair";
  }
  // The idle benchmark (all utilisations 0) is one of them.
  int idle_rows = 0;
  for (int r = 0; r < corpus.rows(); ++r) idle_rows += corpus.util_frac.row(r).isZero(0.0);
  EXPECT_EQ(idle_rows, 64);
  // 16 core x 4 memory frequencies.
  EXPECT_EQ(corpus.FrequencyLevels(0).size(), 16u);
  EXPECT_EQ(corpus.FrequencyLevels(1), (std::vector<double>{810, 3300, 3505, 4005}));
  EXPECT_EQ(corpus.RowsAtDefault().size(), 102u);
}

TEST(CorpusIoGpmtool, BenchmarkNamesWidenPast999Groups) {
  std::string content = "1\n1000\n1\nA\n";
  for (int i = 0; i < 1000; ++i) content += "10,1000," + std::to_string(i * 1e-4) + "\n";
  content += "11,900,0\n";  // same utilisation as the first row: same benchmark
  const Corpus corpus = ReadCorpus(WriteFile(ScratchDir() + "/t.csv", content));
  ASSERT_EQ(corpus.rows(), 1001);
  EXPECT_EQ(corpus.layout.num_domains(), 1);
  EXPECT_EQ(corpus.benchmark[0], "micro_0001");
  EXPECT_EQ(corpus.benchmark[999], "micro_1000");
  EXPECT_EQ(corpus.benchmark[1000], "micro_0001");
}

TEST(CorpusIoGpmtool, ReadsSamplesAndTreatsFp32AsSp) {
  WATTCAL_REQUIRE_DATASETS();
  // The sample training file is lines 1-2000 of the dataset's example file (FP32/FP64 names).
  const Corpus sample = ReadCorpus(Dataset("../samples/gpmtool/v2_micro_gtxtitanx.csv"));
  EXPECT_EQ(sample.rows(), 1996);
  EXPECT_EQ(sample.layout.ComponentNames().front(), "FP32 ADD");
  const Corpus train =
      ReadCorpus(Dataset("gpmtool_tpds2019/gtx_titan_x/train_micro_dvfs_11comp.csv"));
  EXPECT_EQ(sample.layout.Mismatch(train.layout), "");
  EXPECT_EQ(CanonicalComponentName("FP32 ADD"), CanonicalComponentName("SP ADD"));
  EXPECT_EQ(CanonicalComponentName("FP64 FMA"), CanonicalComponentName("DP FMA"));
  // Data rows are byte-identical to the training file's (README section 1).
  EXPECT_TRUE(sample.util_frac == train.util_frac.topRows(1996));
  EXPECT_TRUE(sample.power_w == train.power_w.head(1996));

  const Corpus real = ReadCorpus(Dataset("../samples/gpmtool/v2_real_gtxtitanx.csv"));
  EXPECT_EQ(real.kind, CorpusKind::kActivity);
  EXPECT_EQ(real.rows(), 30);
  EXPECT_EQ(real.benchmark[1], "cutcp");

  const Corpus seven =
      ReadCorpus(Dataset("gpmtool_tpds2019/gtx_titan_x/train_micro_dvfs_7comp.csv"));
  EXPECT_NE(seven.layout.Mismatch(train.layout), "");
}

TEST(CorpusIoGpmtool, WarnsOnceListingTenUtilisationsAboveOne) {
  std::string content = "1\n1000\n2\nA,B\n";
  for (int i = 0; i < 12; ++i) content += "10,1000,1.5,0.25\n";
  const std::string path = WriteFile(ScratchDir() + "/over.csv", content);
  ::testing::internal::CaptureStderr();
  const Corpus corpus = ReadCorpus(path);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(corpus.util_frac(11, 0), 1.5) << "never clipped";
  size_t warnings = 0;
  for (size_t p = log.find("warning:"); p != std::string::npos; p = log.find("warning:", p + 1)) {
    ++warnings;
  }
  EXPECT_EQ(warnings, 1u) << log;
  EXPECT_NE(log.find("12 utilisation value(s) above 1.05"), std::string::npos) << log;
  EXPECT_NE(log.find(path + ":5 A=1.5"), std::string::npos) << log;
  EXPECT_NE(log.find(path + ":14 A=1.5"), std::string::npos) << log;
  EXPECT_EQ(log.find(path + ":15 A=1.5"), std::string::npos) << log;
  EXPECT_NE(log.find("and 2 more"), std::string::npos) << log;
}

TEST(CorpusIoGpmtool, RealFilesWithUtilisationsAboveOneWarn) {
  WATTCAL_REQUIRE_DATASETS();
  // The RX 580 counters reach 1.42 (432 values above 1, 408 above the 1.05 warning threshold
  // of util/bounds.h); Titan V reaches 1.022 (48 values, no warning).
  ::testing::internal::CaptureStderr();
  const Corpus amd = ReadCorpus(Dataset("gpmtool_tpds2019/amd_rx580/micro_dvfs_13comp.csv"));
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("408 utilisation value(s) above 1.05"), std::string::npos) << log;
  EXPECT_NE(log.find("and 398 more"), std::string::npos) << log;
  EXPECT_NEAR(amd.util_frac.maxCoeff(), 1.4212, 1e-12);
}

TEST(CorpusIoGpmtool, CountsLinesAcrossBlankLinesAndCrlf) {
  const std::string path =
      WriteFile(ScratchDir() + "/crlf.csv",
                "1\r\n1000\r\n1\r\nA\r\n10,1000,0.5\r\n\r\n11,900,0.5\r\n12,800,x\r\n");
  try {
    ReadCorpus(path);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 8);
    EXPECT_EQ(e.field(), "U[A]");
  }
}

// One bad input, and where its InputError must point.
struct BadInput {
  std::string name;
  std::string content;
  int64_t line;
  std::string field;
  std::string message_part;
};

void ExpectInputError(const BadInput& bad, const CorpusReadOptions& options = {}) {
  SCOPED_TRACE(bad.name);
  const std::string path = WriteFile(ScratchDir() + "/" + bad.name + ".csv", bad.content);
  try {
    ReadCorpus(path, options);
    ADD_FAILURE() << bad.name << ": expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.line(), bad.line) << e.what();
    EXPECT_EQ(e.field(), bad.field) << e.what();
    EXPECT_NE(e.message().find(bad.message_part), std::string::npos) << e.what();
  }
}

TEST(CorpusIoGpmtool, BadInputsNameFileLineAndField) {
  const std::string h = ::wattcal::testing::SmallGpmtoolFixture().header;
  const std::vector<BadInput> cases = {
      {"empty", "", 1, "", "empty"},
      {"blank_only", "\n\n", 1, "", "empty"},
      {"neither_format", "name,power_w,SP\na,1,0.5\n", 1, "header line 1", "'benchmark'"},
      {"header_only", h, 4, "", "no data rows"},
      {"truncated_header", "2\n975,3505\n", 2, "header line 3", "ends inside"},
      {"three_domains", "3\n975,3505,100\n1,1,1\nA,B,C\n", 1, "header line 1", "1 or 2"},
      {"domains_not_a_number", "two\n975,3505\n2,1\nA,B,C\n", 1, "header line 1", "'two'"},
      {"defaults_count", "2\n975\n2,1\nA,B,C\n", 2, "header line 2", "expected 2 default"},
      {"default_zero", "2\n975,0\n2,1\nA,B,C\n", 2, "header line 2", "must be > 0"},
      {"counts_fraction", "2\n975,3505\n1.5,1\nA,B\n", 3, "header line 3", "whole number"},
      {"names_vs_counts", "2\n975,3505\n2,1\nA,B,C,D\n", 4, "header line 4",
       "line 3 declares 3 components (2+1), this line names 4"},
      {"duplicate_name", "2\n975,3505\n2,1\nSP,FP32,DRAM\n", 4, "header line 4", "twice"},
      {"row_width_unknown", h + "1,2\n", 5, "", "got 2"},
      {"row_width_changes", h + "100,975,3505,0.1,0.2,0.3\n100,975,3505,0.1,0.2\n", 6, "",
       "expected 6 fields (as on line 5), got 5"},
      {"power_not_a_number", h + "abc,975,3505,0.1,0.2,0.3\n", 5, "power_w", "'abc'"},
      {"power_zero", h + "0,975,3505,0.1,0.2,0.3\n", 5, "power_w", "> 0"},
      {"power_negative", h + "100,975,3505,0.1,0.2,0.3\n-3,975,3505,0.1,0.2,0.3\n", 6, "power_w",
       "> 0"},
      {"core_freq_inf", h + "100,inf,3505,0.1,0.2,0.3\n", 5, "f_core_mhz", "finite"},
      {"mem_freq_zero", h + "100,975,0,0.1,0.2,0.3\n", 5, "f_mem_mhz", "> 0"},
      {"mem_freq_negative", h + "100,975,-1,0.1,0.2,0.3\n", 5, "f_mem_mhz", "> 0"},
      {"util_nan", h + "100,975,3505,nan,0.2,0.3\n", 5, "U[SP]", "finite"},
      {"util_empty", h + "100,975,3505,0.1,,0.3\n", 5, "U[INT]", "empty"},
      {"util_negative", h + "100,975,3505,0.1,0.2,-0.01\n", 5, "U[DRAM]", ">= 0"},
      {"measured_no_name", h + "a,100,975,3505,0.1,0.2,0.3\n,100,975,3505,0.1,0.2,0.3\n", 6,
       "benchmark", "empty"},
      {"prediction_bad_util", h + "a,0.1,0.2,0.3\nb,0.1,x,0.3\n", 6, "U[INT]", "'x'"},
  };
  for (const BadInput& bad : cases) ExpectInputError(bad);
}

TEST(CorpusIoTidy, ConvertsUnitsAndReadsDomainPrefixesInAnyOrder) {
  const std::string path =
      WriteFile(ScratchDir() + "/tidy.csv",
                "benchmark,core:SP,mem:DRAM,f_mem_mhz,power_mw,INT,f_core_ghz\n"
                "gemm,0.5,0.25,3505,185123,0.125,1.164\n"
                "gemm,0.5,0.25,3505,150000,0.125,0.975\n"
                "\n"
                "idle,0,0,810,60000.5,0,0.595\n");
  CorpusReadOptions options;
  options.default_core_mhz = 975;
  options.default_mem_mhz = 3505;
  const Corpus corpus = ReadCorpus(path, options);
  EXPECT_EQ(corpus.kind, CorpusKind::kMeasured);
  ASSERT_EQ(corpus.rows(), 3);
  ASSERT_EQ(corpus.layout.num_domains(), 2);
  EXPECT_EQ(corpus.layout.domains[0].components, (std::vector<std::string>{"SP", "INT"}));
  EXPECT_EQ(corpus.layout.domains[1].components, (std::vector<std::string>{"DRAM"}));
  EXPECT_EQ(corpus.layout.domains[0].default_freq_mhz, 975);
  EXPECT_EQ(corpus.layout.domains[1].default_freq_mhz, 3505);
  EXPECT_EQ(corpus.benchmark, (std::vector<std::string>{"gemm", "gemm", "idle"}));
  EXPECT_EQ(corpus.line, (std::vector<int64_t>{2, 3, 5}));
  EXPECT_DOUBLE_EQ(corpus.power_w(0), 185.123);
  EXPECT_DOUBLE_EQ(corpus.power_w(2), 60.0005);
  // GHz are converted to exact MHz, so the rows at 0.975 GHz are at the default pair.
  EXPECT_EQ(corpus.freq_mhz(0, 0), 1164.0);
  EXPECT_EQ(corpus.freq_mhz(1, 0), 975.0);
  EXPECT_EQ(corpus.freq_mhz(2, 0), 595.0);
  EXPECT_EQ(corpus.freq_mhz(2, 1), 810.0);
  EXPECT_EQ(corpus.RowsAtDefault(), (std::vector<int>{1}));
  // util_frac columns follow the layout (core SP, core INT, mem DRAM), not the file.
  EXPECT_EQ(corpus.util_frac(0, 0), 0.5);
  EXPECT_EQ(corpus.util_frac(0, 1), 0.125);
  EXPECT_EQ(corpus.util_frac(0, 2), 0.25);
}

TEST(CorpusIoTidy, KhzAndSingleDomainWithInferredDefault) {
  const Corpus corpus = ReadCorpus(WriteFile(ScratchDir() + "/tidy.csv",
                                             "benchmark,power_w,f_core_khz,SP\n"
                                             "a,100,975000,0.5\n"
                                             "b,120,975000,0.75\n"));
  ASSERT_EQ(corpus.layout.num_domains(), 1);
  EXPECT_EQ(corpus.layout.domains[0].default_freq_mhz, 975.0);
  EXPECT_EQ(corpus.freq_mhz(1, 0), 975.0);
  EXPECT_EQ(corpus.Benchmarks(), (std::vector<std::string>{"a", "b"}));
}

TEST(CorpusIoTidy, InfersTheDefaultPairOnlyWhenTheFileHasOne) {
  const std::string content =
      "benchmark,power_w,f_core_mhz,f_mem_mhz,SP,mem:DRAM\n"
      "a,100,975,3505,0.5,0.1\n"
      "a,120,1164,3505,0.5,0.1\n";
  ExpectInputError({"two_pairs", content, 3, "f_core_mhz", "--default-core-mhz"});
  CorpusReadOptions options;
  options.default_core_mhz = 975;
  const Corpus corpus = ReadCorpus(WriteFile(ScratchDir() + "/tidy.csv", content), options);
  EXPECT_EQ(corpus.layout.domains[0].default_freq_mhz, 975.0);
  EXPECT_EQ(corpus.layout.domains[1].default_freq_mhz, 3505.0) << "single memory frequency";
}

TEST(CorpusIoTidy, PreambleStatesTheDefaultPair) {
  // wattcal-ingest writes the default pair in a comment line before the header.
  const std::string content =
      "# wattcal-tidy default_f_core_mhz=975 default_f_mem_mhz=3505\n"
      "benchmark,power_w,f_core_mhz,f_mem_mhz,SP,mem:DRAM\n"
      "a,100,975,3505,0.5,0.1\n"
      "a,120,1164,3505,0.5,0.1\n"
      "b,90,1164,,0.5,0.1\n";
  const std::string path = WriteFile(ScratchDir() + "/tidy.csv", content);
  try {
    ReadCorpus(path);
    FAIL() << "expected the empty f_mem_mhz cell on line 5 to be rejected";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 5) << e.what();  // line numbers count the preamble
  }
  const std::string good = content.substr(0, content.rfind("b,90"));
  const Corpus corpus = ReadCorpus(WriteFile(ScratchDir() + "/good.csv", good));
  EXPECT_EQ(corpus.layout.domains[0].default_freq_mhz, 975.0);
  EXPECT_EQ(corpus.layout.domains[1].default_freq_mhz, 3505.0);
  EXPECT_EQ(corpus.components_line, 2);
  EXPECT_EQ(corpus.line.front(), 3);
  // Options win over the preamble.
  CorpusReadOptions options;
  options.default_core_mhz = 1164;
  EXPECT_EQ(ReadCorpus(WriteFile(ScratchDir() + "/o.csv", good), options)
                .layout.domains[0]
                .default_freq_mhz,
            1164.0);
  // A bad value in the preamble names its line and key.
  try {
    ReadCorpus(WriteFile(ScratchDir() + "/bad.csv",
                         "# default_f_core_mhz=abc\n" + good.substr(good.find('\n') + 1)));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 1);
    EXPECT_EQ(e.field(), "default_f_core_mhz");
  }
}

TEST(CorpusIoTidy, WithoutPowerIsAnActivityCorpus) {
  const Corpus no_freq =
      ReadCorpus(WriteFile(ScratchDir() + "/a.csv", "benchmark,SP,mem:DRAM\nx,0.5,0.25\n"));
  EXPECT_EQ(no_freq.kind, CorpusKind::kActivity);
  EXPECT_FALSE(no_freq.has_power());
  EXPECT_FALSE(no_freq.has_freq());
  EXPECT_EQ(no_freq.layout.num_domains(), 2);
  EXPECT_EQ(no_freq.layout.domains[0].default_freq_mhz, 0.0) << "unknown";

  const Corpus with_freq =
      ReadCorpus(WriteFile(ScratchDir() + "/b.csv", "benchmark,f_core_mhz,SP\nx,1164,0.5\n"));
  EXPECT_EQ(with_freq.kind, CorpusKind::kActivity);
  ASSERT_TRUE(with_freq.has_freq());
  EXPECT_EQ(with_freq.freq_mhz(0, 0), 1164.0);
  EXPECT_EQ(with_freq.layout.domains[0].default_freq_mhz, 1164.0);
}

// A per-workload measured table (wattcal-ingest --per-workload) carries the windows' length as they
// ran and their energy: read as such, not as two components, and written back the same.
TEST(CorpusIoTidy, DurationAndEnergyColumnsRoundTrip) {
  const std::string text =
      "# wattcal-tidy default_f_core_mhz=1980\n"
      "benchmark,power_w,f_core_mhz,flags,duration_s,energy_j,core:SP\n"
      "gemm,695.5,1980,power_cap,2.3,1599.5,0.5\n"
      "other,100,1980,,1.5,,0.25\n";
  const Corpus c = ReadCorpus(WriteFile(ScratchDir() + "/e.csv", text));
  ASSERT_TRUE(c.has_energy());
  EXPECT_EQ(c.layout.ComponentNames(), std::vector<std::string>({"SP"}));
  EXPECT_DOUBLE_EQ(c.duration_s[0], 2.3);
  EXPECT_DOUBLE_EQ(c.energy_j[0], 1599.5);
  EXPECT_TRUE(std::isnan(c.energy_j[1]));  // an empty cell: unknown
  EXPECT_EQ(CorpusToTidyCsv(c), text);
  EXPECT_EQ(c.Subset({1}).duration_s, std::vector<double>({1.5}));
  EXPECT_FALSE(
      ReadCorpus(WriteFile(ScratchDir() + "/n.csv", "benchmark,SP\nx,0.5\n")).has_energy());
}

TEST(CorpusIoTidy, BadInputsNameFileLineAndField) {
  const std::string h = "benchmark,power_w,f_core_mhz,SP\n";
  const std::vector<BadInput> cases = {
      {"header_only", h, 1, "", "no data rows"},
      {"column_count", h + "a,100,975,0.5\nb,100,975\n", 3, "", "expected 4 fields"},
      // (power_kw and f_core_hz are read since the one unit table, io/units.h.)
      {"power_unit", "benchmark,power_wh,f_core_mhz,SP\na,1,975,0.5\n", 1, "power_wh", "power_mw"},
      {"freq_unit", "benchmark,power_w,f_core_rpm,SP\na,1,975,0.5\n", 1, "f_core_rpm",
       "f_core_ghz"},
      {"mem_freq_unit", "benchmark,power_w,f_core_mhz,f_mem_mts,SP\na,1,975,1,0.5\n", 1,
       "f_mem_mts", "f_mem_mhz"},
      {"domain_prefix", "benchmark,power_w,f_core_mhz,gpu:SP\na,1,975,0.5\n", 1, "gpu:SP",
       "core:NAME"},
      {"no_core_freq", "benchmark,power_w,SP\na,1,0.5\n", 1, "f_core_mhz", "missing column"},
      {"no_mem_freq", "benchmark,power_w,f_core_mhz,SP,mem:DRAM\na,1,975,0.5,0.1\n", 1, "f_mem_mhz",
       "missing column"},
      {"no_components", "benchmark,power_w,f_core_mhz\na,1,975\n", 1, "", "no component"},
      {"duplicate_component", "benchmark,SP,core:FP32\na,0.5,0.5\n", 1, "core:FP32", "twice"},
      {"power_negative_mw", "benchmark,power_mw,f_core_mhz,SP\na,-5,975,0.5\n", 2, "power_mw",
       "> 0"},
      {"freq_zero_ghz", "benchmark,power_w,f_core_ghz,SP\na,5,0,0.5\n", 2, "f_core_ghz", "> 0"},
      {"util_text", h + "a,100,975,0.5\nb,100,975,high\n", 3, "SP", "'high'"},
      {"util_negative", "benchmark,mem:DRAM\na,-0.5\n", 2, "mem:DRAM", ">= 0"},
      {"no_name", h + ",100,975,0.5\n", 2, "benchmark", "empty"},
      {"energy_alone", "benchmark,power_w,f_core_mhz,energy_j,SP\na,1,975,5,0.5\n", 1, "energy_j",
       "go together"},
      {"energy_negative", "benchmark,power_w,f_core_mhz,duration_s,energy_j,SP\na,1,975,2,-5,0.5\n",
       2, "energy_j", "> 0"},
      {"duration_twice", "benchmark,duration_s,duration_s,energy_j,SP\na,1,1,5,0.5\n", 1,
       "duration_s", "a second duration_s column"},
  };
  for (const BadInput& bad : cases) ExpectInputError(bad);
}

}  // namespace
}  // namespace wattcal
