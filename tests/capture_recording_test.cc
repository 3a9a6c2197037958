// The recording path's contracts (issue 35), one defect each: wattcal-capture --app wrote windows
// its own readers refuse (a window under 1 us, a mark name with a comma, windows that overlap);
// an interrupt in the counters run, or a SIGHUP at any time, left scratch files that made the
// directory unusable; two recordings into one directory shared their scratch files; an existing
// power log cut mid-line, or a garbled windows.csv cell, was appended to or rewritten as its
// numeric prefix; the C++ marks helper's invalid name let the whole run become the window; an
// export lacking a needed metric was kept and then blocked re-recording; one workload mixed
// marked and unmarked recordings; a failed --lock-clocks suite left a partial capture; a marks
// file's error named a file that was gone; the NVML error did not say how to rehearse without a
// GPU.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "app_capture_support.h"
#include "app_runner.h"
#include "ingest/kernel_windows.h"
#include "io/gpu_description.h"
#include "nvml_loader.h"
#include "test_support.h"
#include "util/errors.h"

extern char** environ;

namespace wattcal {
namespace {

namespace fs = std::filesystem;
using namespace capture;
using namespace apps_test;

// A program that writes the marks `lines` (sh, with $t the wall clock in ns at its start and $u
// that 0.3 s later) and exits 0.
std::vector<std::string> MarksWriter(const std::string& lines) {
  return {"sh", "-c", "t=$(date +%s%N); sleep 0.3; u=$(date +%s%N); sleep 0.05; " + lines};
}

TEST(RecordingContracts, WindowsItsReadersRefuseAreRefusedWhereTheyAreWritten) {
  const Recorded r = NewRecording();
  // A window under 1 us: windows.csv would hold begin = end, which ingest and predict refuse.
  ExpectRefusedRecording(
      Options(
          r, "zero",
          MarksWriter(
              "echo \"begin steady $u\" >> \"$WATTCAL_MARKS\"; echo \"end steady $((u + 400))\" >> "
              "\"$WATTCAL_MARKS\"")),
      FakeGpu(),
      {"marks/zero.run1.txt:2", "the window 'steady' begun on line 1 lasts 400 ns: under 1 us"});
  EXPECT_FALSE(fs::exists(r.dir));
  // A name with a comma: a 6-field row of windows.csv.
  ExpectRefusedRecording(Options(r, "comma",
                                 MarksWriter("echo \"begin a,b $t\" >> \"$WATTCAL_MARKS\"; echo "
                                             "\"end a,b $u\" >> \"$WATTCAL_MARKS\"")),
                         FakeGpu(),
                         {"marks/comma.run1.txt:1", "the window name 'a,b' is not one word"});
  // Windows that overlap (a clock that went back): their energy would count twice.
  ExpectRefusedRecording(Options(r, "overlap",
                                 MarksWriter("for b in $t $((t + 1000)); do echo \"begin s $b\"; "
                                             "echo \"end s $u\"; done >> \"$WATTCAL_MARKS\"")),
                         FakeGpu(), {"marks/overlap.run1.txt:3", "must not overlap", "lines 1-2"});
  EXPECT_FALSE(fs::exists(r.dir));
  AppCaptureOptions bad_window = Options(r, "x", {"true"});
  bad_window.window = "a,b";
  std::string error;
  EXPECT_FALSE(bad_window.Check(&error));
  EXPECT_NE(error.find("--window 'a,b'"), std::string::npos) << error;

  // What it writes is what its readers take: ingest's windows reader, and a later recording.
  LoadFileMeter meter(r.load);
  RunAppCapture(Options(r, "ok",
                        MarksWriter("echo \"begin steady $t\" >> \"$WATTCAL_MARKS\"; "
                                    "echo \"end steady $u\" >> \"$WATTCAL_MARKS\"")),
                FakeGpu(), meter, nullptr);
  RunAppCapture(Options(r, "later", {"sleep", "0.2"}), FakeGpu(), meter, nullptr);
  EXPECT_EQ(ReadKernelWindows(r.dir + "/windows.csv").size(), 2u);
}

TEST(RecordingContracts, AFailedRecordingsErrorSaysItsMarksFileIsGone) {
  const Recorded r = NewRecording();
  ExpectRefusedRecording(
      Options(r, "unmatched", MarksWriter("echo \"end steady $u\" >> \"$WATTCAL_MARKS\"")),
      FakeGpu(),
      {"marks/unmatched.run1.txt:1", "unmatched end",
       "[unmatched.run1.txt is not kept: a failed recording leaves --out as it was; its line 1 "
       "read 'end steady "});
  EXPECT_FALSE(fs::exists(r.dir));
}

TEST(RecordingContracts, AppendingChecksWhatIsThereFirst) {
  const Recorded r = NewRecording();
  LoadFileMeter meter(r.load);
  RunAppCapture(Options(r, "first", {"sleep", "0.2"}), FakeGpu(), meter, nullptr);
  const std::string power = r.dir + "/nvml_power.csv";
  const std::string windows = r.dir + "/windows.csv";
  const std::string power_bytes = testing::ReadFile(power);
  const std::string windows_bytes = testing::ReadFile(windows);
  const int64_t power_lines = static_cast<int64_t>(Lines(power_bytes).size());

  // A power log cut mid-line: new samples would be glued to it.
  testing::WriteFile(power, power_bytes.substr(0, power_bytes.size() - 4));
  ExpectRefusedRecording(
      Options(r, "second", {"true"}), FakeGpu(),
      {fmt::format("nvml_power.csv:{}", power_lines), "the capture's own file is damaged"});
  testing::WriteFile(power, power_bytes);

  // A garbled cell: never rewritten as its numeric prefix.
  const std::vector<std::string> rows = Lines(windows_bytes);
  const std::string start = rows[1].substr(rows[1].find(',') + 1, 16);
  for (const std::string& garbled : {start + "x", start + ".5", "+" + start, start + "e3"}) {
    std::string text = windows_bytes;
    text.replace(text.find(start), start.size(), garbled);
    testing::WriteFile(windows, text);
    ExpectRefusedRecording(Options(r, "second", {"true"}), FakeGpu(),
                           {"windows.csv:2: start_us: '" + garbled + "' is not a whole number",
                            "the capture's own file is damaged"});
  }
  // A row that breaks the rules, and a file cut short.
  testing::WriteFile(windows, windows_bytes + "first,100,100,2,,\n");
  ExpectRefusedRecording(Options(r, "second", {"true"}), FakeGpu(),
                         {"windows.csv:3", "end_us 100 is not after start_us 100"});
  testing::WriteFile(windows, windows_bytes.substr(0, windows_bytes.size() - 1));
  ExpectRefusedRecording(Options(r, "second", {"true"}), FakeGpu(), {"windows.csv:2", "cut short"});
  testing::WriteFile(windows, windows_bytes);

  // Intact again: the recording adds to it.
  EXPECT_EQ(RunAppCapture(Options(r, "second", {"true"}), FakeGpu(), meter, nullptr).size(), 1u);
  EXPECT_EQ(testing::ReadFile(power).substr(0, power_bytes.size()), power_bytes);
}

TEST(RecordingContracts, OneWorkloadIsMarkedOneWay) {
  const Recorded r = NewRecording();
  LoadFileMeter meter(r.load);
  RunAppCapture(Options(r, "gemm", {"sleep", "0.2"}), FakeGpu(), meter, nullptr);
  ExpectRefusedRecording(
      Options(r, "gemm", MarkedProgram(r.load, 1, 0.2)), FakeGpu(),
      {"'gemm': this recording marked windows", "runs of 'gemm' that marked none"});
}

TEST(RecordingContracts, AnExportLackingANeededMetricIsNotKeptAndTheRecordingCanBeRedone) {
  const Recorded r = NewRecording();
  const std::vector<std::string> required = ReadGpuDescription(kH100).RequiredMetrics();
  const std::string lacking = required.back();
  std::vector<std::string> metrics = DescriptionMetrics(kH100);
  metrics.erase(std::find(metrics.begin(), metrics.end(), lacking));
  testing::WriteFile(r.page, NcuRawPage(metrics, 3, 1));
  AppCaptureOptions o = Options(r, "gemm", MarkedProgram(r.load, 1, 0.2));
  o.counters = true;
  ExpectRefusedRecording(
      o, FakeGpu(),
      {"--counters: ncu gave no value for " + lacking + " in any of the 3 launches",
       "not kept and the recording can be made again"});
  EXPECT_FALSE(fs::exists(r.dir));
  // An optional component's metric may be absent (ingest leaves the component out).
  testing::WriteFile(r.page, NcuRawPage(DescriptionMetrics(kH100), 3, 1));
  LoadFileMeter meter(r.load);
  EXPECT_EQ(RunAppCapture(o, FakeGpu(), meter, nullptr).size(), 1u);
  EXPECT_TRUE(testing::FileExists(r.dir + "/ncu/gemm.csv"));
}

TEST(RecordingContracts, TheCppHelpersInvalidNameFailsTheRecording) {
  const Recorded r = NewRecording();
  ExpectRefusedRecording(Options(r, "helper", {WATTCAL_MARKS_PROGRAM, "two words", "0.2"}),
                         FakeGpu(),
                         {"marks/helper.run1.txt:1", "the marks helper refused a mark",
                          "begin: the window name 'two words' is not one word"});
  EXPECT_FALSE(fs::exists(r.dir));
  LoadFileMeter meter(r.load);
  const std::vector<WindowRecord> w = RunAppCapture(
      Options(r, "helper", {WATTCAL_MARKS_PROGRAM, "steady", "0.3"}), FakeGpu(), meter, nullptr);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NEAR((w[0].end_us - w[0].start_us) * 1e-6, 0.3, 0.1);  // the window, not the whole run
  EXPECT_EQ(ReadAppWindows(r.dir + "/windows.csv")[0].mark, "steady");
}

// ---------------------------------------------------------------------------------------
// The binary, against the stand-in NVML, in the background: interrupts and a second recording.

// wattcal-capture started with `args`, its output in `log`.
pid_t StartCapture(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> argv = {std::string(WATTCAL_BIN_DIR) + "/wattcal-capture"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> c_argv;
  for (std::string& a : argv) c_argv.push_back(a.data());
  c_argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults;  // the signals at their default, whatever this process inherited (nohup)
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  EXPECT_EQ(posix_spawn(&pid, c_argv[0], &actions, &attr, c_argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  return pid;
}

// Its exit status (128 + N when signal N ended it).
int Finish(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool WaitFor(const std::function<bool()>& ready, double seconds = 30.0) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

class RecordingBinary : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("WATTCAL_NVML_LIBRARY", WATTCAL_FAKE_NVML, 1);
    unsetenv("CUDA_VISIBLE_DEVICES");
    r_ = NewRecording();
    phase_ = fs::path(r_.dir).parent_path().string() + "/phase";
    fs::create_directories(phase_);
    setenv("PHASE_DIR", phase_.c_str(), 1);
    setenv("PROFILE_S", "0.1", 1);
    testing::WriteFile(r_.page, NcuRawPage(DescriptionMetrics(kH100), 2, 1));
  }
  void TearDown() override {
    for (const char* v : {"WATTCAL_NVML_LIBRARY", "PHASE_DIR", "RUN_S", "PROFILE_S"}) unsetenv(v);
  }
  // --app NAME with counters: a program that marks "running" (or, profiled, "profiling") in the
  // phase folder, then sleeps $RUN_S s (profiled: $PROFILE_S s).
  std::vector<std::string> Args(const std::string& name, double gap_ms) const {
    return {"--app",
            name,
            "--out",
            r_.dir,
            "--gap-ms",
            fmt::format("{}", gap_ms),
            "--sample-ms",
            "2",
            "--counters",
            "--ncu",
            r_.ncu,
            "--gpu-description",
            kH100,
            "--",
            "sh",
            "-c",
            "if [ -n \"$WATTCAL_PROFILING\" ]; then touch \"$PHASE_DIR/profiling\"; exec sleep "
            "\"$PROFILE_S\"; fi; "
            "touch \"$PHASE_DIR/running\"; exec sleep \"$RUN_S\""};
  }
  Recorded r_;
  std::string phase_;
};

TEST_F(RecordingBinary, SigintSigtermAndSighupInEveryPhaseLeaveTheDirectoryAsItWas) {
  struct Case {
    int signal;
    std::string phase;  // "gap", "running" or "profiling"
    bool existing;      // into an existing capture, else a new directory
  };
  const std::vector<Case> cases = {{SIGTERM, "profiling", false}, {SIGINT, "profiling", true},
                                   {SIGHUP, "gap", false},        {SIGHUP, "running", true},
                                   {SIGHUP, "profiling", false},  {SIGTERM, "running", false}};
  const std::string log = phase_ + "/log.txt";
  for (const Case& c : cases) {
    SCOPED_TRACE(fmt::format("{} in the {} phase, {} directory", strsignal(c.signal), c.phase,
                             c.existing ? "an existing" : "a new"));
    fs::remove_all(r_.dir);
    if (c.existing) {
      setenv("RUN_S", "0.2", 1);
      setenv("PROFILE_S", "0.1", 1);
      ASSERT_EQ(Finish(StartCapture(Args("first", 100), log)), 0) << testing::ReadFile(log);
    }
    for (const char* marker : {"running", "profiling"}) fs::remove(phase_ + "/" + marker);
    const auto before = Snapshot(r_.dir);
    setenv("RUN_S", c.phase == "running" ? "30" : "0.2", 1);
    setenv("PROFILE_S", "30", 1);
    const pid_t pid = StartCapture(Args("app", c.phase == "gap" ? 30000 : 100), log);
    ASSERT_TRUE(WaitFor([&] {
      return c.phase == "gap" ? testing::ReadFile(log).find("idle 30.0 s") != std::string::npos
                              : testing::FileExists(phase_ + "/" + c.phase);
    })) << testing::ReadFile(log);
    if (c.phase == "gap") std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const auto sent = std::chrono::steady_clock::now();
    ASSERT_EQ(kill(pid, c.signal), 0);
    const int status = Finish(pid);
    // Passed on to the command (which would sleep 30 s more), not waited out.
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count(), 10.0);
    const std::string output = testing::ReadFile(log);
    EXPECT_EQ(status, 3) << output;
    EXPECT_NE(output.find("interrupted"), std::string::npos) << output;
    EXPECT_NE(output.find("nothing was written: --out " + r_.dir + " is as it was"),
              std::string::npos)
        << output;
    EXPECT_EQ(Snapshot(r_.dir), before);
  }
  // And the directory takes a recording again.
  fs::remove_all(r_.dir);
  setenv("RUN_S", "0.2", 1);
  setenv("PROFILE_S", "0.1", 1);
  EXPECT_EQ(Finish(StartCapture(Args("app", 100), log)), 0) << testing::ReadFile(log);
  EXPECT_EQ(ReadAppWindows(r_.dir + "/windows.csv").size(), 1u);
}

TEST_F(RecordingBinary, ASecondRecordingIntoTheSameDirectoryIsRefused) {
  const std::string log = phase_ + "/log.txt";
  setenv("RUN_S", "0.2", 1);
  ASSERT_EQ(Finish(StartCapture(Args("earlier", 100), log)), 0) << testing::ReadFile(log);
  fs::remove(phase_ + "/running");
  setenv("RUN_S", "1.5", 1);
  const pid_t first = StartCapture(Args("first", 100), log);
  ASSERT_TRUE(WaitFor([&] { return testing::FileExists(phase_ + "/running"); }))
      << testing::ReadFile(log);
  const testing::CommandResult second = testing::RunExecutable(
      "wattcal-capture", {"--app", "second", "--out", r_.dir, "--gap-ms", "0", "--", "true"});
  EXPECT_EQ(second.exit_code, 3) << second.output;
  EXPECT_NE(second.output.find("another wattcal-capture is recording into this directory now"),
            std::string::npos)
      << second.output;
  ASSERT_EQ(Finish(first), 0) << testing::ReadFile(log);
  const std::vector<AppWindow> windows = ReadAppWindows(r_.dir + "/windows.csv");
  ASSERT_EQ(windows.size(), 2u);
  EXPECT_EQ(windows[1].window.kernel, "first");
}

TEST_F(RecordingBinary, AFailedLockClocksSuiteLeavesNothing) {
  const std::string scratch = fs::path(r_.dir).parent_path().string();
  for (const std::string& out : {scratch + "/suite/new", scratch + "/empty"}) {
    fs::create_directories(scratch + "/empty");
    const testing::CommandResult r =
        testing::RunShell("WATTCAL_SIMULATED_GPU=1 " +
                          testing::ShellQuote(std::string(WATTCAL_BIN_DIR) + "/wattcal-capture") +
                          " --out " + testing::ShellQuote(out) +
                          " --only int_add --seconds 0.05 --gap-ms 10 --idle-s 0.05 --launch-ms 1 "
                          "--lock-clocks 1410");
    EXPECT_EQ(r.exit_code, 3) << r.output;
    EXPECT_NE(r.output.find("--lock-clocks 1410: this NVML has no nvmlDeviceSetGpuLockedClocks"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("nothing was kept: --out " + out + " is as it was"), std::string::npos)
        << r.output;
  }
  EXPECT_FALSE(fs::exists(scratch + "/suite"));
  EXPECT_TRUE(fs::is_empty(scratch + "/empty"));
}

TEST(RecordingContracts, TheNvmlErrorSaysHowToRehearseWithoutAGpu) {
  Nvml nvml;
  std::string error;
  EXPECT_FALSE(nvml.Open("", "", &error, "libnvidia-ml-absent-for-this-test.so.1"));
  EXPECT_NE(error.find("NVML is not available"), std::string::npos) << error;
  EXPECT_NE(error.find("WATTCAL_NVML_LIBRARY=build/tests/libfake_nvml.so"), std::string::npos)
      << error;
  EXPECT_NE(error.find("WATTCAL_SIMULATED_GPU=1 for the suite (microbench/README.md, \"Rehearsal "
                       "without a GPU\")"),
            std::string::npos)
      << error;
}

}  // namespace
}  // namespace wattcal
