// What every stage run returns (SPEC.md "Contracts every stage keeps"): its status, the files it
// wrote, and a brief report. Each Run*Stage returns a struct derived from StageSummary, adding
// only what is particular to that stage (the MAPE, the fit's convergence, ...).
#pragma once

#include <string>
#include <vector>

namespace wattcal {

struct StageSummary {
  // The exit status of a run that finished: 0, or 3 (kExitFit) when the run failed its own bar
  // (a fit that did not converge, a MAPE above --max-mape-pct, ...), its outputs written either
  // way. Refusals are not returned: they throw OptionError (1) or InputError (2).
  int exit_code = 0;
  // What the main prints to stdout; empty for the stages that log to stderr only.
  std::string summary;
  // The brief report the stage logged at info level once it finished (ingest's terminal summary,
  // check's table, ...); empty for a stage that logs as it goes.
  std::string brief;
  // The files the run wrote, in the order written, without their provenance records.
  std::vector<std::string> written;
};

}  // namespace wattcal
