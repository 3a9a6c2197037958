// wattcal-capture --fields gpm (issue 38 item 3): NVML GPM metrics recorded beside the power, on
// the simulated device (WATTCAL_SIMULATED_GPU) and the stand-in NVML (tests/fake_nvml.c, whose
// GPM functions have nvml.h's structures and whose power is drawn from the activity with known
// per-metric weights); the capture is ingested through the GPM field set
// (microbench_specs/gpus/fields/h100_sxm_gpm.json), calibrated, and an --app capture predicted,
// with no ncu anywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ingest/field_log.h"
#include "model/model_io.h"
#include "test_support.h"
#include "util/errors.h"

namespace wattcal {
namespace {

namespace fs = std::filesystem;
using testing::ShellQuote;

// The simulated GPU's truth: W at full use per GPM metric (FAKE_NVML_GPM_W) and its idle power.
// The GPM set's components read these metrics one each.
const std::map<std::string, std::pair<int, double>> kTrueComponentW = {
    {"SM_ACTIVE", {2, 60.0}},    {"PIPE_INT", {4, 40.0}},      {"PIPE_FP32", {12, 120.0}},
    {"PIPE_FP64", {11, 150.0}},  {"PIPE_FP16", {13, 90.0}},    {"TENSOR_HMMA", {7, 250.0}},
    {"TENSOR_IMMA", {9, 200.0}}, {"DRAM_ACTIVE", {10, 110.0}},
};
constexpr double kIdleW = 80.0;
// Benchmarks that together vary every component: one per pipe, the SM sweep for SM_ACTIVE
// against the constant terms, two occupancies, two mixes. FP16 HMMA on 5/8 of the SMs (below the
// cap, the window --seconds gives; tensor_fp16 at full use runs its own 3.3-s window).
constexpr const char* kSuite =
    "^(idle_sleep|int_add|fp32_fma|fp32_add|fp64_fma|fp16_hfma2|tensor_fp16_sm5of8|tensor_int8|"
    "dram_ld|"
    "dram_write|sm_sweep_int_add_0(33|66|99)|mix_int_fp32|mix_fp64_dram|mix_tensor_dram)$";

std::string GpmSet() {
  return std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/gpus/fields/h100_sxm_gpm.json";
}

// The environment of a simulated capture: the stand-in NVML with GPM, its weights, the load file.
std::string SimulatedEnvironment(const std::string& dir,
                                 const std::string& library = WATTCAL_FAKE_NVML) {
  std::string weights;
  for (const auto& [component, id_w] : kTrueComponentW) {
    weights += (weights.empty() ? "" : ",") + std::to_string(id_w.first) + ":" +
               std::to_string(id_w.second);
  }
  return "WATTCAL_SIMULATED_GPU=1 WATTCAL_NVML_LIBRARY=" + ShellQuote(library) +
         " FAKE_NVML_LOAD_FILE=" + ShellQuote(dir + "/load") +
         " FAKE_NVML_NAME='NVIDIA H100 80GB HBM3' FAKE_NVML_IDLE_W=" + std::to_string(kIdleW) +
         " FAKE_NVML_GPM_W=" + weights +
         " FAKE_NVML_SEED=" + std::to_string(testing::SeedFromTestName()) + " ";
}

std::string Capture() { return ShellQuote(std::string(WATTCAL_BIN_DIR) + "/wattcal-capture"); }

// A short simulated suite recorded with --fields gpm into `out`.
testing::CommandResult RecordSuite(const std::string& dir, const std::string& out,
                                   const std::string& only, const std::string& extra = "") {
  return testing::RunShell(SimulatedEnvironment(dir) + Capture() + " --out " + ShellQuote(out) +
                           " --fields gpm --only " + ShellQuote(only) +
                           " --seconds 0.7 --gap-ms 60 --idle-s 0.3 --sample-ms 5 " + extra +
                           " 2>&1");
}

// The value of `column` in the CSV row whose first cell is `name`.
std::string Cell(const std::string& csv, const std::string& name, const std::string& column) {
  std::istringstream in(csv);
  std::string header, line;
  while (std::getline(in, header) && !header.empty() && header[0] == '#') {
  }
  std::vector<std::string> names;
  std::stringstream hs(header);
  for (std::string c; std::getline(hs, c, ',');) names.push_back(c);
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ls(line);
    for (std::string c; std::getline(ls, c, ',');) cells.push_back(c);
    if (cells.empty() || cells[0] != name) continue;
    for (size_t k = 0; k < names.size() && k < cells.size(); ++k) {
      if (names[k] == column) return cells[k];
    }
  }
  return "";
}

// The model's per-component power at full use (gamma x the domain's clock, v = 1 at the clock
// the capture ran at) against the stand-in's weights, and its constant terms against its idle.
void ExpectTrueWeightsRecovered(const PowerModel& model) {
  const std::vector<std::string> names = model.layout.ComponentNames();
  const std::vector<int> domains = model.layout.ComponentDomains();
  ASSERT_EQ(names.size(), kTrueComponentW.size());
  // Tolerances: the GPM noise (0.3 points), the sampling's edge of each window and the power
  // integrated at 5 ms steps; a component is within 8% or 6 W of its truth.
  constexpr double kComponentTolFrac = 0.08, kComponentTolW = 6.0, kBaseTolW = 4.0;
  for (size_t i = 0; i < names.size(); ++i) {
    const double f_mhz = model.layout.domains[domains[i]].default_freq_mhz;
    const double recovered_w = model.component_w_per_mhz[i] * f_mhz;
    const double true_w = kTrueComponentW.at(names[i]).second;
    EXPECT_NEAR(recovered_w, true_w, std::max(kComponentTolW, kComponentTolFrac * true_w))
        << names[i];
    std::printf("  %-12s recovered %7.2f W, true %6.1f W\n", names[i].c_str(), recovered_w, true_w);
  }
  double base_w = 0.0;
  for (size_t d = 0; d < model.static_w.size(); ++d) {
    base_w +=
        model.static_w[d] + model.idle_dyn_w_per_mhz[d] * model.layout.domains[d].default_freq_mhz;
  }
  std::printf("  base         recovered %7.2f W, true %6.1f W\n", base_w, kIdleW);
  EXPECT_NEAR(base_w, kIdleW, kBaseTolW);
}

TEST(GpmCapture, ASimulatedSuiteCalibratesThroughTheGpmFieldSetAndPredictsAnApp) {
  const std::string dir = testing::ScratchDir();
  const testing::CommandResult rec = RecordSuite(dir, dir + "/suite", kSuite);
  ASSERT_EQ(rec.exit_code, 0) << rec.output;
  // The field log beside the power log, and the manifest saying which fields.
  const std::string log = testing::ReadFile(dir + "/suite/gpm_fields.csv");
  EXPECT_EQ(log.rfind("timestamp_us,NVML_GPM_METRIC_GRAPHICS_UTIL,NVML_GPM_METRIC_SM_UTIL,", 0), 0u)
      << log.substr(0, 200);
  const std::string manifest = testing::ReadFile(dir + "/suite/capture.json");
  EXPECT_NE(manifest.find("\"fields\": \"gpm\""), std::string::npos) << manifest;
  EXPECT_NE(manifest.find("\"field_log\": \"gpm_fields.csv\""), std::string::npos);
  EXPECT_NE(manifest.find("\"NVML_GPM_METRIC_FP64_UTIL\""), std::string::npos);
  EXPECT_FALSE(fs::exists(dir + "/suite/ncu_raw.csv"));

  // Ingest through the field set, twice: byte-identical.
  for (const char* out : {"/measured.csv", "/measured2.csv"}) {
    const testing::CommandResult ingest = testing::RunStage(
        "wattcal-ingest", {"--capture", dir + "/suite", "--gpu", GpmSet(), "--tidy", dir + out});
    ASSERT_EQ(ingest.exit_code, 0) << ingest.output;
  }
  const std::string tidy = testing::ReadFile(dir + "/measured.csv");
  EXPECT_EQ(tidy, testing::ReadFile(dir + "/measured2.csv"));
  EXPECT_TRUE(testing::HasProvenance(dir + "/measured.csv"));
  EXPECT_NE(tidy.find("core:PIPE_FP64"), std::string::npos) << tidy.substr(0, 300);
  EXPECT_EQ(tidy.find("few_field_samples"), std::string::npos) << tidy;
  // The FP64 benchmark's utilisation is the simulated device's (90% of the pipe, a full grid).
  const std::string fp64 = Cell(tidy, "fp64_fma", "core:PIPE_FP64");
  ASSERT_FALSE(fp64.empty()) << tidy;
  EXPECT_NEAR(std::stod(fp64), 0.9, 0.02);

  const testing::CommandResult cal = testing::RunStage(
      "wattcal-calibrate", {"--train", dir + "/measured.csv", "--out", dir + "/model.json",
                            "--method", "fixed", "--threads", "1"});
  ASSERT_EQ(cal.exit_code, 0) << cal.output;
  ExpectTrueWeightsRecovered(ReadModel(dir + "/model.json"));

  // An application recorded with --fields gpm, no ncu: it keeps SM_UTIL 100%, FP32 70% and DRAM
  // 40% busy for 1.5 s, drawing 80 + 60 + 0.7 x 120 + 0.4 x 110 = 268 W.
  const std::string app =
      "printf '2 100\\n12 70\\n10 40\\n' > \"$FAKE_NVML_LOAD_FILE\"; sleep 1.5; rm -f "
      "\"$FAKE_NVML_LOAD_FILE\"";
  const testing::CommandResult rec_app = testing::RunShell(
      SimulatedEnvironment(dir) + Capture() + " --app busy --out " + ShellQuote(dir + "/apps") +
      " --fields gpm --gap-ms 300 -- sh -c " + ShellQuote(app) + " 2>&1");
  ASSERT_EQ(rec_app.exit_code, 0) << rec_app.output;
  EXPECT_TRUE(fs::exists(dir + "/apps/gpm_fields.csv"));
  EXPECT_NE(testing::ReadFile(dir + "/apps/capture.json").find("\"field_log\": \"gpm_fields.csv\""),
            std::string::npos);
  const testing::CommandResult predict = testing::RunStage(
      "wattcal-predict", {"--model", dir + "/model.json", "--capture", dir + "/apps", "--gpu",
                          GpmSet(), "--out", dir + "/apps.csv"});
  ASSERT_EQ(predict.exit_code, 0) << predict.output;
  const std::string rows = testing::ReadFile(dir + "/apps.csv");
  const std::string predicted = Cell(rows, "busy", "predicted_w");
  const std::string measured = Cell(rows, "busy", "measured_w");
  ASSERT_FALSE(predicted.empty()) << rows;
  ASSERT_FALSE(measured.empty()) << rows;
  constexpr double kTrueAppW = kIdleW + 60.0 + 0.7 * 120.0 + 0.4 * 110.0;
  std::printf("  app busy: predicted %s W, measured %s W, true %.1f W\n", predicted.c_str(),
              measured.c_str(), kTrueAppW);
  EXPECT_NEAR(std::stod(measured), kTrueAppW, 0.03 * kTrueAppW);
  EXPECT_NEAR(std::stod(predicted), kTrueAppW, 0.04 * kTrueAppW);
  // A recording without the fields is not added to a capture whose recordings have them.
  const std::string before = testing::ReadFile(dir + "/apps/windows.csv");
  const testing::CommandResult mixed =
      testing::RunShell(SimulatedEnvironment(dir) + Capture() + " --app other --out " +
                        ShellQuote(dir + "/apps") + " --gap-ms 0 -- true 2>&1");
  EXPECT_EQ(mixed.exit_code, 3) << mixed.output;
  EXPECT_NE(mixed.output.find("its recordings have GPM fields"), std::string::npos) << mixed.output;
  EXPECT_EQ(testing::ReadFile(dir + "/apps/windows.csv"), before);
}

TEST(GpmCapture, AGpuOrDriverWithoutGpmIsRefusedAndNoCaptureIsLeft) {
  const std::string dir = testing::ScratchDir();
  // nvmlGpmQueryDeviceSupport says no.
  const testing::CommandResult no_support = testing::RunShell(
      "FAKE_NVML_NO_GPM=1 " + SimulatedEnvironment(dir) + Capture() + " --out " +
      ShellQuote(dir + "/a") + " --fields gpm --only int_add --seconds 0.2 --idle-s 0 2>&1");
  EXPECT_EQ(no_support.exit_code, 2) << no_support.output;
  EXPECT_NE(no_support.output.find("this GPU has no GPM metrics"), std::string::npos)
      << no_support.output;
  EXPECT_FALSE(fs::exists(dir + "/a"));
  // A driver whose NVML has no GPM functions.
  const testing::CommandResult no_symbols = testing::RunShell(
      SimulatedEnvironment(dir, WATTCAL_FAKE_NVML_NO_GPM) + Capture() + " --out " +
      ShellQuote(dir + "/b") + " --fields gpm --only int_add --seconds 0.2 --idle-s 0 2>&1");
  EXPECT_EQ(no_symbols.exit_code, 2) << no_symbols.output;
  EXPECT_NE(no_symbols.output.find("this NVML has no GPM functions"), std::string::npos)
      << no_symbols.output;
  EXPECT_FALSE(fs::exists(dir + "/b"));
  // --app alike: refused before the program runs or --out is made.
  const testing::CommandResult app =
      testing::RunShell("FAKE_NVML_NO_GPM=1 " + SimulatedEnvironment(dir) + Capture() +
                        " --app x --out " + ShellQuote(dir + "/c") + " --fields gpm -- sh -c " +
                        ShellQuote("touch " + dir + "/ran") + " 2>&1");
  EXPECT_EQ(app.exit_code, 2) << app.output;
  EXPECT_NE(app.output.find("this GPU has no GPM metrics"), std::string::npos) << app.output;
  EXPECT_FALSE(fs::exists(dir + "/c"));
  EXPECT_FALSE(fs::exists(dir + "/ran"));
  // The error is one line.
  EXPECT_EQ(std::count(app.output.begin(), app.output.end(), '\n'), 1) << app.output;
  // A field set of DCGM fields cannot be recorded by wattcal-capture.
  const testing::CommandResult dcgm = testing::RunShell(
      SimulatedEnvironment(dir) + Capture() + " --out " + ShellQuote(dir + "/d") + " --fields " +
      ShellQuote(std::string(WATTCAL_SOURCE_DIR) +
                 "/microbench_specs/gpus/fields/h100_sxm_dcgm.json") +
      " 2>&1");
  EXPECT_EQ(dcgm.exit_code, 1) << dcgm.output;
  EXPECT_NE(dcgm.output.find("records NVML GPM metrics only"), std::string::npos) << dcgm.output;
  EXPECT_FALSE(fs::exists(dir + "/d"));
}

// The lines of `text`.
std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(GpmCapture, AFieldLogWithoutAFieldTheSetReadsIsRefusedByName) {
  const std::string dir = testing::ScratchDir();
  ASSERT_EQ(RecordSuite(dir, dir + "/suite", "int_add,fp64_fma").exit_code, 0);
  // Drop the FP64 column (the 12th of the header).
  const std::vector<std::string> lines =
      SplitLines(testing::ReadFile(dir + "/suite/gpm_fields.csv"));
  std::vector<std::string> header;
  std::stringstream hs(lines[0]);
  for (std::string c; std::getline(hs, c, ',');) header.push_back(c);
  const size_t drop =
      std::find(header.begin(), header.end(), "NVML_GPM_METRIC_FP64_UTIL") - header.begin();
  ASSERT_LT(drop, header.size());
  std::string edited;
  for (const std::string& line : lines) {
    std::vector<std::string> cells;
    std::stringstream ls(line);
    for (std::string c; std::getline(ls, c, ',');) cells.push_back(c);
    if (line.back() == ',') cells.push_back("");
    cells.erase(cells.begin() + static_cast<std::ptrdiff_t>(drop));
    std::string joined;
    for (size_t k = 0; k < cells.size(); ++k) joined += (k ? "," : "") + cells[k];
    edited += joined + "\n";
  }
  testing::WriteFile(dir + "/suite/gpm_fields.csv", edited);
  const testing::CommandResult r = testing::RunStage(
      "wattcal-ingest",
      {"--capture", dir + "/suite", "--gpu", GpmSet(), "--tidy", dir + "/measured.csv"});
  testing::ExpectRefused(r, 2,
                         {"gpm_fields.csv:1", "NVML_GPM_METRIC_FP64_UTIL", "GPM metric id 11"},
                         {dir + "/measured.csv"});
  // And a capture without any field log, through the field set: named, with what to do.
  fs::remove(dir + "/suite/gpm_fields.csv");
  const testing::CommandResult none = testing::RunStage(
      "wattcal-ingest",
      {"--capture", dir + "/suite", "--gpu", GpmSet(), "--tidy", dir + "/measured.csv"});
  testing::ExpectRefused(none, 2, {"no gpm_fields.csv", "--fields gpm"}, {dir + "/measured.csv"});
  // A DCGM field set cannot read a GPM field log.
  ASSERT_EQ(RecordSuite(dir, dir + "/again", "int_add").exit_code, 0);
  const testing::CommandResult dcgm = testing::RunStage(
      "wattcal-ingest",
      {"--capture", dir + "/again", "--gpu",
       std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/gpus/fields/h100_sxm_dcgm.json",
       "--tidy", dir + "/measured.csv"});
  testing::ExpectRefused(dcgm, 2, {"h100_sxm_dcgm.json", "a dcgm field set", "GPM set"},
                         {dir + "/measured.csv"});
}

TEST(GpmCapture, AWindowWithTooFewFieldSamplesIsFlaggedAndLeftOutOfTraining) {
  const std::string dir = testing::ScratchDir();
  ASSERT_EQ(RecordSuite(dir, dir + "/suite", "int_add,fp32_fma,fp64_fma").exit_code, 0);
  // Remove the field samples inside fp32_fma's window but two.
  const std::string windows = testing::ReadFile(dir + "/suite/windows.csv");
  int64_t start_us = 0, end_us = 0;
  for (const std::string& line : SplitLines(windows)) {
    if (line.rfind("fp32_fma,", 0) != 0) continue;
    std::stringstream ls(line);
    std::string name, a, b;
    std::getline(ls, name, ',');
    std::getline(ls, a, ',');
    std::getline(ls, b, ',');
    start_us = std::stoll(a), end_us = std::stoll(b);
  }
  ASSERT_GT(end_us, start_us) << windows;
  // Without them all, the window has no field value: refused, naming it.
  const std::vector<std::string> log_lines =
      SplitLines(testing::ReadFile(dir + "/suite/gpm_fields.csv"));
  auto time_of = [](const std::string& line) {
    return !line.empty() && std::isdigit(static_cast<unsigned char>(line[0]))
               ? std::stoll(line.substr(0, line.find(',')))
               : int64_t{-1};
  };
  std::vector<size_t> inside;
  for (size_t k = 0; k < log_lines.size(); ++k) {
    if (time_of(log_lines[k]) >= start_us && time_of(log_lines[k]) <= end_us) inside.push_back(k);
  }
  ASSERT_GT(inside.size(), 12u);
  auto write_without = [&](size_t keep_last) {
    std::string text;
    for (size_t k = 0; k < log_lines.size(); ++k) {
      const bool drop =
          std::find(inside.begin(), inside.end() - static_cast<std::ptrdiff_t>(keep_last), k) !=
          inside.end() - static_cast<std::ptrdiff_t>(keep_last);
      if (!drop) text += log_lines[k] + "\n";
    }
    testing::WriteFile(dir + "/suite/gpm_fields.csv", text);
  };
  write_without(0);
  testing::ExpectRefused(
      testing::RunStage("wattcal-ingest", {"--capture", dir + "/suite", "--gpu", GpmSet(), "--tidy",
                                           dir + "/measured.csv"}),
      2, {"windows.csv:3", "fp32_fma", "no field sample"}, {dir + "/measured.csv"});
  // With the last two samples inside it (in its settled part): flagged.
  write_without(2);
  const size_t removed = inside.size() - 2;
  ASSERT_GT(removed, 10u);
  const testing::CommandResult ingest = testing::RunStage(
      "wattcal-ingest",
      {"--capture", dir + "/suite", "--gpu", GpmSet(), "--tidy", dir + "/measured.csv"});
  ASSERT_EQ(ingest.exit_code, 0) << ingest.output;
  EXPECT_NE(ingest.output.find("fp32_fma"), std::string::npos) << ingest.output;
  EXPECT_NE(ingest.output.find("fewer than 3 (flagged few_field_samples"), std::string::npos)
      << ingest.output;
  const std::string tidy = testing::ReadFile(dir + "/measured.csv");
  EXPECT_NE(Cell(tidy, "fp32_fma", "flags").find("few_field_samples"), std::string::npos) << tidy;
  EXPECT_EQ(Cell(tidy, "int_add", "flags").find("few_field_samples"), std::string::npos) << tidy;
  // Calibration leaves the flagged window out, and says so.
  const testing::CommandResult cal = testing::RunStage(
      "wattcal-calibrate", {"--train", dir + "/measured.csv", "--out", dir + "/model.json",
                            "--method", "fixed", "--threads", "1"});
  EXPECT_NE(cal.output.find("few_field_samples"), std::string::npos) << cal.output;
}

TEST(GpmCapture, TheFieldLogIsReadAsGpmCsvWithItsLinesNamed) {
  const std::string dir = testing::ScratchDir();
  const std::string path = testing::WriteFile(
      dir + "/gpm_fields.csv",
      "timestamp_us,NVML_GPM_METRIC_SM_UTIL,NVML_GPM_METRIC_FP32_UTIL\n"
      "1764410400000000,50.000,10.000\n1764410400005000,,20.000\n1764410400010000,70.000,30.000\n");
  const FieldLog log = ReadFieldLog(path);
  EXPECT_EQ(log.format, "gpm-csv");
  ASSERT_EQ(log.series.size(), 1u);
  const FieldWindowMeans means =
      AverageFieldWindow(log, log.series[0], 1764410400.0, 1764410400.01,
                         {"NVML_GPM_METRIC_SM_UTIL", "NVML_GPM_METRIC_FP32_UTIL"}, 3);
  EXPECT_EQ(means.samples, 3);
  EXPECT_DOUBLE_EQ(means.means.at("NVML_GPM_METRIC_SM_UTIL"), 60.0);  // the empty cell is N/A
  EXPECT_DOUBLE_EQ(means.means.at("NVML_GPM_METRIC_FP32_UTIL"), 20.0);
  EXPECT_EQ(means.na_cells.at("NVML_GPM_METRIC_SM_UTIL"), 1);
  testing::WriteFile(
      path, "timestamp_us,NVML_GPM_METRIC_SM_UTIL\n1764410400000000,50\n1764410400005000,busy\n");
  testing::ExpectInputError([&] { ReadFieldLog(path); }, 3, {"NVML_GPM_METRIC_SM_UTIL", "busy"});
  testing::WriteFile(path, "timestamp_us,NVML_GPM_METRIC_SM_UTIL\n1764410400000000,50,7\n");
  testing::ExpectInputError([&] { ReadFieldLog(path); }, 2, {"3 cells"});
}

}  // namespace
}  // namespace wattcal
