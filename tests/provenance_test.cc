// One provenance file per stage run (util/output.h): where it goes, what it records, how
// wattcal-check verifies it against the files it names, and what a reader of an older run
// folder (a .manifest.json beside each file) is told.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "test_support.h"
#include "util/output.h"

namespace wattcal {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::RunStage;
using testing::ScratchDir;
using testing::WriteFile;

// A six-benchmark gpmTOOL-free tidy corpus at one V-F pair (fixed model).
std::string Train(const std::string& dir) {
  std::string s = "benchmark,power_w,f_core_mhz,f_mem_mhz,core:A,core:B,mem:C\n";
  const double u[6][3] = {{0.9, 0.1, 0.2}, {0.1, 0.8, 0.1}, {0.2, 0.2, 0.9}, {0.5, 0.5, 0.5}, {0.7, 0.1, 0.6}, {0.1, 0.6, 0.3}};
  for (int i = 0; i < 6; ++i) {
    const double p = 60.0 + 100.0 * u[i][0] + 50.0 * u[i][1] + 80.0 * u[i][2];
    s += "b" + std::to_string(i) + "," + std::to_string(p) + ",1000,2000," + std::to_string(u[i][0]) + "," +
         std::to_string(u[i][1]) + "," + std::to_string(u[i][2]) + "\n";
  }
  return WriteFile(dir + "/train.csv", s);
}

TEST(Provenance, OneFilePerStageRunBesideItsOutputsVerifiedByCheck) {
  const std::string dir = ScratchDir();
  const std::string train = Train(dir);
  fs::create_directories(dir + "/reports/run");
  const testing::CommandResult r =
      RunStage("wattcal-calibrate", {"--train", train, "--method", "fixed", "--out", dir + "/reports/run/model.json",
                                     "--export-gpmtool", dir + "/reports/run/model.csv"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // One file for the run, none beside each output.
  const std::string provenance = dir + "/reports/run/provenance/calibrate-model.json.json";
  ASSERT_TRUE(fs::exists(provenance));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir + "/reports/run/provenance"), fs::directory_iterator()), 1);
  EXPECT_FALSE(fs::exists(dir + "/reports/run/model.json.manifest.json"));
  EXPECT_EQ(testing::ProvenancePath(dir + "/reports/run/model.csv"), provenance);
  const nlohmann::json j = nlohmann::json::parse(ReadFile(provenance));
  EXPECT_EQ(j["format"], "wattcal-provenance");
  EXPECT_EQ(j["stage"], "calibrate");
  EXPECT_EQ(j["argv"][0], "wattcal-calibrate");
  EXPECT_EQ(j["argv"][2], train);
  EXPECT_EQ(j["source_revision"], SourceRevision());
  EXPECT_EQ(j["inputs"][0]["sha256"], Sha256OfFile(train));
  ASSERT_EQ(j["outputs"].size(), 2u);
  EXPECT_EQ(j["outputs"][1]["sha256"], Sha256OfFile(dir + "/reports/run/model.csv"));

  // wattcal-check verifies every output against its recorded SHA-256.
  const std::string expected = WriteFile(dir + "/expected.csv", "run,file,pointer,expected,tolerance,reference\n");
  testing::CommandResult c = RunStage("wattcal-check", {"--expected", expected, "--reports", dir + "/reports"});
  EXPECT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("provenance: 1 files, 2 outputs as recorded, 0 changed since, 0 gone"), std::string::npos)
      << c.output;
  // A model edited by hand after calibrate wrote it is named, and the check fails.
  WriteFile(dir + "/reports/run/model.csv", ReadFile(dir + "/reports/run/model.csv") + "\n");
  c = RunStage("wattcal-check", {"--expected", expected, "--reports", dir + "/reports"});
  EXPECT_EQ(c.exit_code, 3) << c.output;
  EXPECT_NE(c.output.find("changed since its stage wrote it: " + dir + "/reports/run/model.csv"), std::string::npos)
      << c.output;
  // A removed output is a warning, not a failure.
  fs::remove(dir + "/reports/run/model.csv");
  c = RunStage("wattcal-check", {"--expected", expected, "--reports", dir + "/reports"});
  EXPECT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("gone since its stage wrote it"), std::string::npos) << c.output;
}

TEST(Provenance, AnOlderRunFolderIsNamedAsSuch) {
  const std::string dir = ScratchDir();
  const std::string train = Train(dir);
  ASSERT_EQ(RunStage("wattcal-calibrate", {"--train", train, "--method", "fixed", "--out", dir + "/run/model.json"})
                .exit_code,
            0);
  // As an older wattcal left it: a manifest beside the model, no provenance/.
  fs::remove_all(dir + "/run/provenance");
  WriteFile(dir + "/run/model.json.manifest.json", "{}\n");
  const testing::CommandResult r =
      RunStage("wattcal-report", {"--run-dir", dir + "/run", "--out-dir", dir + "/report", "--no-figures"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(ReadFile(dir + "/report/index.md").find("was written by an older wattcal"), std::string::npos);
}

}  // namespace
}  // namespace wattcal
