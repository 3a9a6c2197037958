// A run folder's files as its stages recorded them: wattcal-report reads the provenance records
// (util/output.h: one per stage run, each listing its outputs with their role and their path
// relative to the run folder) instead of guessing files by their names.
//
//   RunFiles files = ReadRunFiles("reports/h100");   // InputError for a folder without provenance
//   for (const StageRun& run : files.runs)
//     if (run.stage == "validate") ... run.Output("predictions") ...
//
// A file that no record lists (a stray copy, a file left by hand) is not part of the run.
#pragma once

#include <string>
#include <vector>

namespace wattcal {

// One output of a stage run, where it is now.
struct RunOutput {
  std::string path;      // the file (the run folder joined with run_path, else the path as written)
  std::string run_path;  // relative to the run folder, as recorded ("" in records from before it)
  std::string role;      // as recorded ("predictions", "metrics", "model", ...; "" when none)
};

// One stage run: its provenance record and the outputs of it that still exist.
struct StageRun {
  std::string provenance;  // the record's file
  std::string stage;       // "calibrate", "validate", ...
  std::vector<RunOutput> outputs;

  // The first output with `role` (validate's records from before roles: by the file's
  // extension, .csv predictions, .json metrics, .md summary); nullptr when none.
  const RunOutput* Output(const std::string& role) const;
};

struct RunFiles {
  // Every stage run of the folder but wattcal-report's own, in the order of their records' paths:
  // the records of RUN/provenance/ (any depth), then those of provenance/ folders of its
  // sub-folders (stages run there without --run-dir), down to two folders below RUN.
  std::vector<StageRun> runs;
  // Outputs a record lists that are gone, and records that do not read.
  std::vector<std::string> notes;

  // Every existing output of every run, in order, each once.
  std::vector<std::string> Files() const;
};

// Reads every provenance record of the run folder `run_dir`. InputError naming the folder when
// it holds none: a folder written by an older wattcal (a .manifest.json beside each file, no
// provenance/) or by hand cannot be reported on by discovery; the message says how to go on.
RunFiles ReadRunFiles(const std::string& run_dir);

// The stage run whose record lists `path` (util/output.h FindProvenanceOf), read like one of
// ReadRunFiles's; false when no record lists it.
bool FindStageRunOf(const std::string& path, StageRun* run);

}  // namespace wattcal
