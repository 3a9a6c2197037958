// k-fold cross-validation by benchmark: every row of a benchmark lands in the same fold,
// so a held-out benchmark is never seen at any V-F pair during calibration.
#pragma once

#include <string>
#include <vector>

#include "fit/calibrate.h"
#include "io/corpus.h"
#include "validate/prediction.h"

namespace wattcal {

struct TrainingSelection;  // fit/training_rows.h

struct CrossValidationOptions {
  // Number of folds (2 <= folds <= number of benchmarks).
  int folds = 5;
  // Seed of the benchmark shuffle that assigns folds.
  unsigned seed = 1;
  // OpenMP threads over folds (each fold's solver runs single-threaded).
  int threads = 1;
  bool Check(std::string* error) const;
};

struct CrossValidationReport {
  // Held-out predictions of every fold, in the corpus' row order, with PredictionRow::fold set.
  std::vector<PredictionRow> rows;
  // Benchmarks held out in each fold.
  std::vector<std::vector<std::string>> fold_benchmarks;
  // The model calibrated on the other folds, per fold.
  std::vector<PowerModel> fold_models;
  // Rows flagged data_toggle, neither trained on nor scored unless calibration.keep_flagged (no
  // counters model can fit the toggle sweep's other-data windows).
  int unscored_rows = 0;
};

// Assigns benchmarks (in order of first appearance) to folds: a seeded Fisher-Yates shuffle
// (mt19937, portable across standard libraries), then round-robin.
std::vector<std::vector<std::string>> AssignFolds(const std::vector<std::string>& benchmarks,
                                                  int folds, unsigned seed);

CrossValidationReport CrossValidate(const Corpus& corpus, const CalibrationOptions& calibration,
                                    PredictMode mode, const CrossValidationOptions& options);
// The same with `selection` = SelectTrainingRows(corpus, calibration.keep_flagged)
// (fit/training_rows.h), made once by a caller that needs it too: the checks before the folds
// reuse it (each fold's Calibrate still selects its own training rows).
CrossValidationReport CrossValidate(const Corpus& corpus, const TrainingSelection& selection,
                                    const CalibrationOptions& calibration, PredictMode mode,
                                    const CrossValidationOptions& options);

}  // namespace wattcal
