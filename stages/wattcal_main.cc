// wattcal: the front door. `wattcal <stage> ...` runs wattcal-<stage> from the same folder;
// `wattcal` (exit 1), `wattcal --help` (exit 0) and an unknown stage (exit 1) list the stages.
//
//   wattcal <stage> [options]
//   wattcal <stage> --help
//
// No CLI11 here: every argument after the stage belongs to the stage.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "usecases/wattcal_stage.h"

using namespace wattcal;

int main(int argc, char** argv) {
  WattcalStageOptions o;
  o.program_dir = ExecutableDir();
  o.args.assign(argv + 1, argv + argc);
  const WattcalStageReport r = RunWattcalStage(o);
  std::cerr << r.error;
  std::cout << r.summary;
  if (r.program.empty()) return r.exit_code;
  std::vector<char*> args;
  for (const std::string& a : r.argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::cout.flush();
  execv(r.program.c_str(), args.data());
  std::perror(("cannot run " + r.program).c_str());
  return 1;
}
