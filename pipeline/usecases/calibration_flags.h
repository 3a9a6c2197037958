// The command-line forms of the calibration options shared by wattcal-calibrate and
// wattcal-validate, and their pure conversions to the library's options (no CLI11 here: the
// bindings, AddCalibrationOptions / AddAccelWattchOptions / AddMapeCiOption, are in
// stages/stage_common.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "accelwattch/scaling_fit.h"
#include "fit/calibrate.h"
#include "io/corpus_io.h"
#include "validate/metrics.h"

namespace wattcal {

// --method of calibrate (and of validate's --cv-folds folds): the library's two methods, auto
// (fixed when the training rows hold one V-F pair, else dvfs: AutoFitMethod) and accelwattch
// (calibrate only: AccelWattch's scaling factors, MICRO'21 Eq. 14).
enum class CalibrationMethod { kDvfs, kFixed, kAuto, kAccelWattch };
// "dvfs" | "fixed" | "auto" | "accelwattch", the names --method takes.
const char* CalibrationMethodName(CalibrationMethod method);
// Every method, in the order --help lists them.
const std::vector<CalibrationMethod>& CalibrationMethods();
// The --method naming a library method.
CalibrationMethod ToCalibrationMethod(FitMethod method);

// The calibration options of the command line, shared by calibrate and validate --cv-folds:
// the library's options themselves, each flag bound to its field, and the two choices that
// are resolved later (the method, which may be auto; the loss, whose default follows it).
struct CalibrationFlags {
  // --method.
  CalibrationMethod method = CalibrationMethod::kDvfs;
  // --loss; unset: DefaultLoss(method, solver).
  std::optional<FitLoss> loss;
  // --solver, --residual, --loss-scale, --voltage-min, --voltage-max, --max-iterations,
  // --start-from-alternating (--cold-start-only), --threads, --keep-flagged, --power-limit-w;
  // `method` and `loss` are set from the fields above by ToCalibrationOptions.
  CalibrationOptions options;
  // --default-core-mhz, --default-mem-mhz (tidy inputs).
  CorpusReadOptions corpus;
};

// Sets options->method to `method` and options->loss to what follows from it: --loss when given,
// else DefaultLoss(method, solver). (--method auto is resolved this way once it has picked.)
void SetFitMethod(const CalibrationFlags& flags, FitMethod method, CalibrationOptions* options);
// The same with the --loss given (unset: the method's default).
void SetFitMethod(const std::optional<FitLoss>& loss, FitMethod method,
                  CalibrationOptions* options);
// The checked CalibrationOptions of `flags` for the library method `method` (OptionError names
// the field): the loss is --loss when given, else DefaultLoss(method, solver).
CalibrationOptions ToCalibrationOptions(const CalibrationFlags& flags, FitMethod method);
// The same for flags.method: fixed, else dvfs (auto is checked as dvfs until it is resolved);
// --method accelwattch is refused (OptionError: it takes a component table).
CalibrationOptions ToCalibrationOptions(const CalibrationFlags& flags);
// flags.corpus, checked (OptionError).
CorpusReadOptions ToCorpusReadOptions(const CalibrationFlags& flags);

// The effective options, for manifests and model files.
void to_json(nlohmann::json& j, const CalibrationOptions& options);

// The command-line form of AccelWattchFitOptions (calibrate --method accelwattch, validate
// --mode accelwattch --cv loko).
struct AccelWattchFlags {
  std::vector<std::string> bounds;  // "LO:HI" (every component) or "NAME=LO:HI", repeatable
  std::string orderings_path;       // extra orderings, one "A <= B" per line
  bool paper_orderings = true;
  std::string prior_path;  // a wattcal-accelwattch-model file
  double prior_weight = 0.0;
  bool start_from_prior = true;
};

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

}  // namespace wattcal
