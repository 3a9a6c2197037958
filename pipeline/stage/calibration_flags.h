// The command-line forms of the calibration options shared by wattcal-calibrate and
// wattcal-validate, and their pure conversions to the library's options (no CLI11 here: the
// bindings, AddCalibrationOptions / AddAccelWattchOptions / AddMapeCiOption, are in
// stages/stage_common.h).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "accelwattch/scaling_fit.h"
#include "fit/calibrate.h"
#include "io/corpus_io.h"
#include "validate/metrics.h"

namespace wattcal {

// The command-line form of CalibrationOptions, shared by calibrate and validate --cv-folds.
struct CalibrationFlags {
  std::string method = "dvfs";  // dvfs | fixed | accelwattch
  FitSolver solver = FitSolver::kJoint;
  // l2 | huber | cauchy (ParseFitLoss); "" = DefaultLoss(method, solver).
  std::string loss;
  FitResidual residual = FitResidual::kAbsolute;
  // Scale of the huber/cauchy loss, in residual units: W for absolute residuals, a fraction
  // of the measured power for relative ones (CalibrationOptions::loss_scale; 0 = the default).
  double loss_scale = 0.0;
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

// Turns the flags into checked CalibrationOptions (OptionError names the flag). The loss is
// --loss when given, else DefaultLoss(method, solver).
CalibrationOptions ToCalibrationOptions(const CalibrationFlags& flags);
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
