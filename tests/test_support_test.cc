// The test suite's own hygiene (issue 35): a test's scratch folder is removed when it passes, and
// kept and named when it fails or WATTCAL_KEEP_TEST_DIRS=1 (before, every run left its folders in
// /tmp: several GB after a few runs); the scripts the tests run use the Python the build found,
// one with numpy and scipy when the PATH has one (before, a pyenv python3 without numpy ahead of
// /usr/bin on the PATH skipped four tests).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <boost/filesystem.hpp>

#include "test_support.h"

namespace wattcal {
namespace {

namespace fs = boost::filesystem;

// What the tests below run in a child process of this binary, told by WATTCAL_SCRATCH_PROBE:
// "pass" or "fail" writes into its scratch folder, names it, and passes or fails. Without the
// variable (a plain run of the suite) it does nothing.
TEST(ScratchFolders, ProbeForTheTestsBelow) {
  const char* mode = std::getenv("WATTCAL_SCRATCH_PROBE");
  if (mode == nullptr) return;
  const std::string dir = testing::ScratchDir();
  testing::WriteFile(dir + "/output.txt", "written by the probe");
  std::cout << "probe scratch folder: " << dir << "\n";
  if (std::string(mode) == "fail") ADD_FAILURE() << "the probe fails, as asked";
}

struct Probe {
  testing::CommandResult run;
  std::string dir;  // its scratch folder
};

Probe RunProbe(const std::string& mode, bool keep) {
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  Probe p;
  p.run =
      testing::RunShell("env -u WATTCAL_KEEP_TEST_DIRS WATTCAL_SCRATCH_PROBE=" + mode +
                        (keep ? " WATTCAL_KEEP_TEST_DIRS=1 " : " ") + testing::ShellQuote(self) +
                        " --gtest_filter=ScratchFolders.ProbeForTheTestsBelow");
  const std::string mark = "probe scratch folder: ";
  const size_t at = p.run.output.find(mark);
  if (at != std::string::npos) {
    const size_t from = at + mark.size();
    p.dir = p.run.output.substr(from, p.run.output.find('\n', from) - from);
  }
  return p;
}

TEST(ScratchFolders, RemovedWhenTheTestPassesKeptAndNamedWhenItFails) {
  const Probe passed = RunProbe("pass", false);
  ASSERT_EQ(passed.run.exit_code, 0) << passed.run.output;
  ASSERT_FALSE(passed.dir.empty()) << passed.run.output;
  EXPECT_FALSE(testing::FileExists(passed.dir)) << passed.dir << " was left behind";
  EXPECT_EQ(passed.run.output.find("scratch folder kept"), std::string::npos) << passed.run.output;

  const Probe failed = RunProbe("fail", false);
  EXPECT_EQ(failed.run.exit_code, 1) << failed.run.output;
  ASSERT_FALSE(failed.dir.empty()) << failed.run.output;
  EXPECT_EQ(testing::ReadFile(failed.dir + "/output.txt"), "written by the probe");
  // Named in the failing test's own output, before gtest's verdict on it.
  const size_t named =
      failed.run.output.find("scratch folder kept: " + failed.dir + " (the test failed)");
  EXPECT_NE(named, std::string::npos) << failed.run.output;
  EXPECT_LT(named, failed.run.output.find("[  FAILED  ] ScratchFolders.ProbeForTheTestsBelow"))
      << failed.run.output;

  const Probe kept = RunProbe("pass", true);
  EXPECT_EQ(kept.run.exit_code, 0) << kept.run.output;
  EXPECT_TRUE(testing::FileExists(kept.dir + "/output.txt")) << kept.run.output;
  EXPECT_NE(
      kept.run.output.find("scratch folder kept: " + kept.dir + " (WATTCAL_KEEP_TEST_DIRS=1)"),
      std::string::npos)
      << kept.run.output;
  for (const std::string& dir : {failed.dir, kept.dir}) {
    boost::system::error_code ec;
    if (!dir.empty()) fs::remove_all(dir, ec);
  }
}

// Every python3 on the PATH, in PATH order.
std::vector<std::string> PythonsOnThePath() {
  std::vector<std::string> found;
  std::istringstream path(std::getenv("PATH") != nullptr ? std::getenv("PATH") : "");
  for (std::string dir; std::getline(path, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/python3";
    if (::access(candidate.c_str(), X_OK) == 0) found.push_back(candidate);
  }
  return found;
}

// The Python the tests run scripts with is the one the build found, and it has numpy and scipy
// whenever a python3 on the PATH has them, wherever that one stands on the PATH; Makefile.runs
// gets the same one as $(BIN)/wattcal-python3.
TEST(TestPython, TheScriptsRunWithThePythonTheBuildFound) {
  WATTCAL_NEED(!testing::Python3().empty(),
               "the build found no python3 (scripts/install_deps.sh installs it)");
  std::string with_scipy;
  for (const std::string& p : PythonsOnThePath()) {
    if (testing::RunShell(testing::ShellQuote(p) + " -c 'import numpy, scipy'").exit_code == 0) {
      with_scipy = p;
      break;
    }
  }
  if (!with_scipy.empty()) {
    EXPECT_TRUE(testing::PythonHas("numpy, scipy"))
        << with_scipy << " imports numpy and scipy, but the tests run " << testing::Python3();
  }
  const std::string link = std::string(WATTCAL_BIN_DIR) + "/wattcal-python3";
  ASSERT_TRUE(fs::exists(link)) << link << " (Makefile.runs' PYTHON3) was not made by cmake";
  EXPECT_TRUE(fs::equivalent(link, testing::Python3())) << link << " is not " << testing::Python3();
}

}  // namespace
}  // namespace wattcal
