// Bootstrap confidence intervals of the fixed model's coefficients (resampling the training
// benchmarks), reproducible for any thread count and standard library.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "fit/calibrate.h"
#include "io/corpus.h"
#include "model/prediction_interval.h"

namespace wattcal {

// The bootstrap (options.bootstrap_replicates > 0, fixed method; Calibrate calls it):
// `train` is the corpus the fixed model was fitted on (flagged rows left out, unidentifiable
// components zeroed). Its benchmarks with rows at the default pair are resampled with
// replacement (all rows of a drawn benchmark together, a benchmark drawn twice counted
// twice), the fixed-path solve is refitted on each resample, and the 2.5%/97.5% percentiles
// of every coefficient are returned. Replicates run on options.threads OpenMP threads;
// the result is identical for any thread count and standard library. A replicate whose
// refit fails (e.g. the resample cannot reach the default pair) is a FitError naming it.
CoefficientCi BootstrapFixedCoefficients(const Corpus& train, const CalibrationOptions& options);

// The same bootstrap, keeping also what a prediction interval needs (PredictionIntervalData):
// every replicate's coefficients, and the quantiles of measured / predicted over every
// replicate's out-of-bag rows (the rows of the benchmarks its resample did not draw, predicted
// by its refit). Both results are empty when options.bootstrap_replicates is 0.
struct BootstrapResult {
  CoefficientCi ci;
  PredictionIntervalData interval;
};
BootstrapResult BootstrapFixed(const Corpus& train, const CalibrationOptions& options);

// The seed of replicate `b`'s generator (splitmix64 of seed and b).
uint64_t BootstrapReplicateSeed(uint64_t seed, int b);

// A uniform index in [0, n) from `gen`: rejection sampling on the top of
// the 64-bit range, so that every standard library gives the same sequence.
uint64_t UniformIndex(std::mt19937_64& gen, uint64_t n);

// BootstrapPercentile (the percentiles above): model/prediction_interval.h.

}  // namespace wattcal
