// What every stage's main shares: option groups, verbosity, and the mapping of
// outcomes to exit codes (STYLE.md house rule 6).
#pragma once

#include <functional>
#include <string>

#include <CLI/CLI.hpp>

namespace wattcal {

// Adds --quiet / --verbose to `app`.
void AddLoggingOptions(CLI::App* app);

// Parses argv, runs `body`, and maps the outcome to an exit code:
// CLI parse errors and OptionError -> 1, InputError -> 2, FitError -> 3.
int RunStageMain(CLI::App* app, int argc, char** argv, const std::function<int()>& body);

}  // namespace wattcal
