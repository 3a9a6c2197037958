// The calibrate use case in memory: a training corpus and a request in, the model wattcal-calibrate
// writes out (TPDS Eqs. 4-6 DVFS, TPDS Eq. 9 fixed). Everything between the corpus and the model is
// done here, once: --method auto picks the method from the training rows, the rows are selected
// once (flagged rows left out), the indistinguishable rows and the power cap's V-F curve go into
// the model's training notes. The command (usecases/calibrate_stage.h) reads the corpus, calls
// RunCalibration and writes its result; the Python module and the fleet reduce call it on a
// Corpus they hold.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fit/calibrate.h"
#include "io/corpus.h"

namespace wattcal {

struct CalibrationRequest {
  // The checked calibration options (bootstrap replicates and seed included). With auto_method,
  // options.method and options.loss are replaced by the ones the training rows support.
  CalibrationOptions options;
  // --method auto: fixed (TPDS Eq. 9) when the training rows hold one V-F pair, else dvfs
  // (AutoFitMethod); a dvfs pick drops the bootstrap (fixed method only) with a warning.
  bool auto_method = false;
  // --loss as given; unset: the default loss of the method auto picks (DefaultLoss).
  std::optional<FitLoss> loss;
};

struct CalibrationResult {
  // The model with all of its training notes: the left-out rows, identifiability, duplicates (from
  // Calibrate), the indistinguishable rows (at most kMaxNamedGroups named, the rest counted) and
  // the V-F curve fitted from the power-capped rows. Exactly the model the command writes.
  PowerModel model;
  // The options the fit ran with (the method auto picked, its loss, the bootstrap it kept).
  CalibrationOptions options;
  // The benchmark of each row left out of training (flagged), in row order.
  std::vector<std::string> left_out_benchmarks;
};

// Groups of indistinguishable rows named one by one in the notes; a corpus of repeated campaigns
// can have thousands, the rest are counted in one note.
constexpr size_t kMaxNamedGroups = 10;

// Calibrates a model on `train` (its path names it in the notes). Selects the training rows once
// (SelectTrainingRows), picks the method when request.auto_method, logs each note as a warning.
// Throws OptionError / InputError / FitError as Calibrate does.
CalibrationResult RunCalibration(const Corpus& train, const CalibrationRequest& request);

}  // namespace wattcal
