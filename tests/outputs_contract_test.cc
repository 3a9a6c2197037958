// SPEC.md "Contracts every stage keeps", the output side, run as a user runs the stages:
//
//   OutputIsInput*    an output (or its manifest) that is an input, by file identity (the same
//                     path, a symlink, a hard link), or two outputs on one path: exit 1 before
//                     anything is read, the input byte for byte intact, no output.
//   RepeatedInput*    the same file given twice to a repeatable option: exit 1.
//   OutputCommit*     outputs are committed all or nothing: a rename failing midway restores
//                     the old outputs; concurrent runs never leave a mixed set; errors say why.
//   FixedSolver*      --method fixed records "solver": "nnls" in the manifest.
//   Identifiability*  the rank is checked before the fit: underdetermined fits are refused,
//                     unidentifiable components are named.
//   Duplicate*        duplicated corpus rows are named; a duplicated kernel window is refused.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/filesystem.hpp>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ingest/kernel_windows.h"
#include "test_support.h"
#include "util/errors.h"
#include "util/output.h"

namespace wattcal {
namespace {

namespace fs = boost::filesystem;
using ::wattcal::testing::CommandResult;
using ::wattcal::testing::FileExists;
using ::wattcal::testing::ReadFile;
using ::wattcal::testing::RunStage;
using ::wattcal::testing::ScratchDir;
using ::wattcal::testing::WriteFile;

using Utils = std::array<double, 3>;  // SP, INT (core), DRAM (mem)

// A gpmTOOL training file (the small fixture's header: 2 domains, default 975/3505 MHz, SP, INT,
// DRAM) with one row per
// benchmark at 975 and at 1100 MHz core, powers from TPDS Eqs. 4-6 with a0 = 20 W, a1 = 0.02,
// g_SP = 0.06, g_INT = 0.05, a2 = 30 W, a3 = 0.005, g_DRAM = 0.015 W/MHz, v(1100) = 1.05.
// `scale` multiplies every power (two corpora that give different models).
std::string GpmtoolFile(const std::vector<Utils>& benchmarks, double scale = 1.0) {
  std::string s = ::wattcal::testing::SmallGpmtoolFixture().header;
  for (const Utils& u : benchmarks) {
    for (double f : {975.0, 1100.0}) {
      const double v = f == 975.0 ? 1.0 : 1.05;
      const double p = 20.0 * v + v * v * f * (0.02 + 0.06 * u[0] + 0.05 * u[1]) + 30.0 +
                       3505.0 * (0.005 + 0.015 * u[2]);
      s += fmt::format("{:.3f},{},3505,{},{},{}\n", p * scale, f, u[0], u[1], u[2]);
    }
  }
  return s;
}

const std::vector<Utils> kSixBenchmarks = {{0.1, 0.0, 0.1}, {0.8, 0.1, 0.05}, {0.0, 0.7, 0.2},
                                           {0.2, 0.2, 0.9}, {0.5, 0.4, 0.3},  {0.3, 0.9, 0.6}};

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  if (!fs::is_directory(dir)) return names;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Runs calibrate with `out` equal (by identity) to the training file and expects the refusal.
void ExpectCalibrateRefusesOutput(const std::string& train, const std::string& out,
                                  const std::string& bytes) {
  const CommandResult r = RunStage("wattcal-calibrate", {"--train", train, "--out", out, "-q"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Contains(r.output, "same file as input")) << r.output;
  EXPECT_EQ(ReadFile(train), bytes) << "the input was changed";
}

// ---------------------------------------------------------------------------------------

TEST(OutputIsInput, SamePathSymlinkAndHardLinkAreRefused) {
  const std::string dir = ScratchDir();
  const std::string bytes = GpmtoolFile(kSixBenchmarks);
  const std::string train = WriteFile(dir + "/train.csv", bytes);
  ExpectCalibrateRefusesOutput(train, train, bytes);
  fs::create_symlink(train, dir + "/link.csv");
  ExpectCalibrateRefusesOutput(train, dir + "/link.csv", bytes);
  fs::create_hard_link(train, dir + "/hard.csv");
  ExpectCalibrateRefusesOutput(train, dir + "/hard.csv", bytes);
  // A relative spelling of the same file.
  const std::string relative = dir + "/../" + fs::path(dir).filename().string() + "/train.csv";
  ExpectCalibrateRefusesOutput(train, relative, bytes);
  EXPECT_EQ(ListDir(dir), (std::vector<std::string>{"hard.csv", "link.csv", "train.csv"}));
}

TEST(OutputIsInput, ProvenanceOfAnOutputIsRefused) {
  const std::string dir = ScratchDir();
  const std::string bytes = GpmtoolFile(kSixBenchmarks);
  fs::create_directories(dir + "/provenance");
  const std::string train = WriteFile(dir + "/provenance/calibrate-model.json.json", bytes);
  const CommandResult r =
      RunStage("wattcal-calibrate", {"--train", train, "--out", dir + "/model.json", "-q"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Contains(r.output, "same file as input")) << r.output;
  EXPECT_EQ(ReadFile(train), bytes);
  EXPECT_FALSE(FileExists(dir + "/model.json"));
}

TEST(OutputIsInput, EveryWritingStageRefusesBeforeReading) {
  // The check runs on the parsed options before the stage body: the input need not even be
  // valid data for the refusal (nothing is read).
  const std::string dir = ScratchDir();
  const std::string bytes = "not a corpus, and not read\n";
  const std::string in = WriteFile(dir + "/in.csv", bytes);
  const std::string other = WriteFile(dir + "/other.csv", "x\n");
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"wattcal-calibrate", {"--train", in, "--out", in}},
      {"wattcal-calibrate", {"--train", in, "--out", dir + "/m.json", "--export-gpmtool", in}},
      {"wattcal-constant", {"--sweep", in, "--out", in}},
      {"wattcal-static", {"--sweep", in, "--p-const-w", "10", "--out", in}},
      {"wattcal-idle", {"--sweep", other, "--constant", in, "--out", in}},
      {"wattcal-predict", {"--model", other, "--activity", in, "--out", in}},
      {"wattcal-validate",
       {"--model", other, "--heldout", in, "--mode", "fixed", "--predictions", dir + "/p.csv",
        "--metrics", in}},
      {"wattcal-compare",
       {"--estimated-a", in, "--estimated-b", other, "--arch-a", "a", "--arch-b", "b", "--out",
        dir + "/c.json", "--table", in}},
      {"wattcal-ingest", {"--corpus", in, "--corpus-out", in}},
      {"wattcal-ingest", {"--power-log", in, "--windows", other, "--out", in}},
      {"wattcal-perf", {"--counters", in, "--out", in}},
      {"wattcal-port",
       {"node", "--estimates", in, "--out", in, "--from-node", "28", "--to-node", "16"}},
      {"wattcal-dvfs", {"--model", other, "--activity", other, "--times", in, "--out", in}},
  };
  for (const auto& [program, args] : cases) {
    const CommandResult r = RunStage(program, args);
    EXPECT_EQ(r.exit_code, 1) << program << "\n" << r.output;
    EXPECT_TRUE(Contains(r.output, "same file as input")) << program << "\n" << r.output;
    EXPECT_EQ(ReadFile(in), bytes) << program << " changed its input";
  }
  EXPECT_EQ(ListDir(dir), (std::vector<std::string>{"in.csv", "other.csv"}));
}

TEST(OutputIsInput, TwoOutputsOnOnePathAreRefused) {
  const std::string dir = ScratchDir();
  const std::string in = WriteFile(dir + "/in.csv", "x\n");
  const std::string windows = WriteFile(dir + "/w.csv", "x\n");
  CommandResult r =
      RunStage("wattcal-ingest", {"--power-log", in, "--windows", windows, "--counters", windows,
                                  "--out", dir + "/o.csv", "--tidy", dir + "/o.csv"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Contains(r.output, "two outputs cannot share a path")) << r.output;
  r = RunStage("wattcal-calibrate", {"--train", in, "--out", dir + "/m.json", "--export-gpmtool",
                                     dir + "/provenance/calibrate-m.json.json"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Contains(r.output, "two outputs cannot share a path")) << r.output;
  EXPECT_EQ(ListDir(dir), (std::vector<std::string>{"in.csv", "w.csv"}));
}

TEST(OutputIsInput, AFileInsideAnInputDirectoryIsRefused) {
  const std::string dir = ScratchDir();
  fs::create_directories(dir + "/capture");
  const std::string log = WriteFile(dir + "/capture/power.csv", "power log bytes\n");
  const std::string gpu = WriteFile(dir + "/gpu.json", "{}\n");
  const CommandResult r =
      RunStage("wattcal-ingest", {"--capture", dir + "/capture", "--gpu", gpu, "--tidy", log});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Contains(r.output, "same file as input")) << r.output;
  EXPECT_EQ(ReadFile(log), "power log bytes\n");
}

TEST(RepeatedInput, SameFileTwiceToARepeatableOptionIsRefused) {
  const std::string dir = ScratchDir();
  fs::create_directories(dir + "/capture");
  const std::string gpu = WriteFile(dir + "/gpu.json", "{}\n");
  fs::create_symlink(dir + "/capture", dir + "/again");
  const CommandResult r =
      RunStage("wattcal-ingest", {"--capture", dir + "/capture", "--capture", dir + "/again",
                                  "--gpu", gpu, "--tidy", dir + "/out.csv"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Contains(r.output, "is the same file as --capture")) << r.output;
  EXPECT_TRUE(Contains(r.output, "twice")) << r.output;
  EXPECT_FALSE(FileExists(dir + "/out.csv"));
}

// ---------------------------------------------------------------------------------------
// OutputCommit.

TEST(OutputCommit, ARenameFailingMidwayKeepsTheOldOutputs) {
  const std::string dir = ScratchDir();
  const std::string train = WriteFile(dir + "/train.csv", GpmtoolFile(kSixBenchmarks));
  const std::string model = WriteFile(dir + "/model.json", "OLD MODEL\n");
  fs::create_directories(dir + "/provenance");
  const std::string manifest =
      WriteFile(dir + "/provenance/calibrate-model.json.json", "OLD PROVENANCE\n");
  // The second output's final path is a non-empty directory: its rename fails after the model's.
  fs::create_directories(dir + "/export/keep");
  const CommandResult r =
      RunStage("wattcal-calibrate", {"--train", train, "--method", "fixed", "--out", model,
                                     "--export-gpmtool", dir + "/export", "-q"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Contains(r.output, "cannot write " + dir + "/export")) << r.output;
  EXPECT_TRUE(Contains(r.output, "Is a directory") || Contains(r.output, "Directory not empty") ||
              Contains(r.output, "File exists"))
      << "no reason given: " << r.output;
  EXPECT_EQ(ReadFile(model), "OLD MODEL\n") << "the old model was replaced";
  EXPECT_EQ(ReadFile(manifest), "OLD PROVENANCE\n");
  EXPECT_EQ(ListDir(dir + "/provenance"), (std::vector<std::string>{"calibrate-model.json.json"}));
  EXPECT_EQ(ListDir(dir),
            (std::vector<std::string>{"export", "model.json", "provenance", "train.csv"}))
      << "temporaries or backups left behind";
}

TEST(OutputCommit, AFailedRunRemovesTheFoldersItCreated) {
  const std::string dir = ScratchDir();
  const std::string train = WriteFile(dir + "/train.csv", GpmtoolFile(kSixBenchmarks));
  fs::create_directories(dir + "/export/keep");
  const CommandResult r = RunStage(
      "wattcal-calibrate", {"--train", train, "--method", "fixed", "--out", dir + "/new/sub/m.json",
                            "--export-gpmtool", dir + "/export", "-q"});
  testing::ExpectRefused(
      r, 1, {"cannot write " + dir + "/export", "Is a directory", "no output was changed"},
      {dir + "/new/sub/m.json"});
  EXPECT_EQ(ListDir(dir), (std::vector<std::string>{"export", "train.csv"}));
}

TEST(OutputCommit, WriteErrorsSayWhy) {
  const std::string dir = ScratchDir();
  const std::string train = WriteFile(dir + "/train.csv", GpmtoolFile(kSixBenchmarks));
  WriteFile(dir + "/file", "a regular file\n");
  const CommandResult r = RunStage("wattcal-calibrate", {"--train", train, "--method", "fixed",
                                                         "--out", dir + "/file/model.json", "-q"});
  testing::ExpectRefused(r, 1, {dir + "/file"}, {});
  EXPECT_TRUE(Contains(r.output, "Not a directory") || Contains(r.output, "File exists"))
      << r.output;
  EXPECT_EQ(ReadFile(dir + "/file"), "a regular file\n");
}

TEST(OutputCommit, UnitRollbackRestoresEveryOutput) {
  const std::string dir = ScratchDir();
  WriteFile(dir + "/a.txt", "old a\n");
  fs::create_directories(dir + "/b.txt/full");  // renaming onto it fails
  {
    OutputSet outputs;
    outputs.StageText(dir + "/a.txt", "new a\n");
    outputs.StageText(dir + "/c.txt", "new c\n");
    outputs.StageText(dir + "/b.txt", "new b\n");
    try {
      outputs.Commit();
      ADD_FAILURE() << "Commit succeeded onto a directory";
    } catch (const OptionError& e) {
      EXPECT_TRUE(Contains(e.what(), "no output was changed")) << e.what();
    }
  }
  EXPECT_EQ(ReadFile(dir + "/a.txt"), "old a\n");
  EXPECT_FALSE(FileExists(dir + "/c.txt"));
  EXPECT_EQ(ListDir(dir), (std::vector<std::string>{"a.txt", "b.txt"}));
}

TEST(OutputCommit, ConcurrentRunsNeverLeaveAMixedSet) {
  const std::string dir = ScratchDir();
  const std::string a = WriteFile(dir + "/a.csv", GpmtoolFile(kSixBenchmarks, 1.0));
  const std::string b = WriteFile(dir + "/b.csv", GpmtoolFile(kSixBenchmarks, 1.5));
  fs::create_directories(dir + "/out");
  const std::string model = dir + "/out/model.json";
  const std::string gpm = dir + "/out/model_gpmtool.csv";
  for (int trial = 0; trial < 4; ++trial) {
    auto run = [&](const std::string& train) {
      return RunStage("wattcal-calibrate", {"--train", train, "--method", "fixed", "--out", model,
                                            "--export-gpmtool", gpm, "-q"});
    };
    CommandResult ra, rb;
    std::thread ta([&] { ra = run(a); });
    std::thread tb([&] { rb = run(b); });
    ta.join();
    tb.join();
    ASSERT_EQ(ra.exit_code, 0) << ra.output;
    ASSERT_EQ(rb.exit_code, 0) << rb.output;
    // Every file of the set names the same training corpus.
    const nlohmann::json m = nlohmann::json::parse(ReadFile(model));
    const std::string trained_on = m.at("trained_on").get<std::string>();
    for (const std::string& path : {model, gpm}) {
      const nlohmann::json manifest =
          nlohmann::json::parse(ReadFile(testing::ProvenancePath(path)));
      EXPECT_EQ(manifest.at("inputs").at(0).at("path").get<std::string>(), trained_on)
          << "mixed output set in trial " << trial;
    }
  }
  EXPECT_EQ(ListDir(dir + "/out"),
            (std::vector<std::string>{"model.json", "model_gpmtool.csv", "provenance"}));
  EXPECT_EQ(ListDir(dir + "/out/provenance"),
            (std::vector<std::string>{"calibrate-model.json.json"}));
}

// ---------------------------------------------------------------------------------------

TEST(FixedSolver, ManifestRecordsNnls) {
  const std::string dir = ScratchDir();
  const std::string train = WriteFile(dir + "/train.csv", GpmtoolFile(kSixBenchmarks));
  const CommandResult r = RunStage(
      "wattcal-calibrate", {"--train", train, "--method", "fixed", "--out", dir + "/m.json", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json manifest =
      nlohmann::json::parse(ReadFile(testing::ProvenancePath(dir + "/m.json")));
  EXPECT_EQ(manifest.at("options").at("solver"), "nnls");
  const nlohmann::json model = nlohmann::json::parse(ReadFile(dir + "/m.json"));
  EXPECT_EQ(model.at("fit").at("solver"), "nnls");
}

TEST(FixedSolver, CrossValidationManifestRecordsNnls) {
  const std::string dir = ScratchDir();
  const std::string train = WriteFile(dir + "/train.csv", GpmtoolFile(kSixBenchmarks));
  const CommandResult r =
      RunStage("wattcal-validate",
               {"--train", train, "--cv-folds", "3", "--mode", "fixed", "--method", "fixed",
                "--predictions", dir + "/p.csv", "--metrics", dir + "/m.json", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string manifest = ReadFile(testing::ProvenancePath(dir + "/m.json"));
  EXPECT_TRUE(Contains(manifest, "\"solver\": \"nnls\"")) << manifest;
  EXPECT_FALSE(Contains(manifest, "\"solver\": \"joint\"")) << manifest;
}

// ---------------------------------------------------------------------------------------
// Identifiability.

CommandResult Calibrate(const std::string& dir, const std::string& content,
                        const std::string& method) {
  const std::string train = WriteFile(dir + "/train.csv", content);
  return RunStage("wattcal-calibrate",
                  {"--train", train, "--method", method, "--out", dir + "/out/m.json", "-q"});
}

TEST(Identifiability, OneBenchmarkIsUnderdetermined) {
  for (const std::string method : {"fixed", "dvfs"}) {
    const std::string dir = ScratchDir();
    const CommandResult r = Calibrate(dir, GpmtoolFile({{0.5, 0.3, 0.2}}), method);
    EXPECT_EQ(r.exit_code, 2) << method << "\n" << r.output;
    EXPECT_TRUE(Contains(r.output, "underdetermined")) << r.output;
    EXPECT_TRUE(Contains(r.output, "1 independent rows")) << r.output;
    EXPECT_TRUE(Contains(r.output, "4 parameters")) << r.output;
    EXPECT_TRUE(Contains(r.output, dir + "/train.csv")) << r.output;
    EXPECT_TRUE(ListDir(dir + "/out").empty());
  }
}

TEST(Identifiability, AllZeroUtilisationsAreUnderdetermined) {
  const std::string dir = ScratchDir();
  const CommandResult r = Calibrate(dir, GpmtoolFile({{0, 0, 0}, {0, 0, 0}, {0, 0, 0}}), "fixed");
  EXPECT_EQ(r.exit_code, 2) << r.output;  // an input error, naming the file
  EXPECT_TRUE(Contains(r.output,
                       dir + "/train.csv: underdetermined fit: no component's utilisation varies"))
      << r.output;
  EXPECT_TRUE(ListDir(dir + "/out").empty());
}

TEST(Identifiability, AComponentThatNeverVariesIsNamedAndFixedAtZero) {
  const std::string dir = ScratchDir();
  std::vector<Utils> rows = kSixBenchmarks;
  for (Utils& u : rows) u[1] = 0.0;  // INT never used (a GPU with no such work)
  const CommandResult r =
      RunStage("wattcal-calibrate", {"--train", WriteFile(dir + "/train.csv", GpmtoolFile(rows)),
                                     "--method", "fixed", "--out", dir + "/m.json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "INT never varies (always 0)")) << r.output;
  const nlohmann::json model = nlohmann::json::parse(ReadFile(dir + "/m.json"));
  for (const nlohmann::json& c : model.at("component_w_per_mhz")) {
    if (c.at("component") == "INT") {
      EXPECT_EQ(c.at("w_per_mhz").get<double>(), 0.0);
    }
  }
  EXPECT_TRUE(Contains(model.at("training_notes").dump(), "never varies")) << model.dump();
}

TEST(Identifiability, IdenticalAndConstantColumnsAreNamed) {
  const std::string dir = ScratchDir();
  std::vector<Utils> identical = kSixBenchmarks;
  for (Utils& u : identical) u[1] = u[0];
  CommandResult r = RunStage("wattcal-calibrate",
                             {"--train", WriteFile(dir + "/identical.csv", GpmtoolFile(identical)),
                              "--method", "fixed", "--out", dir + "/identical.json"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "identical to SP's column")) << r.output;

  std::vector<Utils> constant = kSixBenchmarks;
  for (Utils& u : constant) u[1] = 0.5;
  r = RunStage("wattcal-calibrate",
               {"--train", WriteFile(dir + "/constant.csv", GpmtoolFile(constant)), "--method",
                "fixed", "--out", dir + "/constant.json"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "INT is constant 0.5")) << r.output;
  EXPECT_TRUE(Contains(r.output, "indistinguishable from static power")) << r.output;
}

TEST(Identifiability, ALinearDependencyIsRefused) {
  const std::string dir = ScratchDir();
  std::vector<Utils> rows = kSixBenchmarks;
  for (Utils& u : rows) u[2] = 0.5 * (u[0] + u[1]);
  const CommandResult r = Calibrate(dir, GpmtoolFile(rows), "fixed");
  testing::ExpectRefused(r, 2, {dir + "/train.csv", "underdetermined", "rank 3 for 4 parameters"},
                         {dir + "/out/m.json", dir + "/out"});
}

// ---------------------------------------------------------------------------------------
// Duplicates.

TEST(Duplicate, RepeatedCorpusRowsAreNamed) {
  const std::string dir = ScratchDir();
  std::string content = GpmtoolFile(kSixBenchmarks);
  const std::string first_row = content.substr(content.find("SP,INT,DRAM\n") + 12);
  content += first_row.substr(0, first_row.find('\n') + 1);  // line 5 again, as line 17
  const CommandResult r = Calibrate(dir, content, "fixed");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "lines 5 and 17 are identical rows")) << r.output;
}

TEST(Duplicate, RepeatedKernelWindowIsRefusedNamingBothLines) {
  const std::string dir = ScratchDir();
  const std::string path = WriteFile(dir + "/windows.csv",
                                     "kernel,start_us,end_us\n"
                                     "fadd,1000000,1250000\n"
                                     "fmul,2000000,2250000\n"
                                     "fadd,1000000,1250000\n");
  ::wattcal::testing::ExpectInputError([&] { ReadKernelWindows(path); }, 4,
                                       {"fadd", "repeats line 2"});
  // The same kernel at another time is a second launch, not a duplicate.
  const std::string ok = WriteFile(dir + "/ok.csv",
                                   "kernel,start_us,end_us\n"
                                   "fadd,1000000,1250000\n"
                                   "fadd,3000000,3250000\n");
  EXPECT_EQ(ReadKernelWindows(ok).size(), 2u);
}

}  // namespace
}  // namespace wattcal
