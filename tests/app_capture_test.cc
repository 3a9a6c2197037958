// Recording a user's own program (wattcal-capture --app) and predicting it without a power
// meter (wattcal-predict --capture), without a GPU: the marks file and its two writers (the
// C++ header and the Python module), the recording driven by a meter whose power follows a
// "load" file that the recorded command creates, a stand-in for ncu, the binary itself against
// a stand-in NVML library (tests/fake_nvml.c), and the predictions checked against
// wattcal-validate --apps-predictions on the same data.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app_runner.h"
#include "capture_writer.h"
#include "io/corpus_io.h"
#include "io/gpu_description.h"
#include "marks_file.h"
#include "model/model_io.h"
#include "runner.h"
#include "test_support.h"
#include "util/errors.h"
#include "wattcal/marks.h"
#include "app_capture_support.h"

namespace wattcal {
namespace {

namespace fs = std::filesystem;
using namespace capture;
using namespace apps_test;

// ---------------------------------------------------------------------------------------
// The marks file.

TEST(Marks, WindowsInFileOrder) {
  const std::string path = testing::WriteFile(testing::ScratchDir() + "/marks.txt",
                                              "# a comment\n"
                                              "begin steady 1700000000000000000\n"
                                              "end steady 1700000001500000000\n"
                                              "\n"
                                              "begin steady 1700000002000000000\r\n"
                                              "end steady 1700000003000000000\n");
  const std::vector<MarkedWindow> w = ReadMarks(path);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].name, "steady");
  EXPECT_EQ(w[0].begin_ns, 1700000000000000000);
  EXPECT_EQ(w[0].end_ns, 1700000001500000000);
  EXPECT_EQ(w[0].begin_line, 2);
  EXPECT_EQ(w[0].end_line, 3);
  EXPECT_EQ(w[1].begin_line, 5);
  EXPECT_EQ(w[0].steps, 0);  // no step count given
  EXPECT_TRUE(ReadMarks(testing::ScratchDir() + "/absent.txt").empty());
}

TEST(Marks, EndLineCarriesTheSteps) {
  const std::string path = testing::WriteFile(testing::ScratchDir() + "/marks.txt",
                                              "begin steady 1700000000000000000\n"
                                              "end steady 1700000001500000000 1379\n"
                                              "begin steady 1700000002000000000\n"
                                              "end steady 1700000003000000000\t1\n");
  const std::vector<MarkedWindow> w = ReadMarks(path);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].steps, 1379);
  EXPECT_EQ(w[0].end_ns, 1700000001500000000);
  EXPECT_EQ(w[1].steps, 1);
}

TEST(Marks, BrokenMarksNameTheirLine) {
  const std::string dir = testing::ScratchDir();
  struct Case {
    std::string text;
    int64_t line;
    std::vector<std::string> parts;
  };
  const std::vector<Case> cases = {
      {"end steady 5\n", 1, {"unmatched end"}},
      {"begin a 1\nbegin b 2\nend b 3\nend a 4\n",
       2,
       {"'begin b' inside the window 'a' begun on line 1", "do not nest"}},
      {"begin a 1\nend a 2\nbegin a 3\n", 3, {"never ended"}},
      {"begin a 10\nend b 20\n", 2, {"'end b' but the open window is 'a'"}},
      {"begin a 20\nend a 10\n", 2, {"before its begin on line 1"}},
      {"begin a 1.5e9\n", 1, {"'1.5e9' is not a time"}},
      {"begin a -3\n", 1, {"'-3' is not a time"}},
      {"begin two words 5\n", 1, {"is not a mark"}},
      {"start a 5\n", 1, {"is not a mark"}},
      {"begin a 1\nend a", 2, {"is not a mark", "cut short"}},
      {"begin a 1\nend a 2 0\n", 2, {"a step count of zero"}},
      {"begin a 1\nend a 2 +5\n", 2, {"'+5' is not a step count", ">= 1"}},
      {"begin a 1\nend a 2 -5\n", 2, {"'-5' is not a step count"}},
      {"begin a 1\nend a 2 5x\n", 2, {"'5x' is not a step count"}},
      {"begin a 1\nend a 2 1.5\n", 2, {"'1.5' is not a step count"}},
      {"begin a 1\nend a 2 5 6\n", 2, {"is not a mark", "[STEPS]"}},
      {"begin a 1 5\nend a 2\n", 1, {"is not a mark"}},
  };
  for (const Case& c : cases) {
    const std::string path = testing::WriteFile(dir + "/marks.txt", c.text);
    std::vector<std::string> parts = c.parts;
    parts.push_back(path);
    testing::ExpectInputError([&] { ReadMarks(path); }, c.line, parts);
  }
}

TEST(Marks, CppHelperWritesWhatTheReaderReads) {
  const std::string path = testing::ScratchDir() + "/marks.txt";
  ASSERT_EQ(setenv("WATTCAL_MARKS", path.c_str(), 1), 0);
  EXPECT_TRUE(wattcal::marks::Enabled());
  int synced = 0;
  for (int i = 0; i < 3; ++i) {
    wattcal::marks::Window w("steady");
  }
  EXPECT_TRUE(wattcal::marks::Begin("custom", [&] { ++synced; }));
  EXPECT_TRUE(wattcal::marks::End("custom", [&] { ++synced; }));
  EXPECT_EQ(synced, 2);
  const std::vector<MarkedWindow> w = ReadMarks(path);
  ASSERT_EQ(w.size(), 4u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(w[i].name, "steady");
  EXPECT_EQ(w[3].name, "custom");
  const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  for (const MarkedWindow& m : w) {
    EXPECT_LE(m.begin_ns, m.end_ns);
    EXPECT_LE(m.end_ns, now_ns);
    EXPECT_GT(m.begin_ns,
              now_ns - int64_t{60} * 1000000000);  // CLOCK_REALTIME, the sampler's clock
  }
  // An invalid name is refused, and fails the recording: the helper writes what the reader
  // refuses, with the reason (issue 35: it went on, and the whole run became the window).
  EXPECT_FALSE(wattcal::marks::Begin("two words"));
  EXPECT_FALSE(wattcal::marks::End(""));
  EXPECT_FALSE(wattcal::marks::Begin("a,b"));  // windows.csv's mark column cannot hold it
  testing::ExpectInputError([&] { ReadMarks(path); }, 9,
                            {path, "the marks helper refused a mark",
                             "begin: the window name 'two words' is not one word"});
  // Without WATTCAL_MARKS the program runs unchanged and writes nothing.
  ASSERT_EQ(unsetenv("WATTCAL_MARKS"), 0);
  EXPECT_FALSE(wattcal::marks::Enabled());
  const std::string before = testing::ReadFile(path);
  { wattcal::marks::Window w2("steady"); }
  EXPECT_EQ(testing::ReadFile(path), before);
}

TEST(Marks, CppHelperWritesTheSteps) {
  const std::string path = testing::ScratchDir() + "/marks.txt";
  ASSERT_EQ(setenv("WATTCAL_MARKS", path.c_str(), 1), 0);
  {
    wattcal::marks::Window w("steady", [] {});
    w.set_steps(1379);  // counted as the program went
  }
  EXPECT_TRUE(wattcal::marks::Begin("steady", [] {}));
  EXPECT_TRUE(wattcal::marks::EndWithSteps("steady", 5, [] {}));
  {
    wattcal::marks::Window w("steady", [] {});
  }  // no steps: none written
  std::vector<MarkedWindow> w = ReadMarks(path);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].steps, 1379);
  EXPECT_EQ(w[1].steps, 5);
  EXPECT_EQ(w[2].steps, 0);
  // A step count below 1 is refused and fails the recording, as an invalid name does.
  EXPECT_TRUE(wattcal::marks::Begin("steady", [] {}));
  EXPECT_FALSE(wattcal::marks::EndWithSteps("steady", 0, [] {}));
  testing::ExpectInputError([&] { ReadMarks(path); }, 8,
                            {path, "the marks helper refused a mark", "was given 0 steps"});
  ASSERT_EQ(unsetenv("WATTCAL_MARKS"), 0);
}

TEST(Marks, PythonHelperWritesWhatTheReaderReads) {
  const std::string python = Python();
  WATTCAL_NEED(!python.empty(), "python3 not found: scripts/install_deps.sh installs it");
  const std::string dir = testing::ScratchDir();
  const std::string marks = dir + "/marks.txt";
  const std::string script = testing::WriteFile(dir + "/program.py", R"(
import os
import sys
import wattcal_marks
assert wattcal_marks.enabled()
for _ in range(2):
    with wattcal_marks.window("steady", sync=None):
        pass
calls = []
wattcal_marks.begin("other", sync=lambda: calls.append(1))
wattcal_marks.end("other", sync=lambda: calls.append(1))
assert calls == [1, 1], calls
with wattcal_marks.window("counted", sync=None, steps=1379):
    pass
with wattcal_marks.window("counted", sync=None) as w:
    w.steps = 7  # counted as the program went
for bad in (0, -1, 2.5, "3", True):
    try:
        with wattcal_marks.window("counted", sync=None, steps=bad):
            pass
        sys.exit("steps=%r accepted" % (bad,))
    except wattcal_marks.MarkError as e:
        assert "a step count is a whole number >= 1" in str(e), e
    wattcal_marks._open_window = None  # the refused end left it open
wattcal_marks.begin("outer", sync=None)
try:
    wattcal_marks.begin("inner", sync=None)
    sys.exit("nested accepted")
except wattcal_marks.MarkError as e:
    print("refused:", e)
wattcal_marks.end("outer", sync=None)
try:
    wattcal_marks.end("outer", sync=None)
    sys.exit("unmatched end accepted")
except wattcal_marks.MarkError:
    pass
# An invalid name raises, and fails the recording even when the program goes on: the marks file
# gets a line the recorder refuses, with the reason.
os.environ["WATTCAL_MARKS"] = sys.argv[1]
for bad in ("two words", "", "a,b"):
    try:
        wattcal_marks.begin(bad)
        sys.exit("accepted %r" % bad)
    except wattcal_marks.MarkError:
        pass
# A marks file that cannot be written is a clear error naming the variable and the path.
os.environ["WATTCAL_MARKS"] = "/nonexistent-wattcal/marks.txt"
try:
    wattcal_marks.begin("steady", sync=None)
    sys.exit("an unwritable marks file was accepted")
except wattcal_marks.MarkError as e:
    print("unwritable:", e)
print("ok")
)");
  const std::string command =
      fmt::format("WATTCAL_MARKS='{}' PYTHONPATH='{}/python' '{}' '{}' '{}' 2>&1", marks,
                  WATTCAL_SOURCE_DIR, python, script, dir + "/refused.txt");
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  const int status = pclose(pipe);
  ASSERT_EQ(WEXITSTATUS(status), 0) << out;
  EXPECT_NE(out.find("refused: wattcal marks: 'begin inner' inside the open window 'outer'"),
            std::string::npos)
      << out;
  // The refused step counts left `invalid` lines: the recording would be refused.
  testing::ExpectInputError([&] { ReadMarks(marks); }, 12,
                            {"the marks helper refused a mark", "was given 0 steps"});
  const std::vector<std::string> lines = Lines(testing::ReadFile(marks));
  ASSERT_GE(lines.size(), 10u);
  const std::string head = testing::WriteFile(dir + "/head.txt", [&] {
    std::string t;
    for (size_t i = 0; i < 10; ++i) t += lines[i] + "\n";
    return t;
  }());
  const std::vector<MarkedWindow> w = ReadMarks(head);
  ASSERT_EQ(w.size(), 5u);
  EXPECT_EQ(w[0].name, "steady");
  EXPECT_EQ(w[1].name, "steady");
  EXPECT_EQ(w[2].name, "other");
  EXPECT_EQ(w[3].name, "counted");
  EXPECT_EQ(w[3].steps, 1379);
  EXPECT_EQ(w[4].steps, 7);
  EXPECT_EQ(w[2].steps, 0);
  testing::ExpectInputError(
      [&] { ReadMarks(dir + "/refused.txt"); }, 1,
      {"the marks helper refused a mark", "begin: the window name 'two words' is not one word"});
  EXPECT_NE(out.find("unwritable: wattcal marks: cannot write the marks file "
                     "WATTCAL_MARKS=/nonexistent-wattcal/marks.txt: No such file or directory"),
            std::string::npos)
      << out;
}

// ---------------------------------------------------------------------------------------
// The recording, in process, with a meter whose power follows a load file (app_capture_support.h).

TEST(AppCapture, DefaultOptionsNeedOnlyTheRequiredOnes) {
  AppCaptureOptions o;
  std::string error;
  EXPECT_FALSE(o.Check(&error));
  o.out_dir = "x";
  o.name = "gemm";
  EXPECT_FALSE(o.Check(&error));
  EXPECT_NE(error.find("give the command"), std::string::npos) << error;
  o.command = {"true"};
  EXPECT_TRUE(o.Check(&error)) << error;
  for (const char* bad : {"", "two words", "../up", "-x", "a/b"}) {
    o.name = bad;
    EXPECT_FALSE(o.Check(&error)) << bad;
    EXPECT_NE(error.find("--app"), std::string::npos) << error;
  }
  o.name = "gemm";
  o.nvtx_range = "steady";
  EXPECT_FALSE(o.Check(&error));
  EXPECT_NE(error.find("go with --counters"), std::string::npos) << error;
}

TEST(AppCapture, MarkedRunsAreWindowsWithTheirPowerAndCountersAndAddingAppends) {
  const Recorded r = NewRecording();
  LoadFileMeter meter(r.load);
  std::vector<std::string> progress;
  const auto log = [&](const std::string& line) { progress.push_back(line); };

  // Two runs of a program that marks one 0.8 s loaded window each, with counters.
  testing::WriteFile(r.page, NcuRawPage(DescriptionMetrics(kH100), 3, 1));
  AppCaptureOptions o = Options(r, "gemm", MarkedProgram(r.load, 1, 0.8, "steady", "1379"));
  o.repeat = 2;
  o.counters = true;
  const std::vector<WindowRecord> first = RunAppCapture(o, FakeGpu(), meter, log);
  ASSERT_EQ(first.size(), 2u);
  for (const WindowRecord& w : first) {
    EXPECT_EQ(w.kernel, "gemm");
    EXPECT_NEAR((w.end_us - w.start_us) * 1e-6, 0.8, 0.15);
  }
  EXPECT_GT(first[1].start_us, first[0].end_us + 100000);  // the idle gap before run 2
  EXPECT_EQ(testing::ReadFile(r.dir + "/windows.csv").substr(0, 38),
            "kernel,start_us,end_us,run,mark,steps\n");
  const std::vector<AppWindow> windows = ReadAppWindows(r.dir + "/windows.csv");
  ASSERT_EQ(windows.size(), 2u);
  EXPECT_EQ(windows[0].run, 1);
  EXPECT_EQ(windows[1].run, 2);
  EXPECT_EQ(windows[0].mark, "steady");
  EXPECT_EQ(windows[0].steps, 1379);  // the end mark's step count
  EXPECT_EQ(windows[1].steps, 1379);
  double windows_s = 0.0;  // the run as it ran: its windows' summed length
  for (const AppWindow& w : windows) windows_s += (w.window.end_us - w.window.start_us) * 1e-6;
  EXPECT_TRUE(testing::FileExists(r.dir + "/marks/gemm.run1.txt"));
  EXPECT_TRUE(testing::FileExists(r.dir + "/marks/gemm.run2.txt"));
  EXPECT_EQ(testing::ReadFile(r.dir + "/ncu/gemm.csv"), testing::ReadFile(r.page));
  // The counters run profiles only the marked windows' kernels (their NVTX range), clocks as they are.
  const std::string args = testing::ReadFile(r.args);
  EXPECT_NE(args.find("--csv --page raw --clock-control none --target-processes all --metrics "),
            std::string::npos)
      << args;
  EXPECT_NE(args.find("--nvtx --nvtx-include steady/ --log-file"), std::string::npos) << args;
  EXPECT_NE(args.find(" sh -c "), std::string::npos) << args;
  const std::vector<std::string> power = Lines(testing::ReadFile(r.dir + "/nvml_power.csv"));
  EXPECT_EQ(
      power[0],
      "timestamp_us,power_mw,power_instant_mw,energy_mj,sm_clock_mhz,mem_clock_mhz,temperature_c,"
      "clocks_event_reasons,power_limit_mw");
  EXPECT_GT(power.size(), 300u);
  const nlohmann::json j = nlohmann::json::parse(testing::ReadFile(r.dir + "/capture.json"));
  EXPECT_EQ(j["kind"], "apps");
  EXPECT_EQ(j["gpu"]["uuid"], FakeGpu().gpu_uuid);
  ASSERT_EQ(j["recordings"].size(), 1u);
  EXPECT_EQ(j["recordings"][0]["runs"], nlohmann::json::array({1, 2}));
  EXPECT_EQ(j["recordings"][0]["nvtx_range"], "steady");
  EXPECT_EQ(j["recordings"][0]["command"][0], "sh");
  EXPECT_FALSE(progress.empty());
  EXPECT_NE(progress.front().find("[1/2] gemm"), std::string::npos) << progress.front();

  // A second program, unmarked (its whole run is the window), added to the same directory.
  testing::WriteFile(r.page, NcuRawPage(DescriptionMetrics(kH100), 2, 7));
  AppCaptureOptions idle = Options(r, "idle_app", {"sleep", "0.7"});
  idle.counters = true;
  const size_t samples_before = power.size();
  const std::vector<WindowRecord> second = RunAppCapture(idle, FakeGpu(), meter, log);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_NEAR((second[0].end_us - second[0].start_us) * 1e-6, 0.7, 0.15);
  EXPECT_EQ(ReadAppWindows(r.dir + "/windows.csv").size(), 3u);
  const std::vector<std::string> power2 = Lines(testing::ReadFile(r.dir + "/nvml_power.csv"));
  EXPECT_GT(power2.size(), samples_before + 200);
  for (size_t i = 0; i < samples_before; ++i) ASSERT_EQ(power2[i], power[i]);  // nothing truncated
  EXPECT_EQ(std::count(power2.begin(), power2.end(), power[0]), 1);            // one header
  EXPECT_EQ(testing::ReadFile(r.args).find("--nvtx"), std::string::npos);  // unmarked: every kernel
  EXPECT_EQ(nlohmann::json::parse(testing::ReadFile(r.dir + "/capture.json"))["recordings"].size(),
            2u);
  for (const auto& entry : fs::recursive_directory_iterator(r.dir)) {
    EXPECT_EQ(entry.path().filename().string().find(".partial"), std::string::npos) << entry.path();
  }

  // Predicted from the counters, with and then without the power log.
  const std::string scratch = fs::path(r.dir).parent_path().string();
  const std::string model = WriteTestModel(scratch + "/model.json");
  const testing::CommandResult with_power = testing::RunStage(
      "wattcal-predict", {"--model", model, "--capture", r.dir, "--gpu", kH100, "--out",
                          scratch + "/apps.csv", "--breakdown-out", scratch + "/breakdown.csv"});
  ASSERT_EQ(with_power.exit_code, 0) << with_power.output;
  EXPECT_NE(with_power.output.find("2 workloads predicted at 1980 MHz (board limit 700 W)"),
            std::string::npos)
      << with_power.output;
  const auto rows = Rows(scratch + "/apps.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("workload"), "gemm");
  EXPECT_EQ(rows[0].at("windows"), "2");
  EXPECT_NEAR(std::stod(rows[0].at("measured_w")), LoadFileMeter::kLoadW,
              0.03 * LoadFileMeter::kLoadW);
  EXPECT_EQ(rows[1].at("workload"), "idle_app");
  EXPECT_NEAR(std::stod(rows[1].at("measured_w")), LoadFileMeter::kIdleW,
              0.03 * LoadFileMeter::kIdleW);
  // kernel_time_s = the export's summed gpu__time_duration (1.5 + 3.0 + 4.5 ms); duration_s = the
  // windows' summed length (the run as it ran), energy_j = predicted W x duration_s.
  EXPECT_NEAR(std::stod(rows[0].at("kernel_time_s")), 0.009, 1e-9);
  EXPECT_NEAR(std::stod(rows[0].at("duration_s")), windows_s, 1e-6);
  const double energy_j = std::stod(rows[0].at("energy_j"));
  EXPECT_NEAR(energy_j, std::stod(rows[0].at("predicted_w")) * windows_s, 1e-4);
  // The measured energy over the whole windows, no settle trim (300 ms of each 0.8 s window
  // would be left out otherwise: 380 W x 1.0 s instead of 380 W x 1.6 s).
  const double measured_energy_j = std::stod(rows[0].at("measured_energy_j"));
  EXPECT_NEAR(measured_energy_j, LoadFileMeter::kLoadW * windows_s,
              0.04 * LoadFileMeter::kLoadW * windows_s);
  EXPECT_NEAR(std::stod(rows[0].at("energy_error_pct")),
              100.0 * (energy_j - measured_energy_j) / measured_energy_j, 1e-3);
  EXPECT_EQ(rows[0].at("steps"), "2758");  // 1379 in each of the two windows
  EXPECT_NEAR(std::stod(rows[0].at("energy_per_step_j")), energy_j / 2758.0, 1e-6);
  EXPECT_EQ(rows[1].at("steps"), "");  // the unmarked run reported none
  EXPECT_EQ(rows[1].at("energy_per_step_j"), "");
  EXPECT_NE(with_power.output.find("(energy MAPE "), std::string::npos) << with_power.output;
  const auto breakdown = Rows(scratch + "/breakdown.csv");
  ASSERT_EQ(breakdown.size(), 2u);
  double sum = 0.0;
  for (const auto& [column, value] : breakdown[0]) {
    if (column != "workload" && column != "predicted_w" && column != "uncapped_w")
      sum += std::stod(value);
  }
  EXPECT_NEAR(sum, std::stod(breakdown[0].at("uncapped_w")), 1e-4);

  // The same predictions as validate --apps-predictions on the ingested table.
  const testing::CommandResult ingest = testing::RunStage(
      "wattcal-ingest", {"--capture", r.dir, "--gpu", kH100, "--tidy", scratch + "/measured.csv"});
  ASSERT_EQ(ingest.exit_code, 0) << ingest.output;
  const testing::CommandResult validate = testing::RunStage(
      "wattcal-validate",
      {"--model", model, "--heldout", scratch + "/measured.csv", "--mode", "fixed",
       "--apps-predictions", scratch + "/validate_apps.csv", "--predictions",
       scratch + "/validate_predictions.csv", "--metrics", scratch + "/validate_metrics.json"});
  ASSERT_EQ(validate.exit_code, 0) << validate.output;
  const auto validated = Rows(scratch + "/validate_apps.csv");
  ASSERT_EQ(validated.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(validated[i].at("workload"), rows[i].at("workload"));
    EXPECT_EQ(validated[i].at("predicted_w"), rows[i].at("predicted_w"));
  }

  // --per-workload: one row per application, its power the measured_w of the predictions.
  const testing::CommandResult per = testing::RunStage(
      "wattcal-ingest",
      {"--capture", r.dir, "--gpu", kH100, "--per-workload", "--tidy", scratch + "/per.csv"});
  ASSERT_EQ(per.exit_code, 0) << per.output;
  const Corpus per_workload = ReadCorpus(scratch + "/per.csv");
  ASSERT_EQ(per_workload.rows(), 2);
  EXPECT_EQ(ReadCorpus(scratch + "/measured.csv").rows(), 3);  // one per window without it
  ASSERT_TRUE(per_workload.has_energy());
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(per_workload.benchmark[i], rows[i].at("workload"));
    EXPECT_NEAR(per_workload.power_w(i), std::stod(rows[i].at("measured_w")), 1e-5);
    EXPECT_NEAR(per_workload.duration_s[i], std::stod(rows[i].at("duration_s")), 1e-5);
    EXPECT_NEAR(per_workload.energy_j[i], std::stod(rows[i].at("measured_energy_j")), 1e-4);
  }
  // validate on it: the energy error per row and the energy MAPE, as predict gives them.
  const testing::CommandResult energy = testing::RunStage(
      "wattcal-validate",
      {"--model", model, "--heldout", scratch + "/per.csv", "--mode", "fixed", "--predictions",
       scratch + "/per_predictions.csv", "--metrics", scratch + "/per_metrics.json", "--summary-md",
       scratch + "/per_summary.md"});
  ASSERT_EQ(energy.exit_code, 0) << energy.output;
  const auto scored = Rows(scratch + "/per_predictions.csv");
  ASSERT_EQ(scored.size(), 2u);
  double sum_ape = 0.0;
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_NEAR(std::stod(scored[i].at("energy_error_pct")),
                std::stod(rows[i].at("energy_error_pct")), 1e-3);
    sum_ape += std::fabs(std::stod(rows[i].at("energy_error_pct")));
  }
  const nlohmann::json metrics =
      nlohmann::json::parse(testing::ReadFile(scratch + "/per_metrics.json"));
  ASSERT_TRUE(metrics.contains("energy")) << metrics.dump();
  EXPECT_EQ(metrics["energy"]["points"], 2);
  EXPECT_NEAR(metrics["energy"]["mape_pct"].get<double>(), sum_ape / 2.0, 1e-3);
  EXPECT_NE(
      testing::ReadFile(scratch + "/per_summary.md").find("Energy over the windows as they ran"),
      std::string::npos);

  // Without the power log: the same predictions, nothing measured.
  fs::rename(r.dir + "/nvml_power.csv", scratch + "/nvml_power.csv");
  const testing::CommandResult without = testing::RunStage(
      "wattcal-predict",
      {"--model", model, "--capture", r.dir, "--gpu", kH100, "--out", scratch + "/apps_np.csv"});
  ASSERT_EQ(without.exit_code, 0) << without.output;
  EXPECT_NE(without.output.find("none measured (no power log)"), std::string::npos)
      << without.output;
  const auto unmeasured = Rows(scratch + "/apps_np.csv");
  ASSERT_EQ(unmeasured.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(unmeasured[i].at("predicted_w"), rows[i].at("predicted_w"));
    EXPECT_EQ(unmeasured[i].at("energy_j"), rows[i].at("energy_j"));
    EXPECT_EQ(unmeasured[i].at("duration_s"), rows[i].at("duration_s"));  // no log needed
    EXPECT_EQ(unmeasured[i].at("steps"), rows[i].at("steps"));
    EXPECT_EQ(unmeasured[i].at("measured_w"), "");
    EXPECT_EQ(unmeasured[i].at("error_pct"), "");
    EXPECT_EQ(unmeasured[i].at("measured_energy_j"), "");
    EXPECT_EQ(unmeasured[i].at("energy_error_pct"), "");
  }
  // The recording refuses --counters again for a workload that has its export.
  testing::WriteFile(r.page, NcuRawPage(DescriptionMetrics(kH100), 1, 3));
  try {
    RunAppCapture(o, FakeGpu(), meter, log);
    ADD_FAILURE() << "a second --counters for gemm was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("ncu/gemm.csv exists already"), std::string::npos)
        << e.what();
  }
}

TEST(AppCapture, AFailedRecordingLeavesTheDirectoryAsItWas) {
  const Recorded r = NewRecording();
  LoadFileMeter meter(r.load);
  // Into a new directory: nothing at all is left.
  ExpectRefusedRecording(Options(r, "fails", {"sh", "-c", "exit 3"}), FakeGpu(),
                         {"run 1 of 'fails': the command exited with status 3"});
  EXPECT_FALSE(fs::exists(r.dir));
  ExpectRefusedRecording(Options(r, "nosuch", {"/no/such/program"}), FakeGpu(),
                         {"/no/such/program"});
  ExpectRefusedRecording(
      Options(r, "unmatched",
              {"sh", "-c", "echo \"end steady $(date +%s%N)\" >> \"$WATTCAL_MARKS\""}),
      FakeGpu(), {"marks/unmatched.run1.txt:1", "unmatched end"});
  EXPECT_FALSE(fs::exists(r.dir));
  // A step count of zero on the end mark is refused by name, and leaves nothing.
  ExpectRefusedRecording(Options(r, "nosteps", MarkedProgram(r.load, 1, 0.2, "steady", "0")),
                         FakeGpu(), {"marks/nosteps.run1.txt:2", "a step count of zero"});
  EXPECT_FALSE(fs::exists(r.dir));

  // Into an existing capture: its files are untouched.
  AppCaptureOptions ok = Options(r, "first", {"sleep", "0.3"});
  RunAppCapture(ok, FakeGpu(), meter, nullptr);
  ExpectRefusedRecording(Options(r, "fails", {"sh", "-c", "sleep 0.1; exit 4"}), FakeGpu(),
                         {"exited with status 4"});
  ExpectRefusedRecording(Options(r, "nosteps", MarkedProgram(r.load, 1, 0.2, "steady", "0")),
                         FakeGpu(), {"marks/nosteps.run1.txt:2", "a step count of zero"});
  ExpectRefusedRecording(Options(r, "badsteps", MarkedProgram(r.load, 1, 0.2, "steady", "-3")),
                         FakeGpu(), {"marks/badsteps.run1.txt:2", "'-3' is not a step count"});
  std::vector<std::string> two_names = MarkedProgram(r.load, 1, 0.2, "prefill");
  two_names[2] += MarkedProgram(r.load, 1, 0.2, "decode")[2];
  ExpectRefusedRecording(Options(r, "two", two_names), FakeGpu(),
                         {"marks 2 different windows ('decode', 'prefill')", "--window"});
  AppCaptureOptions only = Options(r, "two", two_names);
  only.window = "missing";
  ExpectRefusedRecording(only, FakeGpu(), {"no window named 'missing'"});
  ExpectRefusedRecording(
      Options(r, "other_gpu", {"true"}), FakeGpu("GPU-bbbbbbbb-1111-2222-3333-444444444444"),
      {"recorded on NVIDIA H100 80GB HBM3 (GPU-aaaaaaaa", "one capture directory holds one GPU"});
  AppCaptureOptions counters = Options(r, "nokernels", {"true"});
  counters.counters = true;
  testing::WriteFile(r.page,
                     "==PROF== Connected to process 1\n==WARNING== No kernels were profiled.\n");
  // ncu's own messages come with the error: the scratch log that held them goes with the failed
  // recording (seen on the H100: the error named a file that no longer existed).
  ExpectRefusedRecording(counters, FakeGpu(),
                         {"ncu profiled no kernel of 'nokernels'",
                          "ncu's last messages:", "==WARNING== No kernels were profiled."});
  // --window picks one of two names, and the counters follow that range.
  only.window = "decode";
  EXPECT_EQ(RunAppCapture(only, FakeGpu(), meter, nullptr).size(), 1u);
  EXPECT_EQ(ReadAppWindows(r.dir + "/windows.csv").back().mark, "decode");

  // A suite capture, and a directory that is no capture, are refused.
  const std::string suite = fs::path(r.dir).parent_path().string() + "/suite";
  fs::create_directories(suite);
  testing::WriteFile(suite + "/capture.json", "{\"format\": \"wattcal-capture\", \"gpu\": {}}\n");
  AppCaptureOptions into_suite = Options(r, "x", {"true"});
  into_suite.out_dir = suite;
  try {
    RunAppCapture(into_suite, FakeGpu(), meter, nullptr);
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("this is a suite capture"), std::string::npos) << e.what();
  }
  into_suite.out_dir = fs::path(r.dir).parent_path().string();  // holds files, no capture.json
  try {
    RunAppCapture(into_suite, FakeGpu(), meter, nullptr);
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("has no capture.json"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------------------------------
// The binary, against the stand-in NVML.

class AppCaptureBinary : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("WATTCAL_NVML_LIBRARY", WATTCAL_FAKE_NVML, 1);
    unsetenv("CUDA_VISIBLE_DEVICES");
  }
  void TearDown() override {
    unsetenv("WATTCAL_NVML_LIBRARY");
    unsetenv("FAKE_NVML_LOAD_FILE");
    unsetenv("FAKE_NVML_UUID");
  }
};

TEST_F(AppCaptureBinary, RecordsIngestsAndPredictsEndToEnd) {
  const Recorded r = NewRecording();
  setenv("FAKE_NVML_LOAD_FILE", r.load.c_str(), 1);
  testing::WriteFile(r.page, NcuRawPage(DescriptionMetrics(kH100), 4, 2));
  std::vector<std::string> args = {
      "--app", "attention",   "--out", r.dir,        "--repeat", "2",   "--gap-ms",
      "200",   "--sample-ms", "2",     "--counters", "--ncu",    r.ncu, "--gpu-description",
      kH100,   "--"};
  const std::vector<std::string> program = MarkedProgram(r.load, 2, 0.7);
  args.insert(args.end(), program.begin(), program.end());
  const testing::CommandResult rec = testing::RunStage("wattcal-capture", args);
  ASSERT_EQ(rec.exit_code, 0) << rec.output;
  EXPECT_NE(rec.output.find("Fake H100 for tests"), std::string::npos) << rec.output;
  EXPECT_NE(rec.output.find("done: 4 windows of 'attention'"), std::string::npos) << rec.output;
  const nlohmann::json j = nlohmann::json::parse(testing::ReadFile(r.dir + "/capture.json"));
  EXPECT_EQ(j["gpu"]["name"], "Fake H100 for tests");
  EXPECT_EQ(j["gpu"]["compute_capability"], "9.0");
  EXPECT_EQ(j["versions"]["driver"], "580.00.fake");

  const std::string scratch = fs::path(r.dir).parent_path().string();
  const std::string model = WriteTestModel(scratch + "/model.json");
  const testing::CommandResult predict = testing::RunStage(
      "wattcal-predict",
      {"--model", model, "--capture", r.dir, "--gpu", kH100, "--out", scratch + "/apps.csv"});
  ASSERT_EQ(predict.exit_code, 0) << predict.output;
  const auto rows = Rows(scratch + "/apps.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].at("windows"), "4");
  EXPECT_NEAR(std::stod(rows[0].at("measured_w")), 380.0,
              0.03 * 380.0);  // the stand-in's 80 + 300 W

  // Another GPU into the same directory is refused; so are suite options and a missing command.
  setenv("FAKE_NVML_UUID", "GPU-99999999-1111-2222-3333-444444444444", 1);
  const testing::CommandResult other = testing::RunStage(
      "wattcal-capture", {"--app", "x", "--out", r.dir, "--gap-ms", "0", "--", "true"});
  EXPECT_EQ(other.exit_code, 3) << other.output;
  EXPECT_NE(other.output.find("one capture directory holds one GPU"), std::string::npos)
      << other.output;
  unsetenv("FAKE_NVML_UUID");
  const testing::CommandResult suite_flag = testing::RunStage(
      "wattcal-capture", {"--app", "x", "--out", r.dir, "--seconds", "3", "--", "true"});
  EXPECT_EQ(suite_flag.exit_code, 1) << suite_flag.output;
  EXPECT_NE(
      suite_flag.output.find("--app records a program, not the suite: --seconds does not apply"),
      std::string::npos)
      << suite_flag.output;
  const testing::CommandResult no_command =
      testing::RunStage("wattcal-capture", {"--app", "x", "--out", r.dir});
  EXPECT_EQ(no_command.exit_code, 1) << no_command.output;
  EXPECT_NE(no_command.output.find("give the command to record after --"), std::string::npos)
      << no_command.output;
  const testing::CommandResult stray =
      testing::RunStage("wattcal-capture", {"--out", r.dir, "--", "true"});
  EXPECT_EQ(stray.exit_code, 1) << stray.output;
  EXPECT_NE(stray.output.find("goes with --app NAME"), std::string::npos) << stray.output;
  // A marks file with an unmatched end: exit 2 naming its line, nothing written.
  const std::string fresh = scratch + "/fresh";
  const testing::CommandResult bad = testing::RunStage(
      "wattcal-capture", {"--app", "bad", "--out", fresh, "--gap-ms", "0", "--", "sh", "-c",
                          "echo \"end steady $(date +%s%N)\" >> \"$WATTCAL_MARKS\""});
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("marks/bad.run1.txt:1"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("unmatched end"), std::string::npos) << bad.output;
  EXPECT_FALSE(fs::exists(fresh));
  // The suite refuses an existing capture directory.
  const testing::CommandResult suite =
      testing::RunStage("wattcal-capture", {"--out", r.dir, "--only", "fp32_fma"});
  EXPECT_EQ(suite.exit_code, 1) << suite.output;
  EXPECT_NE(suite.output.find("not empty"), std::string::npos) << suite.output;
}

TEST_F(AppCaptureBinary, NoNvmlIsAClearError) {
  setenv("WATTCAL_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  const std::string dir = testing::ScratchDir() + "/apps";
  const testing::CommandResult r =
      testing::RunStage("wattcal-capture", {"--app", "x", "--out", dir, "--", "true"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("NVML is not available"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir));
}

// ---------------------------------------------------------------------------------------
// Predicting a capture: bad input gets a clear error and leaves nothing.

TEST(PredictCapture, BadCapturesAreClearErrorsAndLeaveNothing) {
  const std::string scratch = testing::ScratchDir();
  const std::string model = WriteTestModel(scratch + "/model.json");
  const std::string apps = scratch + "/apps";
  fs::create_directories(apps + "/ncu");
  testing::WriteFile(apps + "/windows.csv",
                     "kernel,start_us,end_us,run,mark\ngemm,1000000,2000000,1,\n");
  const std::string out = scratch + "/out.csv";
  auto predict = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"--model", model, "--capture", apps,
                                     "--gpu",   kH100, "--out",     out};
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::RunStage("wattcal-predict", args);
  };
  fs::remove(apps + "/ncu");
  testing::CommandResult r = predict({});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no counters: a capture needs ncu_raw.csv"), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(out));
  fs::create_directories(apps + "/ncu");
  testing::WriteFile(apps + "/ncu/gemm.csv",
                     "==PROF== Connected to process 1\n==WARNING== No kernels were profiled.\n");
  r = predict({});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(apps + "/ncu/gemm.csv"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("gemm.csv:2: Nsight Compute profiled no kernels"), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(out));
  testing::WriteFile(apps + "/ncu/other.csv", NcuRawPage(DescriptionMetrics(kH100), 1, 1));
  fs::remove(apps + "/ncu/gemm.csv");
  r = predict({});
  testing::ExpectRefused(r, 2, {"windows.csv:2: kernel: no counters for workload 'gemm'"}, {out});
  // Options: --capture without --gpu, with --activity, and --breakdown (its own flag is --breakdown-out).
  r = testing::RunStage("wattcal-predict", {"--model", model, "--capture", apps, "--out", out});
  testing::ExpectRefused(r, 1, {"--capture needs --gpu"}, {out});
  r = predict({"--breakdown"});
  testing::ExpectRefused(r, 1, {"use --breakdown-out FILE"}, {out});
  // An output inside the capture that names one of its inputs, at any depth, is refused.
  testing::WriteFile(apps + "/ncu/gemm.csv", NcuRawPage(DescriptionMetrics(kH100), 1, 1));
  const std::string export_copy = testing::ReadFile(apps + "/ncu/gemm.csv");
  r = testing::RunStage("wattcal-predict", {"--model", model, "--capture", apps, "--gpu", kH100,
                                            "--out", apps + "/ncu/gemm.csv"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("is the same file as input"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(inside --capture)"), std::string::npos) << r.output;
  EXPECT_EQ(testing::ReadFile(apps + "/ncu/gemm.csv"), export_copy);
  // A windows.csv whose steps are zero or not a whole number: refused by line and column.
  for (const char* steps : {"0", "2.5", "-1"}) {
    testing::WriteFile(
        apps + "/windows.csv",
        std::string("kernel,start_us,end_us,run,mark,steps\ngemm,1000000,2000000,1,,") + steps +
            "\n");
    r = predict({});
    testing::ExpectRefused(r, 2, {"windows.csv:2", "steps", "expected a whole number >= 1"}, {out});
  }
}

}  // namespace
}  // namespace wattcal

namespace wattcal {
namespace {

// Counters alone (ingest --activity): a kernel launched with two grid sizes is summed, not refused;
// joined to windows by name, it is still refused, with advice that names no internal function.
TEST(PredictCapture, ActivityOfAKernelLaunchedWithTwoGridSizes) {
  const std::string dir = testing::ScratchDir();
  const std::string page =
      testing::WriteFile(dir + "/app.csv", NcuRawPage(DescriptionMetrics(kH100), 4, 1));
  testing::CommandResult r = testing::RunStage(
      "wattcal-ingest", {"--counters", page, "--gpu", kH100, "--activity", dir + "/activity.csv"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(
      r.output.find("gemm_kernel_0(float*, int): 2 launches in 2 launch configurations summed"),
      std::string::npos)
      << r.output;
  const Corpus activity = ReadCorpus(dir + "/activity.csv");
  ASSERT_EQ(activity.rows(), 2);
  // The summed kernel's utilisations are its launches' counts over their summed time and
  // cycles: its two launches (rows 0 and 2 of the page, 1.5 and 4.5 ms, cycles in the same 1:3
  // ratio) read alone, weighted 1:3.
  const std::vector<std::string> lines = Lines(testing::ReadFile(page));
  std::vector<Corpus> alone;
  for (int row : {0, 2}) {
    const std::string one =
        testing::WriteFile(dir + fmt::format("/launch{}.csv", row),
                           lines[1] + "\n" + lines[2] + "\n" + lines[3 + row] + "\n");
    const testing::CommandResult a = testing::RunStage(
        "wattcal-ingest",
        {"--counters", one, "--gpu", kH100, "--activity", dir + fmt::format("/a{}.csv", row)});
    ASSERT_EQ(a.exit_code, 0) << a.output;
    alone.push_back(ReadCorpus(dir + fmt::format("/a{}.csv", row)));
  }
  ASSERT_EQ(activity.benchmark[0], "gemm_kernel_0(float*, int)");
  for (int c = 0; c < activity.util_frac.cols(); ++c) {
    const double expected = (alone[0].util_frac(0, c) + 3.0 * alone[1].util_frac(0, c)) / 4.0;
    EXPECT_NEAR(activity.util_frac(0, c), expected, 1e-6 * std::max(1.0, expected)) << c;
  }
  const std::string windows = testing::WriteFile(
      dir + "/windows.csv", "kernel,start_us,end_us\ngemm_kernel_0,1000000,2000000\n");
  const std::string log =
      testing::WriteFile(dir + "/power.csv",
                         "timestamp_us,power_mw,sm_clock_mhz,mem_clock_mhz\n900000,100000,1980,"
                         "2619\n2100000,100000,1980,2619\n");
  r = testing::RunStage("wattcal-ingest",
                        {"--power-log", log, "--windows", windows, "--counters", page, "--gpu",
                         kH100, "--out", dir + "/k.csv", "--tidy", dir + "/t.csv"});
  testing::ExpectRefused(r, 2, {"runs with grid (396, 1, 1)"}, {dir + "/k.csv", dir + "/t.csv"});
  EXPECT_NE(r.output.find("one ncu/<workload>.csv per workload"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("ReadCounterLaunches"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace wattcal
