// The rows a calibration trains on and the method they support, before any solve (what they can
// identify: fit/identifiability.h).
#pragma once

#include <string>
#include <vector>

#include "fit/calibrate.h"
#include "io/corpus.h"

namespace wattcal {

// The rows a calibration trains on.
struct TrainingSelection {
  // The training rows (all of `corpus` but the left-out ones).
  Corpus rows;
  // Rows of `corpus` left out because they are flagged power_cap or clock_moved.
  std::vector<int> left_out;
  // "left out 9 flagged rows (power_cap: mix006, ...; clock_moved: ...)"; "" when none.
  std::string message;
};

// Leaves out the rows flagged power_cap, clock_moved, sample_gap, data_toggle, metric_absent or
// few_field_samples
// unless `keep_flagged`. Throws InputError naming the corpus when every row is flagged.
TrainingSelection SelectTrainingRows(const Corpus& corpus, bool keep_flagged);

// The distinct V-F pairs (one frequency per domain) of `corpus`'s rows, ascending.
std::vector<std::vector<double>> VfPairs(const Corpus& corpus);

// --method auto: kFixed (TPDS Eq. 9) when the rows `SelectTrainingRows(corpus, keep_flagged)`
// trains on hold one V-F pair (a capture at the GPU's own clocks), else kDvfs (TPDS Eqs. 4-6);
// `why` gets the sentence that says so ("one V-F pair (1980 MHz core, ...) among 130 rows").
FitMethod AutoFitMethod(const Corpus& corpus, bool keep_flagged, std::string* why);
// The same on rows already selected (`selection` = SelectTrainingRows(corpus, keep_flagged)).
FitMethod AutoFitMethod(const TrainingSelection& selection, std::string* why);

// Throws OptionError when `corpus` has fewer than two V-F pairs: "DVFS needs at least two V-F
// pairs; this corpus has one (1980 MHz core, 2619 MHz memory): use --method fixed"
// (`what` replaces "DVFS", `fix` the advice).
void CheckTwoVfPairs(const Corpus& corpus, const std::string& what = "DVFS",
                     const std::string& fix = "use --method fixed");

}  // namespace wattcal
