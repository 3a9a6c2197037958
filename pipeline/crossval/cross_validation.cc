#include "crossval/cross_validation.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <exception>
#include <map>
#include <random>

#include "fit/training_rows.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/option_rule.h"

namespace wattcal {

bool CrossValidationOptions::Check(std::string* error) const {
  if (folds < 2) return RejectOption(error, "folds = {} must be >= 2", folds);
  if (threads < 1) return RejectOption(error, "threads = {} must be >= 1", threads);
  return true;
}

std::vector<std::vector<std::string>> AssignFolds(const std::vector<std::string>& benchmarks,
                                                  int folds, unsigned seed) {
  std::vector<std::string> order = benchmarks;
  std::mt19937 rng(seed);
  for (size_t i = order.size(); i > 1; --i) {
    // rng() is fully specified by the standard; the modulo mapping keeps this portable.
    const size_t j = static_cast<size_t>(rng() % i);
    std::swap(order[i - 1], order[j]);
  }
  std::vector<std::vector<std::string>> out(folds);
  for (size_t i = 0; i < order.size(); ++i) out[i % folds].push_back(order[i]);
  for (auto& fold : out) std::sort(fold.begin(), fold.end());
  return out;
}

CrossValidationReport CrossValidate(const Corpus& given, const CalibrationOptions& calibration,
                                    PredictMode mode, const CrossValidationOptions& options) {
  return CrossValidate(given, SelectTrainingRows(given, calibration.keep_flagged), calibration,
                       mode, options);
}

CrossValidationReport CrossValidate(const Corpus& given, const TrainingSelection& selection,
                                    const CalibrationOptions& calibration, PredictMode mode,
                                    const CrossValidationOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  // The toggle sweep's other-data rows: a figure that scored them would measure the data, not the
  // model, so they are neither trained on (SelectTrainingRows) nor held out.
  std::vector<int> scored;
  for (int r = 0; r < given.rows(); ++r) {
    if (calibration.keep_flagged || !HasFlag(given, r, kCorpusFlagDataToggle)) scored.push_back(r);
  }
  const int unscored_rows = given.rows() - static_cast<int>(scored.size());
  const Corpus corpus = unscored_rows > 0 ? given.Subset(scored) : given;
  const std::vector<std::string> benchmarks = corpus.Benchmarks();
  if (static_cast<int>(benchmarks.size()) < options.folds) {
    throw OptionError(fmt::format("folds = {} exceeds the {} benchmarks in {}", options.folds,
                                  benchmarks.size(), corpus.path));
  }
  // Refuse what no fold could support before fitting any (a fold would only repeat it). The
  // selection's rows are those of `corpus` it trains on: the unscored rows are flagged.
  if (calibration.method == FitMethod::kDvfs) CheckTwoVfPairs(selection.rows);
  if (mode == PredictMode::kScaling) {
    // Flagged (throttled) rows are predicted at the reference pair, not scaled to their own.
    CheckTwoVfPairs(
        calibration.keep_flagged ? SelectTrainingRows(corpus, false).rows : selection.rows,
        "scaling (TPDS Eq. 10)", "use --mode fixed");
  }
  CrossValidationReport result;
  result.unscored_rows = unscored_rows;
  result.fold_benchmarks = AssignFolds(benchmarks, options.folds, options.seed);
  std::map<std::string, int> fold_of;
  for (int k = 0; k < options.folds; ++k) {
    for (const std::string& b : result.fold_benchmarks[k]) fold_of[b] = k;
  }
  result.fold_models.resize(options.folds);
  std::vector<std::vector<PredictionRow>> fold_rows(options.folds);
  std::vector<std::string> fold_errors(options.folds);
  std::vector<int> fold_error_kind(options.folds, 0);

  CalibrationOptions fold_calibration = calibration;
  fold_calibration.threads = 1;
  fold_calibration.show_progress = false;  // one progress line for the folds instead
  Progress progress(fmt::format("cross-validation ({} folds)", options.folds), options.folds);
#pragma omp parallel for schedule(dynamic, 1) num_threads(options.threads)
  for (int k = 0; k < options.folds; ++k) {
    try {
      std::vector<int> train_rows, test_rows;
      for (int r = 0; r < corpus.rows(); ++r) {
        (fold_of.at(corpus.benchmark[r]) == k ? test_rows : train_rows).push_back(r);
      }
      const Corpus train = corpus.Subset(train_rows);
      const Corpus test = corpus.Subset(test_rows);
      result.fold_models[k] = Calibrate(train, fold_calibration);
      // The fold's model knows the board's limit (--power-limit-w or the corpus's).
      fold_rows[k] =
          PredictHeldout(result.fold_models[k], test, mode, result.fold_models[k].power_limit_w);
      for (PredictionRow& row : fold_rows[k]) row.fold = k;
    } catch (const InputError& e) {
      fold_errors[k] = e.what();
      fold_error_kind[k] = 2;
    } catch (const OptionError& e) {
      fold_errors[k] = e.what();
      fold_error_kind[k] = 1;
    } catch (const FitError& e) {
      fold_errors[k] = e.what();
      fold_error_kind[k] = 3;
    } catch (const std::exception& e) {
      fold_errors[k] = e.what();
      fold_error_kind[k] = 4;
    }
    progress.Tick();
  }
  progress.Finish();
  for (int k = 0; k < options.folds; ++k) {
    if (fold_error_kind[k] == 0) continue;
    const std::string message = fmt::format("fold {}: {}", k + 1, fold_errors[k]);
    if (fold_error_kind[k] == 1) throw OptionError(message);
    if (fold_error_kind[k] == 2) throw InputError(corpus.path, 0, "", message);
    if (fold_error_kind[k] == 3) throw FitError(message);
    throw std::runtime_error(message);
  }
  for (auto& rows : fold_rows) result.rows.insert(result.rows.end(), rows.begin(), rows.end());
  std::stable_sort(result.rows.begin(), result.rows.end(),
                   [](const PredictionRow& a, const PredictionRow& b) { return a.line < b.line; });
  return result;
}

}  // namespace wattcal
