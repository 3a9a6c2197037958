// End-to-end tests of SPEC.md's "Contracts every stage keeps", run as a user runs the stages
// (build/bin/wattcal-<stage> through RunStage):
//
//   StageErrors*   bad input data -> exit 2 naming FILE:LINE and the field, and no partial
//                  output (no --out file, no manifest, no *.tmp.* file); bad options -> exit 1
//                  naming the flag; a model of another GPU layout -> exit 2; utilisations
//                  slightly above 1 -> a warning, not an error.
//   StageReruns*   same inputs and options -> byte-identical outputs and manifests; the
//                  manifest's SHA-256 is the input's; predict's breakdown sums to its total.
//   FrontDoor*     `wattcal --help`, `wattcal <stage> --help`, an unknown stage.
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <algorithm>
#include <boost/filesystem.hpp>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_support.h"

namespace wattcal {
namespace {

namespace fs = boost::filesystem;
using ::wattcal::testing::CommandResult;
using ::wattcal::testing::Dataset;
using ::wattcal::testing::DatasetsDir;
using ::wattcal::testing::FileExists;
using ::wattcal::testing::HasProvenance;
using ::wattcal::testing::ReadFile;
using ::wattcal::testing::RunStage;
using ::wattcal::testing::ScratchDir;
using ::wattcal::testing::WriteFile;

const char kTitanX[] = "gpmtool_tpds2019/gtx_titan_x/";

// ---------------------------------------------------------------------------------------
// Small helpers.

// Names of the entries of `dir` (sorted); empty when `dir` does not exist.
std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  if (!fs::is_directory(dir)) return names;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// Lowercase hex SHA-256 of `bytes`, computed here with OpenSSL (independently of the
// project's Sha256OfFile); checked against the FIPS 180-2 vector in ManifestRecordsInputSha256.
std::string Sha256Hex(const std::string& bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr);
  static const char* kHex = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

// Runs a stage with `dir` as the working directory (the stage inherits it through popen),
// restoring the test's working directory afterwards.
CommandResult RunStageIn(const std::string& dir, const std::string& program,
                         const std::vector<std::string>& args) {
  const fs::path saved = fs::current_path();
  fs::current_path(dir);
  CommandResult result = RunStage(program, args);
  fs::current_path(saved);
  return result;
}

std::vector<std::string> SplitCsvLine(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream ss(line);
  std::string f;
  while (std::getline(ss, f, ',')) fields.push_back(f);
  if (!line.empty() && line.back() == ',') fields.push_back("");
  return fields;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream ss(text);
  std::string line;
  while (std::getline(ss, line)) lines.push_back(line);
  return lines;
}

// ---------------------------------------------------------------------------------------
// Hand-written training files: 2 domains, default 975/3505 MHz, components SP, INT (core) and
// DRAM (mem), 4 microbenchmarks at 975 and 1100 MHz core. The powers follow the model of
// TPDS Eqs. 4-6 with a0=20 W, a1=0.02, g_SP=0.06, g_INT=0.05 W/MHz, a2=30 W, a3=0.005,
// g_DRAM=0.015 W/MHz, v(1100)=1.05, times up to +-1% noise, so that a fit succeeds
// (CalibratesTheValidFiles checks that) and each broken variant fails for one reason only.

// gpmTOOL format (tests/fixtures/gpmtool/train_sp_int_dram.csv): the header is lines 1-4,
// kGpmtoolRows[i] is on line 5 + i.
const ::wattcal::testing::GpmtoolFixture& kGpmtool = ::wattcal::testing::SmallGpmtoolFixture();
const std::string& kGpmtoolHeader = kGpmtool.header;
const std::vector<std::string>& kGpmtoolRows = kGpmtool.rows;
const int kGpmtoolFirstRowLine = kGpmtool.first_row_line;

// Tidy format, same data: the header is line 1, kTidyRows[i] is on line 2 + i.
const char kTidyHeader[] = "benchmark,power_w,f_core_mhz,f_mem_mhz,SP,INT,mem:DRAM\n";
// The same rows, benchmark b1 .. b4 (two clocks each).
const std::vector<std::string> kTidyRows = [] {
  std::vector<std::string> rows;
  for (size_t i = 0; i < kGpmtoolRows.size(); ++i) {
    rows.push_back("b" + std::to_string(i / 2 + 1) + "," + kGpmtoolRows[i]);
  }
  return rows;
}();
constexpr int kTidyFirstRowLine = 2;
// The tidy file holds two core frequencies, so the default pair is given as options.
const std::vector<std::string> kTidyDefaults = {"--default-core-mhz", "975", "--default-mem-mhz",
                                                "3505"};

std::string Body(const std::vector<std::string>& rows) {
  std::string s;
  for (const std::string& r : rows) s += r + "\n";
  return s;
}

// `rows` with row `index` replaced by `replacement`.
std::vector<std::string> WithRow(std::vector<std::string> rows, size_t index,
                                 const std::string& replacement) {
  rows.at(index) = replacement;
  return rows;
}

// `rows` with every occurrence of `from` replaced by `to`.
std::vector<std::string> Replaced(std::vector<std::string> rows, const std::string& from,
                                  const std::string& to) {
  for (std::string& r : rows) {
    for (size_t at = r.find(from); at != std::string::npos; at = r.find(from, at + to.size())) {
      r.replace(at, from.size(), to);
    }
  }
  return rows;
}

std::string GpmtoolFile(const std::vector<std::string>& rows) { return kGpmtool.Text(rows); }
std::string TidyFile(const std::vector<std::string>& rows) { return kTidyHeader + Body(rows); }

// What a rejected input must produce.
struct Rejection {
  int line = 0;                       // expected FILE:LINE; 0: do not check the line
  std::vector<std::string> mentions;  // substrings the error must contain (field, value)
};

// Writes `content` as the training file, runs wattcal-calibrate on it into an empty output
// folder and checks exit status 2, FILE:LINE, the mentions, and that the output folder is
// still empty afterwards (no model, no export, no manifest, no *.tmp.* file).
void ExpectCalibrateRejects(const std::string& content, const std::vector<std::string>& extra_args,
                            const Rejection& expected) {
  const std::string dir = ScratchDir();
  fs::create_directories(dir + "/in");
  fs::create_directories(dir + "/out");
  const std::string train = WriteFile(dir + "/in/train.csv", content);
  std::vector<std::string> args = {"--train",
                                   train,
                                   "--out",
                                   dir + "/out/model.json",
                                   "--export-gpmtool",
                                   dir + "/out/model_gpmtool.csv"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  const CommandResult r = RunStage("wattcal-calibrate", args);

  EXPECT_EQ(r.exit_code, 2) << r.output;
  if (expected.line > 0) {
    EXPECT_NE(r.output.find(train + ":" + std::to_string(expected.line) + ":"), std::string::npos)
        << "expected " << train << ":" << expected.line << ": in\n"
        << r.output;
  } else {
    EXPECT_NE(r.output.find(train), std::string::npos) << r.output;
  }
  for (const std::string& m : expected.mentions) {
    EXPECT_NE(r.output.find(m), std::string::npos) << "expected '" << m << "' in\n" << r.output;
  }
  EXPECT_TRUE(ListDir(dir + "/out").empty())
      << "partial output left behind: " << Join(ListDir(dir + "/out"));
  EXPECT_EQ(ListDir(dir + "/in"), std::vector<std::string>{"train.csv"})
      << "stray files beside the input: " << Join(ListDir(dir + "/in"));
}

// ---------------------------------------------------------------------------------------
// StageErrors: bad input data to wattcal-calibrate, gpmTOOL format.

// The control: the unbroken files calibrate (so each failure below is due to its defect).
TEST(StageErrorsControl, CalibratesTheValidFiles) {
  const std::string dir = ScratchDir();
  const std::string gpm = WriteFile(dir + "/gpm.csv", GpmtoolFile(kGpmtoolRows));
  const std::string tidy = WriteFile(dir + "/tidy.csv", TidyFile(kTidyRows));
  CommandResult r =
      RunStage("wattcal-calibrate", {"--train", gpm, "--out", dir + "/gpm.json", "-q"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(FileExists(dir + "/gpm.json"));
  EXPECT_TRUE(HasProvenance(dir + "/gpm.json"));
  std::vector<std::string> args = {"--train", tidy, "--out", dir + "/tidy.json", "-q"};
  args.insert(args.end(), kTidyDefaults.begin(), kTidyDefaults.end());
  r = RunStage("wattcal-calibrate", args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(FileExists(dir + "/tidy.json"));
}

TEST(StageErrorsGpmtool, EmptyFile) { ExpectCalibrateRejects("", {}, {1, {"empty"}}); }

TEST(StageErrorsGpmtool, HeaderOnly) {
  ExpectCalibrateRejects(kGpmtoolHeader, {}, {4, {"no data rows"}});
}

TEST(StageErrorsGpmtool, WrongColumnCountInADataRow) {
  // Row 3 (line 7) has a 7th field; the first row fixed the width at 6.
  ExpectCalibrateRejects(GpmtoolFile(WithRow(kGpmtoolRows, 2, "141.329,975,3505,0.8,0.1,0.05,0.3")),
                         {}, {kGpmtoolFirstRowLine + 2, {"wrong column count", "got 7"}});
}

TEST(StageErrorsGpmtool, NonNumericCell) {
  ExpectCalibrateRejects(GpmtoolFile(WithRow(kGpmtoolRows, 3, "160.483,1100,3505,0.8,abc,0.05")),
                         {}, {kGpmtoolFirstRowLine + 3, {"U[INT]", "'abc'"}});
}

TEST(StageErrorsGpmtool, NanCell) {
  ExpectCalibrateRejects(GpmtoolFile(WithRow(kGpmtoolRows, 1, "104.261,nan,3505,0.1,0.0,0.1")), {},
                         {kGpmtoolFirstRowLine + 1, {"f_core_mhz", "'nan'"}});
}

TEST(StageErrorsGpmtool, NegativePower) {
  ExpectCalibrateRejects(GpmtoolFile(WithRow(kGpmtoolRows, 4, "-131.007,975,3505,0.0,0.7,0.2")), {},
                         {kGpmtoolFirstRowLine + 4, {"power_w", "-131.007"}});
}

TEST(StageErrorsGpmtool, NegativeUtilisation) {
  ExpectCalibrateRejects(GpmtoolFile(WithRow(kGpmtoolRows, 5, "146.033,1100,3505,0.0,0.7,-0.2")),
                         {}, {kGpmtoolFirstRowLine + 5, {"U[DRAM]", "-0.2"}});
}

TEST(StageErrorsGpmtool, DefaultPairWithoutRows) {
  // Header line 2 declares 975,3505; the rows are at 1000/3505 and 1100/3505 only.
  ExpectCalibrateRejects(GpmtoolFile(Replaced(kGpmtoolRows, ",975,", ",1000,")), {},
                         {2, {"core default frequency", "975"}});
}

// ---------------------------------------------------------------------------------------
// StageErrors: the same defects in a tidy CSV (header on line 1).

TEST(StageErrorsTidy, EmptyFile) { ExpectCalibrateRejects("", kTidyDefaults, {1, {"empty"}}); }

TEST(StageErrorsTidy, HeaderOnly) {
  ExpectCalibrateRejects(kTidyHeader, kTidyDefaults, {1, {"no data rows"}});
}

TEST(StageErrorsTidy, WrongColumnCountInADataRow) {
  ExpectCalibrateRejects(TidyFile(WithRow(kTidyRows, 2, "b2,141.329,975,3505,0.8,0.1")),
                         kTidyDefaults, {kTidyFirstRowLine + 2, {"wrong column count", "got 6"}});
}

TEST(StageErrorsTidy, NonNumericCell) {
  ExpectCalibrateRejects(TidyFile(WithRow(kTidyRows, 3, "b2,160.483,1100,3505,x1,0.1,0.05")),
                         kTidyDefaults, {kTidyFirstRowLine + 3, {"SP", "'x1'"}});
}

TEST(StageErrorsTidy, NanCell) {
  ExpectCalibrateRejects(TidyFile(WithRow(kTidyRows, 1, "b1,104.261,1100,3505,0.1,0.0,nan")),
                         kTidyDefaults, {kTidyFirstRowLine + 1, {"mem:DRAM", "'nan'"}});
}

TEST(StageErrorsTidy, NegativePower) {
  ExpectCalibrateRejects(TidyFile(WithRow(kTidyRows, 4, "b3,-131.007,975,3505,0.0,0.7,0.2")),
                         kTidyDefaults, {kTidyFirstRowLine + 4, {"power_w", "-131.007"}});
}

TEST(StageErrorsTidy, NegativeUtilisation) {
  ExpectCalibrateRejects(TidyFile(WithRow(kTidyRows, 5, "b3,146.033,1100,3505,0.0,-0.7,0.2")),
                         kTidyDefaults, {kTidyFirstRowLine + 5, {"INT", "-0.7"}});
}

TEST(StageErrorsTidy, UnknownPowerUnit) {
  ExpectCalibrateRejects(
      // (power_kw is read since the one unit table, io/units.h: an unknown unit instead.)
      "benchmark,power_wh,f_core_mhz,f_mem_mhz,SP,INT,mem:DRAM\n" + Body(kTidyRows), kTidyDefaults,
      {1, {"power_wh", "power_mw"}});
}

TEST(StageErrorsTidy, DefaultPairWithoutRows) {
  // --default-core-mhz 975, but the rows are at 1000 and 1100 MHz only. The default pair
  // comes from the options, not from a line of the file: the error names the option.
  ExpectCalibrateRejects(TidyFile(Replaced(kTidyRows, ",975,", ",1000,")), kTidyDefaults,
                         {0, {"--default-core-mhz", "975"}});
}

TEST(StageErrorsTidy, DefaultPairNotInferable) {
  // Without --default-*-mhz the file's single frequency would be the default; it has two.
  // The first row at another core frequency (1100 MHz) is on line 3.
  ExpectCalibrateRejects(TidyFile(kTidyRows), {},
                         {kTidyFirstRowLine + 1, {"f_core_mhz", "--default-core-mhz"}});
}

// ---------------------------------------------------------------------------------------
// StageErrors: bad options -> exit 1 naming the flag, and nothing written.

// Runs `program` with `args` in a fresh folder holding a valid training file (train.csv) and
// checks exit 1, that every one of `mentions` is in the output and that only train.csv remains.
void ExpectOptionRejected(const std::string& program, std::vector<std::string> args,
                          const std::vector<std::string>& mentions) {
  const std::string dir = ScratchDir();
  const std::string train = WriteFile(dir + "/train.csv", GpmtoolFile(kGpmtoolRows));
  for (std::string& a : args) {
    if (a.rfind("@", 0) == 0) a = dir + "/" + a.substr(1);  // @name: a file in the folder
  }
  const CommandResult r = RunStage(program, args);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  for (const std::string& m : mentions) {
    EXPECT_NE(r.output.find(m), std::string::npos) << "expected '" << m << "' in\n" << r.output;
  }
  EXPECT_EQ(ListDir(dir), std::vector<std::string>{"train.csv"}) << Join(ListDir(dir));
}

TEST(StageErrorsOptions, MissingRequiredTrain) {
  ExpectOptionRejected("wattcal-calibrate", {"--out", "@model.json"}, {"--train"});
}

TEST(StageErrorsOptions, MissingRequiredOut) {
  ExpectOptionRejected("wattcal-calibrate", {"--train", "@train.csv"}, {"--out"});
}

TEST(StageErrorsOptions, UnknownLoss) {
  ExpectOptionRejected("wattcal-calibrate",
                       {"--train", "@train.csv", "--out", "@model.json", "--loss", "foo"},
                       {"--loss", "foo"});
}

// Every enum flag takes its library's names only, and names the flag and the value it refuses.
TEST(StageErrorsOptions, UnknownNamesOfEnumFlags) {
  ExpectOptionRejected("wattcal-calibrate",
                       {"--train", "@train.csv", "--out", "@model.json", "--method", "linear"},
                       {"--method", "linear"});
  ExpectOptionRejected("wattcal-ingest",
                       {"--capture", "@.", "--tidy", "@t.csv", "--capture-power", "smi"},
                       {"--capture-power", "smi"});
  ExpectOptionRejected("wattcal-port",
                       {"gpu", "--model", "@train.csv", "--base-gpu", "@train.csv", "--target-gpu",
                        "@train.csv", "--out", "@m.json", "--constant-scaling", "voltage"},
                       {"--constant-scaling", "voltage"});
}

TEST(StageErrorsOptions, UnknownModeOfValidate) {
  // --model and --heldout only need to exist for the parser; it stops at --mode.
  ExpectOptionRejected("wattcal-validate",
                       {"--model", "@train.csv", "--heldout", "@train.csv", "--mode", "foo",
                        "--predictions", "@p.csv", "--metrics", "@m.json"},
                       {"--mode", "foo"});
}

TEST(StageErrorsOptions, UnknownModeOfPredict) {
  ExpectOptionRejected(
      "wattcal-predict",
      {"--model", "@train.csv", "--activity", "@train.csv", "--out", "@p.csv", "--mode", "foo"},
      {"--mode", "foo"});
}

TEST(StageErrorsOptions, AlternatingSolverRejectsHuberLoss) {
  // gpmTOOL's alternating algorithm is L2 only (calibrate.h).
  ExpectOptionRejected("wattcal-calibrate",
                       {"--train", "@train.csv", "--out", "@model.json", "--solver", "alternating",
                        "--loss", "huber"},
                       {"alternating", "huber", "loss"});
}

TEST(StageErrorsOptions, ZeroThreads) {
  ExpectOptionRejected("wattcal-calibrate",
                       {"--train", "@train.csv", "--out", "@model.json", "--threads", "0"},
                       {"--threads"});
}

// ---------------------------------------------------------------------------------------
// StageErrors: utilisations slightly above 1 are kept and warned about, not rejected.

TEST(StageErrorsLenient, UtilisationSlightlyAboveOneWarnsNamingFileLineAndComponent) {
  const std::string dir = ScratchDir();
  // Both rows of microbenchmark 2 (lines 7 and 8) read SP = 1.2: above the 1.05 warning
  // threshold, below the 1.5 bound (util/bounds.h).
  std::vector<std::string> rows = WithRow(kGpmtoolRows, 2, "141.329,975,3505,1.2,0.1,0.05");
  rows = WithRow(rows, 3, "160.483,1100,3505,1.2,0.1,0.05");
  const std::string train = WriteFile(dir + "/train.csv", GpmtoolFile(rows));
  const CommandResult r =
      RunStage("wattcal-calibrate", {"--train", train, "--out", dir + "/out/model.json"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(FileExists(dir + "/out/model.json"));
  EXPECT_NE(r.output.find(train + ":7 SP=1.2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(train + ":8 SP=1.2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("above 1.05"), std::string::npos) << r.output;
}

// ---------------------------------------------------------------------------------------
// StageErrors: a model calibrated for another GPU layout (7 components) applied to 11-comp data.

class StageErrorsLayout : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (DatasetsDir().empty()) return;
    dir_ = new std::string(testing::SuiteScratchDir("StageErrorsLayout"));
    model_ = new std::string(*dir_ + "/model_7comp.json");
    calibrate_ = new CommandResult(
        RunStage("wattcal-calibrate",
                 {"--train", Dataset(std::string(kTitanX) + "train_micro_dvfs_7comp.csv"), "--out",
                  *model_, "-q"}));
  }
  static void TearDownTestSuite() {  // the folder: SuiteScratchDir's
    delete dir_;
    delete model_;
    delete calibrate_;
    dir_ = model_ = nullptr;
    calibrate_ = nullptr;
  }
  void SetUp() override {
    WATTCAL_REQUIRE_DATASETS();
    ASSERT_EQ(calibrate_->exit_code, 0) << calibrate_->output;
  }

  static std::string* dir_;
  static std::string* model_;
  static CommandResult* calibrate_;
};
std::string* StageErrorsLayout::dir_ = nullptr;
std::string* StageErrorsLayout::model_ = nullptr;
CommandResult* StageErrorsLayout::calibrate_ = nullptr;

TEST_F(StageErrorsLayout, ValidateRejectsAModelOfAnotherLayout) {
  const std::string out = ScratchDir();
  const std::string heldout = Dataset(std::string(kTitanX) + "DERIVED_real_power_allF_11comp.csv");
  const CommandResult r = RunStage(
      "wattcal-validate", {"--model", *model_, "--heldout", heldout, "--mode", "dvfs",
                           "--predictions", out + "/pred.csv", "--metrics", out + "/metrics.json"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(heldout + ":"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("another GPU layout"), std::string::npos) << r.output;
  EXPECT_TRUE(ListDir(out).empty()) << Join(ListDir(out));
}

TEST_F(StageErrorsLayout, PredictRejectsAModelOfAnotherLayout) {
  const std::string out = ScratchDir();
  for (const char* file :
       {"real_utils_11comp_names_misaligned.csv", "DERIVED_real_power_allF_11comp.csv"}) {
    SCOPED_TRACE(file);
    const std::string activity = Dataset(std::string(kTitanX) + file);
    const CommandResult r = RunStage(
        "wattcal-predict", {"--model", *model_, "--activity", activity, "--out", out + "/P.csv"});
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(activity + ":"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("another GPU layout"), std::string::npos) << r.output;
    EXPECT_TRUE(ListDir(out).empty()) << Join(ListDir(out));
  }
}

// The same with tidy files (no real data needed): the component names are on line 1, the
// header, which is where the error must point (a tidy file has no line 4 here at all).
TEST(StageErrorsLayoutTidy, HeldoutAndActivityOfAnotherLayoutNameTheHeaderLine) {
  const std::string dir = ScratchDir();
  const std::string train = WriteFile(dir + "/train.csv", TidyFile(kTidyRows));
  std::vector<std::string> args = {"--train", train, "--out", dir + "/model.json", "-q"};
  args.insert(args.end(), kTidyDefaults.begin(), kTidyDefaults.end());
  const CommandResult cal = RunStage("wattcal-calibrate", args);
  ASSERT_EQ(cal.exit_code, 0) << cal.output;
  fs::create_directories(dir + "/out");
  // No INT column: the core domain has 1 component where the model has 2.
  const std::string heldout =
      WriteFile(dir + "/heldout.csv",
                "benchmark,power_w,f_core_mhz,f_mem_mhz,SP,mem:DRAM\nb1,99,975,3505,0.1,0.1\n");
  const std::string activity =
      WriteFile(dir + "/activity.csv", "benchmark,SP,mem:DRAM\nb1,0.1,0.1\n");

  CommandResult r =
      RunStage("wattcal-validate",
               {"--model", dir + "/model.json", "--heldout", heldout, "--mode", "dvfs",
                "--predictions", dir + "/out/pred.csv", "--metrics", dir + "/out/metrics.json"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(heldout + ":1:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("another GPU layout"), std::string::npos) << r.output;

  for (const std::string& file : {heldout, activity}) {
    r = RunStage("wattcal-predict",
                 {"--model", dir + "/model.json", "--activity", file, "--out", dir + "/out/P.csv"});
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(file + ":1:"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("another GPU layout"), std::string::npos) << r.output;
  }
  EXPECT_TRUE(ListDir(dir + "/out").empty()) << Join(ListDir(dir + "/out"));
}

// ---------------------------------------------------------------------------------------
// StageReruns: byte-identical reruns on the Titan X data, manifests, predict --breakdown.
//
// The manifests record each output's path as given on the command line. To compare the
// manifests byte for byte, both runs get the same *relative* output paths (out/...) and are
// started from two different working directories (run_a, run_b); the input paths are the same
// absolute paths in both. Then every byte of the two runs must agree: nothing path-dependent
// is hidden by the comparison, and the runs cannot overwrite each other.

class StageReruns : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (DatasetsDir().empty()) return;
    root_ = new std::string(testing::SuiteScratchDir("StageReruns"));
    for (const char* run : {"run_a", "run_b"}) {
      fs::create_directories(*root_ + "/" + run);
      results_.push_back(RunStageIn(*root_ + "/" + run, "wattcal-calibrate",
                                    {"--train", Train(), "--out", "out/model.json",
                                     "--export-gpmtool", "out/model_gpmtool.csv", "-q"}));
    }
  }
  static void TearDownTestSuite() {  // the folder: SuiteScratchDir's
    delete root_;
    root_ = nullptr;
    results_.clear();
  }
  void SetUp() override {
    WATTCAL_REQUIRE_DATASETS();
    for (const CommandResult& r : results_) ASSERT_EQ(r.exit_code, 0) << r.output;
  }

  static std::string Train() {
    return Dataset(std::string(kTitanX) + "train_micro_dvfs_11comp.csv");
  }
  static std::string Run(const char* run) { return *root_ + "/" + run; }
  // The model of run_a, by absolute path (shared by the validate and predict tests).
  static std::string Model() { return Run("run_a") + "/out/model.json"; }

  static std::string* root_;
  static std::vector<CommandResult> results_;
};
std::string* StageReruns::root_ = nullptr;
std::vector<CommandResult> StageReruns::results_;

// The model JSON with the value of `"time_s": ...` (the solver's wall-clock time) blanked.
std::string WithoutSolverTime(const std::string& json) {
  std::string out;
  for (const std::string& line : Lines(json)) {
    const size_t at = line.find("\"time_s\":");
    out += (at == std::string::npos ? line : line.substr(0, at) + "\"time_s\": <masked>") + "\n";
  }
  return out;
}

// The entry of `provenance`'s outputs whose path ends in `name` (null JSON when none).
nlohmann::json OutputEntry(const nlohmann::json& provenance, const std::string& name) {
  for (const nlohmann::json& o : provenance.at("outputs")) {
    const std::string p = o.at("path");
    if (p.size() >= name.size() && p.compare(p.size() - name.size(), name.size(), name) == 0)
      return o;
  }
  return nlohmann::json();
}

TEST_F(StageReruns, CalibrateOutputsAreByteIdentical) {
  const std::vector<std::string> files = {"model.json", "model_gpmtool.csv",
                                          "provenance/calibrate-model.json.json"};
  EXPECT_EQ(ListDir(Run("run_a") + "/out"),
            (std::vector<std::string>{"model.json", "model_gpmtool.csv", "provenance"}));
  EXPECT_EQ(ListDir(Run("run_a") + "/out"), ListDir(Run("run_b") + "/out"));
  for (const std::string& f : files) {
    const std::string a = ReadFile(Run("run_a") + "/out/" + f);
    const std::string b = ReadFile(Run("run_b") + "/out/" + f);
    ASSERT_FALSE(a.empty()) << f;
    EXPECT_TRUE(a == b) << f << " differs between two identical runs";
  }
  // Diagnosis when the model JSON differs: it must at least agree outside the solver's
  // wall-clock time, and the provenance must differ only through the model's SHA-256.
  const std::string model_a = ReadFile(Run("run_a") + "/out/model.json");
  const std::string model_b = ReadFile(Run("run_b") + "/out/model.json");
  EXPECT_EQ(WithoutSolverTime(model_a), WithoutSolverTime(model_b));
  nlohmann::json ma =
      nlohmann::json::parse(ReadFile(Run("run_a") + "/out/provenance/calibrate-model.json.json"));
  nlohmann::json mb =
      nlohmann::json::parse(ReadFile(Run("run_b") + "/out/provenance/calibrate-model.json.json"));
  EXPECT_EQ(OutputEntry(ma, "model.json")["sha256"], Sha256Hex(model_a));
  EXPECT_EQ(OutputEntry(mb, "model.json")["sha256"], Sha256Hex(model_b));
  ma["outputs"][0].erase("sha256");
  mb["outputs"][0].erase("sha256");
  EXPECT_EQ(ma.dump(), mb.dump());
}

TEST_F(StageReruns, ProvenanceRecordsInputSha256) {
  // The hash helper itself, on the FIPS 180-2 example ("abc", as `echo -n abc | sha256sum`).
  ASSERT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");

  const std::string train_bytes = ReadFile(Train());
  ASSERT_FALSE(train_bytes.empty());
  for (const char* f : {"model.json", "model_gpmtool.csv"}) {
    SCOPED_TRACE(f);
    const std::string output = Run("run_a") + "/out/" + f;
    const nlohmann::json m = nlohmann::json::parse(ReadFile(testing::ProvenancePath(output)));
    EXPECT_EQ(m.at("stage"), "calibrate");
    EXPECT_FALSE(m.at("wattcal_version").get<std::string>().empty());
    ASSERT_EQ(m.at("inputs").size(), 1u);
    EXPECT_EQ(m["inputs"][0].at("path"), Train());
    EXPECT_EQ(m["inputs"][0].at("sha256"), Sha256Hex(train_bytes));
    EXPECT_EQ(m["inputs"][0].at("bytes"), train_bytes.size());
    // One provenance file for the run: the command line, the source revision, both outputs.
    EXPECT_EQ(m.at("argv").at(0), "wattcal-calibrate");
    EXPECT_FALSE(m.at("source_revision").get<std::string>().empty());
    EXPECT_EQ(m.at("outputs").size(), 2u);
    EXPECT_EQ(OutputEntry(m, f).at("path"), std::string("out/") + f);
    EXPECT_EQ(OutputEntry(m, f).at("sha256"), Sha256Hex(ReadFile(output)));
    // The effective options, defaults included.
    EXPECT_EQ(m.at("options").at("method"), "dvfs");
    EXPECT_EQ(m["options"].at("solver"), "joint");
    EXPECT_EQ(m["options"].at("loss"), "huber");
    EXPECT_EQ(m["options"].at("threads"), 1);
  }
}

TEST_F(StageReruns, ValidateOutputsAreByteIdentical) {
  const std::string heldout = Dataset(std::string(kTitanX) + "DERIVED_real_power_allF_11comp.csv");
  std::vector<std::string> files = {"pred.csv", "metrics.json",
                                    "provenance/validate-pred.csv.json"};
  std::vector<std::string> args = {
      "--model",       Model(),      "--heldout", heldout,          "--mode", "dvfs",
      "--predictions", "v/pred.csv", "--metrics", "v/metrics.json", "-q"};
#ifdef WATTCAL_GNUPLOT
  args.insert(args.end(), {"--plot", "v/plot.png"});
  // --plot draws the scatter and the per-workload error chart, each with an SVG twin.
  files.insert(files.end(), {"plot.png", "plot.svg", "plot_workloads.png", "plot_workloads.svg"});
#endif
  for (const char* run : {"run_a", "run_b"}) {
    const CommandResult r = RunStageIn(Run(run), "wattcal-validate", args);
    ASSERT_EQ(r.exit_code, 0) << run << "\n" << r.output;
  }
  std::vector<std::string> expected;
  for (const std::string& f : files) {
    if (f.rfind("provenance/", 0) != 0) expected.push_back(f);
  }
  expected.push_back("provenance");
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(ListDir(Run("run_a") + "/v"), expected);
  EXPECT_EQ(ListDir(Run("run_b") + "/v"), expected);
  for (const std::string& f : ListDir(Run("run_a") + "/v/provenance"))
    files.push_back("provenance/" + f);
  for (const std::string& f : files) {
    const std::string a = ReadFile(Run("run_a") + "/v/" + f);
    const std::string b = ReadFile(Run("run_b") + "/v/" + f);
    ASSERT_FALSE(a.empty()) << f;
    EXPECT_TRUE(a == b) << f << " differs between two identical runs";
  }
  // 30 benchmarks x 64 V-F pairs, plus the header.
  EXPECT_EQ(Lines(ReadFile(Run("run_a") + "/v/pred.csv")).size(), 1u + 30 * 64);
  const nlohmann::json m =
      nlohmann::json::parse(ReadFile(Run("run_a") + "/v/provenance/validate-pred.csv.json"));
  ASSERT_EQ(m.at("inputs").size(), 2u);
  EXPECT_EQ(m["inputs"][0].at("sha256"), Sha256Hex(ReadFile(Model())));
  EXPECT_EQ(m["inputs"][1].at("sha256"), Sha256Hex(ReadFile(heldout)));
}

#ifdef WATTCAL_GNUPLOT
// --plot draws the per-workload error chart beside the scatter and --summary-md links it;
// --no-workload-plot leaves it out (and the summary does not name it).
TEST_F(StageReruns, ValidateWorkloadChartFollowsNoWorkloadPlot) {
  const std::string heldout = Dataset(std::string(kTitanX) + "DERIVED_real_power_allF_11comp.csv");
  for (const bool chart : {true, false}) {
    const char* dir = chart ? "with_chart" : "without_chart";
    std::vector<std::string> args = {
        "--model", Model(),         "--heldout",    heldout,        "--mode",
        "dvfs",    "--predictions", "v/pred.csv",   "--metrics",    "v/metrics.json",
        "--plot",  "v/plot.png",    "--summary-md", "v/summary.md", "-q"};
    if (!chart) args.push_back("--no-workload-plot");
    boost::filesystem::create_directories(Run(dir));
    const CommandResult r = RunStageIn(Run(dir), "wattcal-validate", args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::vector<std::string> listed = ListDir(Run(dir) + "/v");
    const bool drawn = std::count(listed.begin(), listed.end(), "plot_workloads.png") == 1;
    EXPECT_EQ(drawn, chart) << dir;
    const std::string summary = ReadFile(Run(dir) + "/v/summary.md");
    EXPECT_EQ(summary.find("plot_workloads.png") != std::string::npos, chart) << summary;
  }
}
#endif

TEST_F(StageReruns, PredictBreakdownOnAliasedComponentNamesSumsToTheTotal) {
  // The activity file names FP32 ADD, FP64 MUL, ... where the model says SP ADD, DP MUL, ...:
  // aliases of the same components, so it is accepted.
  const std::string out = ScratchDir();
  const std::string activity =
      Dataset(std::string(kTitanX) + "real_utils_11comp_names_misaligned.csv");
  const CommandResult r = RunStage("wattcal-predict", {"--model", Model(), "--activity", activity,
                                                       "--out", out + "/P.csv", "--breakdown"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(HasProvenance(out + "/P.csv"));

  const std::vector<std::string> lines = Lines(ReadFile(out + "/P.csv"));
  ASSERT_EQ(lines.size(), 1u + 30 * 64);
  const std::vector<std::string> header = SplitCsvLine(lines[0]);
  // benchmark, f_core_mhz, f_mem_mhz, predicted_w, uncapped_w, capped, capped_f_core_mhz (no
  // board limit here: nothing capped), then 2 static + 2 idle + 12 components.
  constexpr size_t kTerms = 7;  // the first term's column
  ASSERT_EQ(header.size(), kTerms + 2 + 2 + 12) << lines[0];
  EXPECT_EQ(header[3], "predicted_w");
  EXPECT_EQ(header[5], "capped");
  EXPECT_EQ(header[kTerms], "static_core_w");
  EXPECT_EQ(header.back(), "dram_w");
  // Each value is printed with 6 decimals, i.e. rounded by at most 0.5e-6 W, so the printed
  // terms may sum to the printed total only within (16 terms + 1 total) x 0.5e-6 W.
  const double tolerance_w = (header.size() - kTerms + 1) * 0.5e-6 + 1e-9;
  std::map<std::string, int> rows_per_benchmark;
  std::map<std::string, int> rows_per_pair;
  double worst_w = 0.0;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> f = SplitCsvLine(lines[i]);
    ASSERT_EQ(f.size(), header.size()) << "line " << i + 1 << ": " << lines[i];
    ++rows_per_benchmark[f[0]];
    ++rows_per_pair[f[1] + "/" + f[2]];
    const double total_w = std::stod(f[3]);
    double sum_w = 0.0;
    EXPECT_EQ(f[5], "0") << "line " << i + 1;  // no limit, nothing capped
    EXPECT_EQ(f[4], f[3]) << "line " << i + 1;
    for (size_t j = kTerms; j < f.size(); ++j) {
      const double term_w = std::stod(f[j]);
      EXPECT_GE(term_w, 0.0) << "line " << i + 1 << " " << header[j];
      sum_w += term_w;
    }
    EXPECT_GT(total_w, 0.0) << "line " << i + 1;
    EXPECT_NEAR(sum_w, total_w, tolerance_w) << "line " << i + 1 << ": " << lines[i];
    worst_w = std::max(worst_w, std::fabs(sum_w - total_w));
  }
  EXPECT_EQ(rows_per_benchmark.size(), 30u);
  for (const auto& [name, n] : rows_per_benchmark) EXPECT_EQ(n, 64) << name;
  EXPECT_EQ(rows_per_pair.size(), 64u);
  for (const auto& [pair, n] : rows_per_pair) EXPECT_EQ(n, 30) << pair;
  RecordProperty("worst_breakdown_sum_error_w", std::to_string(worst_w));
}

// ---------------------------------------------------------------------------------------
// FrontDoor: `wattcal <stage> ...`.

TEST(FrontDoor, HelpListsTheStages) {
  const CommandResult r = RunStage("wattcal", {"--help"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* stage : {"calibrate", "predict", "validate", "synth"}) {
    EXPECT_NE(r.output.find(std::string("  ") + stage + " "), std::string::npos)
        << stage << " not listed in\n"
        << r.output;
  }
}

TEST(FrontDoor, StageHelpIsTheStagesOwn) {
  const CommandResult r = RunStage("wattcal", {"calibrate", "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("--train"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("wattcal-calibrate"), std::string::npos) << r.output;
}

TEST(FrontDoor, ForwardsArgumentsAndExitStatus) {
  // A stage's exit status passes through the front door unchanged (here 1: --train missing).
  const std::string dir = ScratchDir();
  const CommandResult r = RunStage("wattcal", {"calibrate", "--out", dir + "/model.json"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--train"), std::string::npos) << r.output;
  EXPECT_TRUE(ListDir(dir).empty()) << Join(ListDir(dir));
}

TEST(FrontDoor, UnknownStageFails) {
  const CommandResult r = RunStage("wattcal", {"nosuchstage"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("nosuchstage"), std::string::npos) << r.output;
}

TEST(FrontDoor, NoArgumentsPrintsHelpAndFails) {
  const CommandResult r = RunStage("wattcal", {});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("calibrate"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace wattcal

namespace wattcal {
namespace {

// Flags that are on by default read as such in the help (no CLI11 "{false}" pair), and the
// "off" flag turns them off: the manifest records it.
TEST(StageHelp, OnByDefaultFlagsAreShownAsSuchAndTheirOffFlagsWork) {
  for (const char* stage : {"wattcal-calibrate", "wattcal-validate"}) {
    const testing::CommandResult help = testing::RunStage(stage, {"--help"});
    EXPECT_EQ(help.exit_code, 0) << stage;
    EXPECT_EQ(help.output.find("{false}"), std::string::npos) << help.output;
    EXPECT_NE(help.output.find("--cold-start-only"), std::string::npos) << help.output;
  }
  const std::string dir = testing::ScratchDir();
  const testing::CommandResult synth = testing::RunStage(
      "wattcal-synth",
      {"--spec", std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/virtual_gpu.json",
       "--out-dir", dir + "/s", "-q"});
  ASSERT_EQ(synth.exit_code, 0) << synth.output;
  const std::string train = dir + "/s/train_micro_dvfs.csv";
  ASSERT_TRUE(testing::FileExists(train));
  const testing::CommandResult r = testing::RunStage(
      "wattcal-calibrate", {"--train", train, "--out", dir + "/m.json", "--cold-start-only"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string manifest = testing::ReadFile(testing::ProvenancePath(dir + "/m.json"));
  EXPECT_NE(manifest.find("\"joint_start_from_alternating\": false"), std::string::npos)
      << manifest;
}

}  // namespace
}  // namespace wattcal
