// The journey on one's own GPU as the README tells it: `make -f Makefile.runs gpu CAPTURES=...
// GPU=... APPS=... OUT=...` on the real H100 capture, with applications made from its mixes
// (scripts/apps_from_suite.py), measured and not; and the choices it leaves to the data
// (calibrate --method auto, validate --mode auto, ingest --per-workload).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "io/corpus_io.h"
#include "model/model_io.h"
#include "report/report_figures.h"
#include "test_support.h"

namespace wattcal {
namespace {

namespace fs = std::filesystem;
using testing::Dataset;
using testing::ReadFile;
using testing::RunStage;
using testing::ScratchDir;

const std::string kH100 = std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/gpus/h100_sxm.json";

struct Shell {
  int exit_code = -1;
  std::string output;
};

// Runs `command` in the source tree (as a user runs make there), stdout and stderr together.
Shell RunInSource(const std::string& command) {
  Shell r;
  const std::string full = "cd '" + std::string(WATTCAL_SOURCE_DIR) + "' && " + command + " 2>&1";
  FILE* pipe = popen(full.c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string MakeGpu(const std::string& captures, const std::string& apps, const std::string& out) {
  return "make -f Makefile.runs gpu BIN='" + std::string(WATTCAL_BIN_DIR) + "' CAPTURES='" +
         captures + "' GPU='" + kH100 + "'" +
         (apps.empty() ? std::string() : " APPS='" + apps + "'") + " OUT='" + out +
         "' TITLE='H100 from its capture'";
}

double Mape(const std::string& apps_csv, int* rows) {
  std::ifstream in(apps_csv);
  std::string line;
  auto split = [](const std::string& text) {
    std::vector<std::string> f;
    std::stringstream ss(text);
    std::string cell;
    while (std::getline(ss, cell, ',')) f.push_back(cell);
    return f;
  };
  std::getline(in, line);
  const std::vector<std::string> header = split(line);
  const size_t error_pct = std::find(header.begin(), header.end(), "error_pct") - header.begin();
  double sum = 0.0;
  *rows = 0;
  while (std::getline(in, line)) {
    const std::vector<std::string> f = split(line);
    ++*rows;
    if (f.size() > error_pct && !f[error_pct].empty()) sum += std::fabs(std::stod(f[error_pct]));
  }
  return *rows > 0 ? sum / *rows : NAN;
}

TEST(GpuRun, FromCapturesToReportWithApplicationsMeasuredAndNot) {
  WATTCAL_REQUIRE_DATASETS();
  const std::string dir = ScratchDir();
  const std::string captures =
      Dataset("h100_capture/ubench_random") + " " + Dataset("h100_capture/mix_random");
  Shell s = RunInSource(testing::ShellQuote(testing::Python3()) + " scripts/apps_from_suite.py '" +
                        Dataset("h100_capture/mix_random") + "' '" + dir + "/apps' --group 4");
  ASSERT_EQ(s.exit_code, 0) << s.output;
  EXPECT_NE(s.output.find("25 applications of 4 benchmarks"), std::string::npos) << s.output;
  s = RunInSource(testing::ShellQuote(testing::Python3()) + " scripts/apps_from_suite.py '" +
                  Dataset("h100_capture/mix_random") + "' '" + dir +
                  "/apps_np' --group 4 --no-power");
  ASSERT_EQ(s.exit_code, 0) << s.output;

  s = RunInSource(MakeGpu(captures, dir + "/apps", dir + "/run"));
  ASSERT_EQ(s.exit_code, 0) << s.output;
  EXPECT_NE(s.output.find(
                "--method auto: fixed (TPDS Eq. 9): one V-F pair (1980 MHz core, 2619 MHz memory)"),
            std::string::npos)
      << s.output;
  // The CV figure of the H100 capture (expected/results.csv), reached through the auto choices.
  const nlohmann::json cv =
      nlohmann::json::parse(ReadFile(dir + "/run/validation/cv/metrics.json"));
  EXPECT_NEAR(cv["mape_pct"].get<double>(), 5.528, 0.05);
  EXPECT_EQ(ReadModel(dir + "/run/model/model.json").method, FitMethod::kFixed);
  EXPECT_TRUE(
      ReadModel(dir + "/run/model/model.json").coefficient_ci95.known());  // --bootstrap 200
  // How far to trust it: the saturating tensor window hit the 700 W cap and is left out, so
  // TENSOR is trained only at low use; the model file and the report say so.
  const nlohmann::json model = nlohmann::json::parse(ReadFile(dir + "/run/model/model.json"));
  int tensor_rows = 0;
  for (const nlohmann::json& t : model["component_trust"]) {
    if (t["component"] != "TENSOR") continue;
    ++tensor_rows;
    EXPECT_LT(t["trained_up_to_frac"].get<double>(), 0.5);
    EXPECT_NE(t["flags"].dump().find("trained_below_half_use"), std::string::npos) << t.dump();
  }
  EXPECT_EQ(tensor_rows, 1);
  // The applications: predicted from counters, scored against their power, and the same score
  // from validate on the per-workload measured table.
  int rows = 0;
  const double predict_mape = Mape(dir + "/run/predictions/apps.csv", &rows);
  EXPECT_EQ(rows, 25);
  const nlohmann::json apps =
      nlohmann::json::parse(ReadFile(dir + "/run/validation/apps/metrics.json"));
  EXPECT_EQ(apps["points"], 25);
  EXPECT_NEAR(apps["mape_pct"].get<double>(), predict_mape, 1e-3);
  EXPECT_LT(predict_mape, 4.0);
  const std::string index = ReadFile(dir + "/run/index.md");
  EXPECT_NE(index.find("## Applications"), std::string::npos);
  EXPECT_NE(index.find("TENSOR: trained only up to"), std::string::npos);
  // The 139 x 139 benchmark heat map is drawn only on request (wattcal-report --benchmark-heatmap).
  for (const fs::directory_entry& f : fs::directory_iterator(dir + "/run/figures")) {
    EXPECT_EQ(f.path().filename().string().rfind("util_corr_benchmarks", 0), std::string::npos)
        << f.path();
  }
  EXPECT_NE(index.find("25 application workloads predicted from their counters alone"),
            std::string::npos);
  testing::ExpectFigurePng(dir + "/run/figures/apps_breakdown.png", BreakdownFigureSize(25 + 2));
  // The answer first: a summary, then the applications, then the cross-validation; their
  // breakdown drawn once (the held-out measurements are the same applications).
  const size_t summary = index.find("## Summary"), applications = index.find("## Applications"),
               validation = index.find("## Validation");
  ASSERT_NE(summary, std::string::npos);
  ASSERT_NE(validation, std::string::npos);
  EXPECT_LT(summary, applications);
  EXPECT_LT(applications, validation);
  EXPECT_NE(index.find("25 measured: power MAPE"), std::string::npos);
  EXPECT_EQ(index.find("## Power breakdown"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir + "/run/figures/breakdown_default_pair.png"));

  // Without a power log: the same predictions, nothing measured, no apps validation.
  s = RunInSource(MakeGpu(captures, dir + "/apps_np", dir + "/run_np"));
  ASSERT_EQ(s.exit_code, 0) << s.output;
  EXPECT_FALSE(fs::exists(dir + "/run_np/validation/apps/metrics.json"));
  std::ifstream a(dir + "/run/predictions/apps.csv"), b(dir + "/run_np/predictions/apps.csv");
  std::string la, lb;
  while (std::getline(a, la) && std::getline(b, lb)) {
    // The prediction (workload .. flags: power, clock, duration, energy) needs no power log.
    auto prediction = [](const std::string& l) {
      size_t p = 0;
      for (int i = 0; i < 12 && p != std::string::npos; ++i) p = l.find(',', p + 1);
      return l.substr(0, p);
    };
    EXPECT_EQ(prediction(la), prediction(lb));
  }
  EXPECT_NE(ReadFile(dir + "/run_np/index.md").find("None was measured (no power log)"),
            std::string::npos);
}

TEST(GpuRun, MissingInputsAreClearErrors) {
  const std::string dir = ScratchDir();
  Shell s = RunInSource("make -f Makefile.runs gpu BIN='" + std::string(WATTCAL_BIN_DIR) +
                        "' OUT='" + dir + "/x'");
  EXPECT_EQ(s.exit_code, 2) << s.output;
  EXPECT_NE(s.output.find("give CAPTURES=\"DIR ...\""), std::string::npos) << s.output;
  s = RunInSource("make -f Makefile.runs gpu BIN='" + std::string(WATTCAL_BIN_DIR) +
                  "' CAPTURES='" + dir + "/absent' GPU='" + kH100 + "' OUT='" + dir + "/x'");
  EXPECT_EQ(s.exit_code, 2) << s.output;
  EXPECT_NE(s.output.find(dir + "/absent is not a directory"), std::string::npos) << s.output;
  fs::create_directories(dir + "/empty");
  s = RunInSource(MakeGpu(dir + "/empty", "", dir + "/x"));
  // make exits 2 on any failed recipe; the stage's own exit (2: bad input) is in make's line.
  EXPECT_EQ(s.exit_code, 2) << s.output;
  EXPECT_NE(s.output.find("] Error 2"), std::string::npos) << s.output;
  EXPECT_NE(s.output.find("no windows.csv: not a capture directory"), std::string::npos)
      << s.output;
  EXPECT_FALSE(fs::exists(dir + "/x/data/tidy/measured.csv"));
}

// Stand-ins for the stage executables (BIN=...): each logs its command line to LOG and writes each
// output it is given (--tidy, --out, ...) as that command line; the report writes
// RUN/index.html from the run's measured table and application predictions. Makefile.runs' own
// logic (what is remade, what is refused) is then tested in a second, without data.
std::string StandInBin(const std::string& dir) {
  const std::string bin = dir + "/bin";
  fs::create_directories(bin);
  const std::string log = dir + "/stages.log";
  const std::string stage =
      "#!/bin/sh\n"
      "all=\"$(basename \"$0\") $*\"\n"
      "echo \"$all\" >> '" +
      log +
      "'\n"
      "run=\n"
      "while [ $# -gt 1 ]; do\n"
      "  case $1 in\n"
      "    --tidy|--out|--predictions|--metrics|--summary-md|--breakdown-out)\n"
      "      mkdir -p \"$(dirname \"$2\")\" && echo \"$all\" > \"$2\";;\n"
      "    --run-dir) run=$2;;\n"
      "  esac\n"
      "  shift\n"
      "done\n"
      "case $all in wattcal-report*)\n"
      "  cat \"$run/data/tidy/measured.csv\" \"$run/predictions/apps.csv\" > \"$run/index.html\" "
      "2>/dev/null; mkdir -p \"$run/provenance\" && : > "
      "\"$run/provenance/report-index.html.json\";;\n"
      "esac\n";
  for (const char* name : {"wattcal-ingest", "wattcal-calibrate", "wattcal-validate",
                           "wattcal-predict", "wattcal-report"}) {
    testing::WriteFile(bin + "/" + name, stage);
    fs::permissions(bin + "/" + name, fs::perms::owner_all);
  }
  return bin;
}

// A capture directory as far as make looks (windows.csv; a power log when `measured`).
std::string FakeCapture(const std::string& dir, bool measured = false) {
  fs::create_directories(dir);
  testing::WriteFile(dir + "/windows.csv", "kernel,start_us,end_us\n");
  if (measured) testing::WriteFile(dir + "/nvml_power.csv", "timestamp_us,power_mw\n");
  return dir;
}

std::string MakeGpuWith(const std::string& bin, const std::string& captures, const std::string& gpu,
                        const std::string& apps, const std::string& out) {
  return "make -f Makefile.runs gpu BIN=" + testing::ShellQuote(bin) +
         " CAPTURES=" + testing::ShellQuote(captures) + " GPU=" + testing::ShellQuote(gpu) +
         (apps.empty() ? std::string() : " APPS=" + testing::ShellQuote(apps)) +
         " OUT=" + testing::ShellQuote(out);
}

// make compares times only: another CAPTURES, GPU or APPS into an existing OUT rebuilt nothing and
// left the old GPU's report in place. The settings are now part of what decides a rebuild.
TEST(GpuRun, OtherSettingsIntoAnExistingRunFolderRemakeIt) {
  const std::string dir = ScratchDir();
  const std::string bin = StandInBin(dir);
  const std::string a = FakeCapture(dir + "/caps_a"), b = FakeCapture(dir + "/caps_b");
  const std::string apps = FakeCapture(dir + "/apps", /*measured=*/true);
  const std::string h100 = testing::WriteFile(dir + "/h100.json", "{}\n");
  const std::string h200 = testing::WriteFile(dir + "/h200.json", "{}\n");
  const std::string out = dir + "/run";
  Shell s = RunInSource(MakeGpuWith(bin, a, h100, apps, out));
  ASSERT_EQ(s.exit_code, 0) << s.output;
  EXPECT_NE(ReadFile(out + "/index.html").find("--capture " + a), std::string::npos);
  EXPECT_TRUE(fs::exists(out + "/validation/apps/summary.md"));
  const std::string log = dir + "/stages.log";
  auto ingests = [&log]() {
    std::ifstream in(log);
    int n = 0;
    for (std::string line; std::getline(in, line);) n += line.rfind("wattcal-ingest", 0) == 0;
    return n;
  };
  // The same settings: the suite is not ingested again.
  const int first = ingests();
  s = RunInSource(MakeGpuWith(bin, a, h100, apps, out));
  ASSERT_EQ(s.exit_code, 0) << s.output;
  EXPECT_EQ(ingests(), first + 1) << "only the applications' ingest (FORCE) reruns";
  // Other captures: remade, and the report shows them.
  s = RunInSource(MakeGpuWith(bin, b, h100, apps, out));
  ASSERT_EQ(s.exit_code, 0) << s.output;
  EXPECT_NE(s.output.find(out + ": made with other settings"), std::string::npos) << s.output;
  std::string index = ReadFile(out + "/index.html");
  EXPECT_NE(index.find("--capture " + b), std::string::npos) << index;
  EXPECT_EQ(index.find("--capture " + a), std::string::npos) << index;
  // Another GPU description: remade with it.
  s = RunInSource(MakeGpuWith(bin, b, h200, apps, out));
  ASSERT_EQ(s.exit_code, 0) << s.output;
  EXPECT_NE(ReadFile(out + "/data/tidy/measured.csv").find("--gpu " + h200), std::string::npos);
  EXPECT_NE(ReadFile(out + "/model/model.json").find("--train " + out), std::string::npos);
  // Without the applications: none of the old ones is left for the report to show.
  s = RunInSource(MakeGpuWith(bin, b, h200, "", out));
  ASSERT_EQ(s.exit_code, 0) << s.output;
  EXPECT_FALSE(fs::exists(out + "/predictions/apps.csv"));
  EXPECT_FALSE(fs::exists(out + "/validation/apps"));
  EXPECT_FALSE(fs::exists(out + "/data/tidy/apps"));
  EXPECT_EQ(ReadFile(out + "/index.html").find(apps), std::string::npos);
}

// The run folder is never written into a capture, and paths make cannot take are refused by name.
TEST(GpuRun, ARunFolderInACaptureOrAPathWithSpacesIsRefused) {
  const std::string dir = ScratchDir();
  const std::string bin = StandInBin(dir);
  const std::string caps = FakeCapture(dir + "/caps");
  const std::string gpu = testing::WriteFile(dir + "/gpu.json", "{}\n");
  Shell s = RunInSource(MakeGpuWith(bin, caps, gpu, "", caps));
  EXPECT_EQ(s.exit_code, 2) << s.output;
  EXPECT_NE(s.output.find("error: OUT=" + caps + " is a capture directory"), std::string::npos)
      << s.output;
  s = RunInSource(MakeGpuWith(bin, caps, gpu, "", caps + "/report"));
  EXPECT_EQ(s.exit_code, 2) << s.output;
  EXPECT_NE(s.output.find("is inside the capture directory " + caps), std::string::npos)
      << s.output;
  EXPECT_FALSE(fs::exists(caps + "/report"));
  EXPECT_FALSE(fs::exists(caps + "/.run-settings"));
  EXPECT_FALSE(fs::exists(dir + "/stages.log"));  // no stage ran
  // Paths with spaces.
  const std::string spaced = FakeCapture(dir + "/my caps");
  s = RunInSource(MakeGpuWith(bin, spaced, gpu, "", dir + "/run"));
  EXPECT_EQ(s.exit_code, 2) << s.output;
  EXPECT_NE(s.output.find(dir + "/my is not a directory (make splits CAPTURES and APPS at spaces"),
            std::string::npos)
      << s.output;
  s = RunInSource(MakeGpuWith(bin, caps, gpu, "", dir + "/my run"));
  EXPECT_EQ(s.exit_code, 2) << s.output;
  EXPECT_NE(s.output.find("OUT=" + dir + "/my run holds a space"), std::string::npos) << s.output;
  EXPECT_FALSE(fs::exists(dir + "/stages.log"));
}

TEST(AutoMethod, FixedForOneVfPairDvfsForSeveral) {
  WATTCAL_REQUIRE_DATASETS();
  const std::string dir = ScratchDir();
  auto r = RunStage("wattcal-ingest", {"--capture", Dataset("h100_capture/ubench_random"),
                                       "--capture", Dataset("h100_capture/mix_random"), "--gpu",
                                       kH100, "--tidy", dir + "/h100.csv"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunStage("wattcal-calibrate",
               {"--train", dir + "/h100.csv", "--method", "auto", "--out", dir + "/h100.json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(
      r.output.find(
          "--method auto: fixed (TPDS Eq. 9): one V-F pair (1980 MHz core, 2619 MHz memory) among "
          "the 130 training rows"),
      std::string::npos)
      << r.output;
  r = RunStage("wattcal-calibrate",
               {"--train", dir + "/h100.csv", "--method", "fixed", "--out", dir + "/fixed.json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(ReadModel(dir + "/h100.json").Coefficients(),
            ReadModel(dir + "/fixed.json").Coefficients());

  const std::string titanx = Dataset("gpmtool_tpds2019/gtx_980/micro_dvfs_6comp.csv");
  r = RunStage("wattcal-calibrate", {"--train", titanx, "--method", "auto", "--bootstrap", "20",
                                     "--out", dir + "/dvfs.json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("--method auto: dvfs (TPDS Eqs. 4-6): 9 V-F pairs"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("--bootstrap 20 applies to the fixed method only"), std::string::npos)
      << r.output;
  EXPECT_EQ(ReadModel(dir + "/dvfs.json").method, FitMethod::kDvfs);

  // validate --mode auto: the model's method, or with --cv-folds the corpus's.
  r = RunStage("wattcal-validate",
               {"--model", dir + "/h100.json", "--heldout", dir + "/h100.csv", "--mode", "auto",
                "--predictions", dir + "/p.csv", "--metrics", dir + "/m.json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("--mode auto: fixed (the model's method)"), std::string::npos)
      << r.output;
  EXPECT_EQ(
      nlohmann::json::parse(ReadFile(testing::ProvenancePath(dir + "/m.json")))["options"]["mode"],
      "fixed");
  r = RunStage("wattcal-validate",
               {"--train", titanx, "--cv-folds", "5", "--mode", "auto", "--method", "auto",
                "--predictions", dir + "/p2.csv", "--metrics", dir + "/m2.json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("--mode auto: dvfs (TPDS Eqs. 4-6): 9 V-F pairs"), std::string::npos)
      << r.output;
  // expected/results.csv: the GTX 980's CV, DVFS.
  EXPECT_NEAR(nlohmann::json::parse(ReadFile(dir + "/m2.json"))["mape_pct"].get<double>(), 3.27,
              0.01);
  r = RunStage("wattcal-validate",
               {"--train", titanx, "--cv-folds", "5", "--mode", "dvfs", "--method", "auto",
                "--predictions", dir + "/p3.csv", "--metrics", dir + "/m3.json"});
  testing::ExpectRefused(r, 1, {"--method auto goes with --mode auto"},
                         {dir + "/p3.csv", dir + "/m3.json"});
}

}  // namespace
}  // namespace wattcal
