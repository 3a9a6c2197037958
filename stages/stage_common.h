// What every stage's main shares: option groups, verbosity, and the mapping of
// outcomes to exit codes (STYLE.md house rule 6).
#pragma once

#include <functional>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "accelwattch/scaling_fit.h"
#include "fit/calibrate.h"
#include "io/corpus_io.h"
#include "stage/sweep_flags.h"
#include "validate/metrics.h"

namespace wattcal {

// The command-line form of CalibrationOptions, shared by calibrate and validate --cv-folds.
struct CalibrationFlags {
  std::string method = "dvfs";
  std::string solver = "joint";
  std::string loss;      // "" = the method's default (see DefaultLoss)
  std::string residual;  // "" = "absolute"
  double loss_scale_w = 0.0;
  double voltage_min = 0.5;
  double voltage_max = 2.0;
  int max_iterations = 500;
  bool start_from_alternating = true;
  int threads = 1;
  double default_core_mhz = 0.0;
  double default_mem_mhz = 0.0;
  bool keep_flagged = false;
  double power_limit_w = 0.0;
};

// Adds --method, --solver, --loss, --loss-scale, --residual, --voltage-min/max,
// --max-iterations, --start-from-alternating, --threads, --default-core/mem-mhz,
// --keep-flagged and --power-limit-w.
void AddCalibrationOptions(CLI::App* app, CalibrationFlags* flags);

// Turns the flags into checked CalibrationOptions (OptionError names the flag).
CalibrationOptions ToCalibrationOptions(const CalibrationFlags& flags);
CorpusReadOptions ToCorpusReadOptions(const CalibrationFlags& flags);

// The effective options, for manifests and model files.
nlohmann::json CalibrationOptionsToJson(const CalibrationOptions& options);

// The command-line form of AccelWattchFitOptions (calibrate --method accelwattch, validate
// --mode accelwattch --cv loko).
struct AccelWattchFlags {
  std::vector<std::string> bounds;  // "LO:HI" (every component) or "NAME=LO:HI", repeatable
  std::string orderings_path;       // extra orderings, one "A <= B" per line
  bool paper_orderings = true;
  std::string prior_path;           // a wattcal-accelwattch-model file
  double prior_weight = 0.0;
  bool start_from_prior = true;
};

// Adds --bounds, --orderings, --no-paper-orderings, --prior, --prior-weight, --no-prior-start.
void AddAccelWattchOptions(CLI::App* app, AccelWattchFlags* flags);

// True when any accelwattch flag differs from its default (so that other methods can refuse it).
bool AccelWattchFlagsGiven(const AccelWattchFlags& flags);

// Turns the flags into checked options: parses --bounds (OptionError naming the flag and the
// value), reads --orderings and --prior (InputError naming FILE:LINE). `max_iterations` comes
// from --max-iterations.
AccelWattchFitOptions ToAccelWattchFitOptions(const AccelWattchFlags& flags, int max_iterations);

// The effective options and the extra input files (orderings, prior), for manifests.
nlohmann::json AccelWattchFitOptionsToJson(const AccelWattchFitOptions& options,
                                           const AccelWattchFlags& flags);
std::vector<std::string> AccelWattchInputFiles(const AccelWattchFlags& flags);

// Adds --mape-ci student-t|normal-population-sd to `app` (the MAPE confidence interval).
void AddMapeCiOption(CLI::App* app, std::string* method);
MetricsOptions ToMetricsOptions(const std::string& mape_ci);

// Binds --sweep, --description, --constant or --p-const-w (excluding each other), and --out to
// `flags` (pipeline/stage/sweep_flags.h: the inputs of wattcal-static and wattcal-idle).
void AddSweepWithConstantOptions(CLI::App* app, SweepWithConstantFlags* flags);

// Marks an option as a file the stage writes: `app.add_option("--out", path)->check(OutputFile())`.
// RunStageMain refuses, before the stage reads anything, an output (or its OUT.manifest.json)
// that is the same file as an input (an option checked CLI::ExistingFile / ExistingDirectory /
// ExistingPath, or a file inside such a directory), or the same path as another output.
CLI::Validator OutputFile();

// The check RunStageMain runs after parsing (exposed for tests): registers every input file
// (util/output.h RegisterInputFile), refuses the same file given twice to one repeatable input
// option, an output that is an input, and two outputs that are one path. OptionError.
void CheckOutputsAgainstInputs(CLI::App* app);

// Adds --quiet / --verbose to `app`.
void AddLoggingOptions(CLI::App* app);

// Parses argv, checks outputs against inputs (CheckOutputsAgainstInputs), runs `body`, and maps
// the outcome to an exit code: CLI parse errors and OptionError -> 1, InputError -> 2,
// FitError -> 3.
int RunStageMain(CLI::App* app, int argc, char** argv, const std::function<int()>& body);

}  // namespace wattcal
