// The front door as one library call: `wattcal <stage> ...` runs wattcal-<stage> from the same
// folder; `wattcal`, `wattcal --help` and an unknown stage print the list of stages.
#pragma once

#include <string>
#include <vector>

namespace wattcal {

struct WattcalStageOptions {
  // The folder of the wattcal-<stage> executables (the front door's own).
  std::string program_dir = ".";
  // The command line after `wattcal`: the stage, then its arguments.
  std::vector<std::string> args;

  // Nothing to refuse (an unknown stage is the report's error, with the list of stages).
  void Check() const {}
};

struct WattcalStageReport {
  // 0 for --help; 1 without arguments or for an unknown stage. Unused when `program` is set.
  int exit_code = 0;
  // What the front door prints to stdout: the list of stages (empty when a stage runs).
  std::string summary;
  // What it prints to stderr first: "error: unknown stage 'X'\n\n", or nothing.
  std::string error;
  // The executable to run in its place, and its argv (argv[0] = "wattcal-<stage>"); empty when
  // nothing is to run.
  std::string program;
  std::vector<std::string> argv;
};

WattcalStageReport RunWattcalStage(const WattcalStageOptions& options);

// The folder of the running executable (/proc/self/exe), "." when it cannot be read.
std::string ExecutableDir();

}  // namespace wattcal
