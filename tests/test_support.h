// Helpers shared by the tests: where the real datasets are, scratch directories, and
// running a stage executable as a user would.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace wattcal::testing {

// ../shared/datasets beside the checkout (or $WATTCAL_DATASETS); empty when absent.
std::string DatasetsDir();

// Path of a file under the datasets folder ("" when the folder is absent).
std::string Dataset(const std::string& relative);

// A fresh empty directory for the running test (removed and recreated on each call).
std::string ScratchDir();

// Writes `content` to `path` and returns `path`.
std::string WriteFile(const std::string& path, const std::string& content);
std::string ReadFile(const std::string& path);
bool FileExists(const std::string& path);

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};
// Runs build/bin/<program> with `args` (each shell-quoted) and captures its output.
CommandResult RunStage(const std::string& program, const std::vector<std::string>& args);

// A test seed derived from the running test's name (STYLE.md rule 4).
unsigned SeedFromTestName();

}  // namespace wattcal::testing

// Skips the current test with a clear message when ../shared/datasets is absent.
#define WATTCAL_REQUIRE_DATASETS()                                                          \
  do {                                                                                      \
    if (::wattcal::testing::DatasetsDir().empty())                                          \
      GTEST_SKIP() << "real datasets not found: expected ../shared/datasets beside the "    \
                      "checkout (or set WATTCAL_DATASETS)";                                 \
  } while (0)
