// One provenance file per stage run (util/output.h): where it goes (the run folder's
// provenance/), what it records, how wattcal-check verifies it against the files it names, how
// wattcal-report finds a run's files through it, and what a reader of an older run folder (a
// .manifest.json beside each file) is told.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
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
  const double u[6][3] = {{0.9, 0.1, 0.2}, {0.1, 0.8, 0.1}, {0.2, 0.2, 0.9},
                          {0.5, 0.5, 0.5}, {0.7, 0.1, 0.6}, {0.1, 0.6, 0.3}};
  for (int i = 0; i < 6; ++i) {
    const double p = 60.0 + 100.0 * u[i][0] + 50.0 * u[i][1] + 80.0 * u[i][2];
    s += "b" + std::to_string(i) + "," + std::to_string(p) + ",1000,2000," +
         std::to_string(u[i][0]) + "," + std::to_string(u[i][1]) + "," + std::to_string(u[i][2]) +
         "\n";
  }
  return WriteFile(dir + "/train.csv", s);
}

TEST(Provenance, OneFilePerStageRunBesideItsOutputsVerifiedByCheck) {
  const std::string dir = ScratchDir();
  const std::string train = Train(dir);
  fs::create_directories(dir + "/reports/run");
  const testing::CommandResult r =
      RunStage("wattcal-calibrate",
               {"--train", train, "--method", "fixed", "--out", dir + "/reports/run/model.json",
                "--export-gpmtool", dir + "/reports/run/model.csv"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // One file for the run, none beside each output.
  const std::string provenance = dir + "/reports/run/provenance/calibrate-model.json.json";
  ASSERT_TRUE(fs::exists(provenance));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir + "/reports/run/provenance"),
                          fs::directory_iterator()),
            1);
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
  const std::string expected =
      WriteFile(dir + "/expected.csv", "run,file,pointer,expected,tolerance,reference\n");
  testing::CommandResult c =
      RunStage("wattcal-check", {"--expected", expected, "--reports", dir + "/reports"});
  EXPECT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("provenance: 1 files, 2 outputs as recorded, 0 changed since, 0 gone"),
            std::string::npos)
      << c.output;
  // A model edited by hand after calibrate wrote it is named, and the check fails.
  WriteFile(dir + "/reports/run/model.csv", ReadFile(dir + "/reports/run/model.csv") + "\n");
  c = RunStage("wattcal-check", {"--expected", expected, "--reports", dir + "/reports"});
  EXPECT_EQ(c.exit_code, 3) << c.output;
  EXPECT_NE(c.output.find("changed since its stage wrote it: " + dir + "/reports/run/model.csv"),
            std::string::npos)
      << c.output;
  // A removed output is a warning, not a failure.
  fs::remove(dir + "/reports/run/model.csv");
  c = RunStage("wattcal-check", {"--expected", expected, "--reports", dir + "/reports"});
  EXPECT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("gone since its stage wrote it"), std::string::npos) << c.output;
}

// Makefile.runs' layout: each stage writes into a sub-folder of the run (model/, validation/LABEL/)
// with --run-dir RUN, and its one record goes to RUN/provenance/, naming each output relative to
// RUN; an output outside the run folder is refused before anything is read.
TEST(Provenance, StagesWritingIntoSubFoldersRecordInTheRunFolder) {
  const std::string dir = ScratchDir();
  const std::string train = Train(dir);
  const std::string run = dir + "/run";
  testing::CommandResult r =
      RunStage("wattcal-calibrate", {"--train", train, "--method", "fixed", "--out",
                                     run + "/model/model.json", "--run-dir", run});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string record = run + "/provenance/model/calibrate-model.json.json";
  ASSERT_TRUE(fs::exists(record));
  EXPECT_FALSE(fs::exists(run + "/model/provenance"));
  const nlohmann::json j = nlohmann::json::parse(ReadFile(record));
  EXPECT_EQ(j["outputs"][0]["run_path"], "model/model.json");
  EXPECT_EQ(j["outputs"][0]["role"], "model");
  EXPECT_EQ(testing::ProvenancePath(run + "/model/model.json"), record);
  r = RunStage("wattcal-validate",
               {"--train", train, "--cv-folds", "3", "--mode", "fixed", "--predictions",
                run + "/validation/cv/predictions.csv", "--metrics",
                dir + "/elsewhere/metrics.json", "--run-dir", run});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(
      r.output.find(dir + "/elsewhere/metrics.json is not inside the run folder --run-dir " + run),
      std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(run + "/validation"));
}

// A run folder of two stage runs (calibrate, validate) made with --run-dir.
std::string MadeRun(const std::string& dir, const std::string& name) {
  const std::string train = dir + "/train.csv";
  if (!fs::exists(train)) Train(dir);
  const std::string run = dir + "/" + name;
  EXPECT_EQ(RunStage("wattcal-calibrate", {"--train", train, "--method", "fixed", "--out",
                                           run + "/model/model.json", "--run-dir", run})
                .exit_code,
            0);
  EXPECT_EQ(RunStage("wattcal-validate",
                     {"--model", run + "/model/model.json", "--heldout", train, "--mode", "fixed",
                      "--predictions", run + "/validation/heldout/predictions.csv", "--metrics",
                      run + "/validation/heldout/metrics.json", "--run-dir", run})
                .exit_code,
            0);
  return run;
}

// wattcal-report reads a run's files from its provenance records: a run folder moved elsewhere is
// still found whole (each output by its path relative to the run folder), and a file that no
// stage wrote (a copy left by hand, named like a validation) is not shown.
TEST(Provenance, TheReportFindsTheRunsFilesThroughTheirRecordsOnly) {
  const std::string dir = ScratchDir();
  const std::string first = MadeRun(dir, "first");
  const std::string moved = dir + "/moved";
  fs::rename(first, moved);
  fs::create_directories(moved + "/validation/stray");
  fs::copy_file(moved + "/validation/heldout/predictions.csv",
                moved + "/validation/stray/predictions.csv");
  fs::copy_file(moved + "/validation/heldout/metrics.json",
                moved + "/validation/stray/metrics.json");
  const testing::CommandResult r = RunStage("wattcal-report", {"--run-dir", moved, "--no-figures"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string md = ReadFile(moved + "/index.md");
  EXPECT_NE(md.find(moved + "/validation/heldout/predictions.csv"), std::string::npos) << md;
  EXPECT_NE(md.find(moved + "/model/model.json"), std::string::npos) << md;
  // Not shown; named in the notes only (a file no record lists: put there by hand, or its record
  // deleted).
  const size_t notes = md.find("## Notes");
  ASSERT_NE(notes, std::string::npos) << md;
  EXPECT_EQ(md.substr(0, notes).find("validation/stray"), std::string::npos) << md;
  EXPECT_NE(md.find("no provenance record of the run folder lists it", notes), std::string::npos)
      << md;
  EXPECT_EQ(md.find(first + "/"), std::string::npos) << md;
  // The report's own record joins the run's; a second report does not read the first one's files.
  EXPECT_EQ(testing::ProvenancePath(moved + "/index.html"),
            moved + "/provenance/report-index.html.json");
  const testing::CommandResult again =
      RunStage("wattcal-report", {"--run-dir", moved, "--no-figures"});
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(ReadFile(moved + "/index.md"), md);
}

// The record of the model's calibrate run, parsed, and a way to write it back edited.
const char* const kModelRecord = "/provenance/model/calibrate-model.json.json";

void EditModelRecord(const std::string& run, const std::function<void(nlohmann::json*)>& edit) {
  nlohmann::json j = nlohmann::json::parse(ReadFile(run + kModelRecord));
  edit(&j);
  WriteFile(run + kModelRecord, j.dump(2) + "\n");
}

// wattcal-report trusted what a record said: it followed a run_path of ../ or an absolute path to
// a model outside the run folder, read another folder's copy of a missing file through the
// recorded path, showed outputs edited since their stage wrote them, failed with an internal error
// (exit 4) on a run_path given as a number, and dropped the model of a damaged or deleted record
// with exit 0 and nothing on stderr. Each is now refused, or warned about where the run can still
// be shown, naming the record or the file.
TEST(Provenance, TheReportRefusesRecordsItCannotTrust) {
  const std::string dir = ScratchDir();
  const std::string outside = MadeRun(dir, "outside");
  const std::string model_record_text = ReadFile(MadeRun(dir, "run") + kModelRecord);
  const std::string run = dir + "/run";
  auto restore = [&]() { WriteFile(run + kModelRecord, model_record_text); };
  auto report = [&]() { return RunStage("wattcal-report", {"--run-dir", run, "--no-figures"}); };
  ASSERT_EQ(report().exit_code, 0);

  // A run_path leading out of the run folder, relative or absolute.
  for (const std::string& escape :
       {std::string("../outside/model/model.json"), outside + "/model/model.json"}) {
    EditModelRecord(run, [&](nlohmann::json* j) { (*j)["outputs"][0]["run_path"] = escape; });
    testing::ExpectRefused(report(), 2,
                           {run + kModelRecord, "outputs[0].run_path", "'" + escape + "'",
                            "leads outside the run folder"},
                           {});
    // wattcal-check fails on it too, naming it.
    const testing::CommandResult c =
        RunStage("wattcal-check", {"--expected",
                                   WriteFile(dir + "/expected.csv",
                                             "run,file,pointer,expected,"
                                             "tolerance,reference\n"),
                                   "--reports", run});
    EXPECT_EQ(c.exit_code, 3) << c.output;
    EXPECT_NE(c.output.find("a provenance record that does not read: " + run + kModelRecord),
              std::string::npos)
        << c.output;
    restore();
  }
  // A run_path that is not a string: a refusal naming the field, not an internal error.
  EditModelRecord(run, [](nlohmann::json* j) { (*j)["outputs"][0]["run_path"] = 7; });
  testing::ExpectRefused(report(), 2,
                         {run + kModelRecord, "outputs[0].run_path", "expected a string"}, {});
  restore();
  // A damaged record: refused, naming it and the line; a number no double holds too (it was an
  // internal error in every JSON reader: the fuzz target found it).
  WriteFile(run + kModelRecord, model_record_text.substr(0, model_record_text.size() / 2));
  testing::ExpectRefused(report(), 2, {run + kModelRecord + ":", "invalid JSON"}, {});
  WriteFile(run + kModelRecord, "{\"format\": \"wattcal-provenance\",\n \"bytes\": 1e4649}\n");
  testing::ExpectRefused(report(), 2,
                         {run + kModelRecord + ":2:", "invalid JSON: number overflow parsing"}, {});
  restore();
  // An output edited since its stage wrote it.
  const std::string metrics = run + "/validation/heldout/metrics.json";
  const std::string metrics_text = ReadFile(metrics);
  WriteFile(metrics, metrics_text + " ");
  testing::ExpectRefused(report(), 2, {metrics, "changed since its stage wrote it", "SHA-256"}, {});
  WriteFile(metrics, metrics_text);
  ASSERT_EQ(report().exit_code, 0);

  // A copy of the run whose model is gone: the original's model (the path the record wrote) is
  // not read in its place; the report says the model is gone.
  const std::string copy = dir + "/copy";
  fs::copy(run, copy, fs::copy_options::recursive);
  fs::remove(copy + "/index.md");
  fs::remove(copy + "/model/model.json");
  testing::CommandResult r = RunStage("wattcal-report", {"--run-dir", copy, "--no-figures"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(copy + kModelRecord + " lists model/model.json, which is gone"),
            std::string::npos)
      << r.output;
  std::string md = ReadFile(copy + "/index.md");
  EXPECT_NE(md.find(": 0 model(s), 1 validation(s)"), std::string::npos) << md;

  // A deleted record: its model is not shown, and stderr and the report say why.
  fs::remove(run + kModelRecord);
  r = report();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string warning = run +
                              "/model/model.json: no provenance record of the run folder "
                              "lists it";
  EXPECT_NE(r.output.find("warning: " + warning), std::string::npos) << r.output;
  EXPECT_NE(ReadFile(run + "/index.html").find(warning), std::string::npos);
}

// A folder without provenance records (written by an older wattcal, a .manifest.json beside each
// file, or by hand) is refused with a message that says what it is and how to go on.
TEST(Provenance, AnOlderRunFolderIsNamedAsSuch) {
  const std::string dir = ScratchDir();
  const std::string train = Train(dir);
  ASSERT_EQ(RunStage("wattcal-calibrate",
                     {"--train", train, "--method", "fixed", "--out", dir + "/run/model.json"})
                .exit_code,
            0);
  // As an older wattcal left it: a manifest beside the model, no provenance/.
  fs::remove_all(dir + "/run/provenance");
  WriteFile(dir + "/run/model.json.manifest.json", "{}\n");
  testing::CommandResult r = RunStage(
      "wattcal-report", {"--run-dir", dir + "/run", "--out-dir", dir + "/report", "--no-figures"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(
                dir + "/run: no provenance records (provenance/*.json): it was written by an older "
                      "wattcal (a .manifest.json beside each file)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("rerun the run's stages"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir + "/report/index.md"));
  // A folder of files put there by hand: the same refusal, without the older-wattcal guess.
  fs::remove(dir + "/run/model.json.manifest.json");
  r = RunStage("wattcal-report",
               {"--run-dir", dir + "/run", "--out-dir", dir + "/report", "--no-figures"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no stage of wattcal wrote into it"), std::string::npos) << r.output;
  // Its files can still be shown by name.
  r = RunStage("wattcal-report",
               {"--model", dir + "/run/model.json", "--out-dir", dir + "/report", "--no-figures"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

}  // namespace
}  // namespace wattcal
