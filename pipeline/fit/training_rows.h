// The rows a calibration trains on, the method they support and what they can identify
// (SPEC: unidentifiable components are refused or named), before any solve.
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

// Leaves out the rows flagged power_cap or clock_moved unless `keep_flagged`. Throws
// InputError naming the corpus when every row is flagged.
TrainingSelection SelectTrainingRows(const Corpus& corpus, bool keep_flagged);

// The distinct V-F pairs (one frequency per domain) of `corpus`'s rows, ascending.
std::vector<std::vector<double>> VfPairs(const Corpus& corpus);

// --method auto: "fixed" (TPDS Eq. 9) when the rows `SelectTrainingRows(corpus, keep_flagged)`
// trains on hold one V-F pair (a capture at the GPU's own clocks), else "dvfs" (TPDS Eqs. 4-6);
// `why` gets the sentence that says so ("one V-F pair (1980 MHz core, ...) among 130 rows").
std::string AutoFitMethod(const Corpus& corpus, bool keep_flagged, std::string* why);

// Throws OptionError when `corpus` has fewer than two V-F pairs: "DVFS needs at least two V-F
// pairs; this corpus has one (1980 MHz core, 2619 MHz memory): use --method fixed"
// (`what` replaces "DVFS", `fix` the advice).
void CheckTwoVfPairs(const Corpus& corpus, const std::string& what = "DVFS",
                     const std::string& fix = "use --method fixed");

// What the training rows can identify (SPEC: unidentifiable components are refused or named).
struct IdentifiabilityReport {
  // Components whose coefficient is fixed at 0: all zero, constant (indistinguishable from
  // static power), or a column identical to an earlier component's.
  std::vector<int> fixed_at_zero;
  // One warning per such component, naming it, the corpus and why.
  std::vector<std::string> notes;
};

// Checks the rank of the fit before the solve, on the rows `method` trains on (the default pair
// for fixed). InputError naming the corpus, the number of independent rows and of parameters
// when the fit is underdetermined (fewer distinct utilisation vectors than static power plus the
// non-zero components; any other exact linear dependency; DVFS: fewer distinct rows than
// coefficients plus voltages).
IdentifiabilityReport CheckIdentifiability(const Corpus& train, FitMethod method);

}  // namespace wattcal
