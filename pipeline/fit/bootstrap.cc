#include "fit/bootstrap.h"

#include <ceres/ceres.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include <Eigen/Cholesky>
#include <Eigen/QR>

#include <random>

#include "fit/internal/solvers.h"
#include "model/power_limit.h"
#include "util/errors.h"
#include "util/stats.h"

namespace wattcal {

using fit_internal::CalibrateFixed;

uint64_t BootstrapReplicateSeed(uint64_t seed, int b) {
  // splitmix64 of (seed, b): neighbouring replicates get unrelated generator states.
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (static_cast<uint64_t>(b) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t UniformIndex(std::mt19937_64& gen, uint64_t n) {
  if (n <= 1) return 0;
  // Largest multiple of n that fits: draws at or above it are rejected (no modulo bias).
  const uint64_t limit =
      std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
  for (;;) {
    const uint64_t x = gen();
    if (x < limit) return x % n;
  }
}

CoefficientCi BootstrapFixedCoefficients(const Corpus& train, const CalibrationOptions& options) {
  return BootstrapFixed(train, options).ci;
}

BootstrapResult BootstrapFixed(const Corpus& train, const CalibrationOptions& options) {
  BootstrapResult result;
  CoefficientCi& ci = result.ci;
  const int replicates = options.bootstrap_replicates;
  if (replicates <= 0) return result;
  // The fixed model trains on the default pair's rows: resample the benchmarks found there.
  const Corpus at_default = train.Subset(train.RowsAtDefault());
  const std::vector<std::string> names = at_default.Benchmarks();
  std::map<std::string, int> index_of;
  for (size_t i = 0; i < names.size(); ++i) index_of[names[i]] = static_cast<int>(i);
  std::vector<std::vector<int>> rows_of(names.size());
  for (int r = 0; r < at_default.rows(); ++r)
    rows_of[index_of[at_default.benchmark[r]]].push_back(r);
  const int nb = static_cast<int>(names.size());
  const int nd = at_default.layout.num_domains();
  const int nc = 2 * nd + at_default.layout.num_components();
  std::vector<std::vector<double>> coefficients(replicates);
  // Per replicate: measured / predicted on the rows of the benchmarks it did not draw.
  std::vector<std::vector<double>> oob_ratios(replicates);
  std::vector<std::string> failures(replicates);
  CalibrationOptions refit = options;
  refit.bootstrap_replicates = 0;
  refit.show_progress = false;
#pragma omp parallel for schedule(dynamic) num_threads(options.threads)
  for (int b = 0; b < replicates; ++b) {
    try {
      std::mt19937_64 gen(BootstrapReplicateSeed(options.bootstrap_seed, b));
      std::vector<int> rows;
      std::vector<char> drawn_benchmark(nb, 0);
      for (int k = 0; k < nb; ++k) {
        const uint64_t pick = UniformIndex(gen, static_cast<uint64_t>(nb));
        drawn_benchmark[pick] = 1;
        const std::vector<int>& drawn = rows_of[pick];
        rows.insert(rows.end(), drawn.begin(), drawn.end());
      }
      const Corpus resample = at_default.Subset(rows);
      PowerModel fitted = CalibrateFixed(resample, refit);
      coefficients[b] = fitted.Coefficients();
      // The out-of-bag rows within the resample's range: one that uses a component beyond it
      // (util_beyond_training, model/power_limit.h) is an extrapolation, whose error the
      // replicates' spread at that workload already carries (and which is flagged).
      fitted.training_range.max_util_frac.assign(nc - 2 * nd, 0.0);
      for (int r = 0; r < resample.rows(); ++r) {
        for (int i = 0; i < nc - 2 * nd; ++i) {
          double& m = fitted.training_range.max_util_frac[i];
          m = std::max(m, resample.util_frac(r, i));
        }
      }
      for (int k = 0; k < nb; ++k) {
        if (drawn_benchmark[k]) continue;
        for (int r : rows_of[k]) {
          const Eigen::VectorXd u = at_default.util_frac.row(r).transpose();
          const Eigen::VectorXd f = at_default.freq_mhz.row(r).transpose();
          const double predicted = fitted.Predict(u.data(), f.data());
          if (!(predicted > 0.0) || !ExtrapolationFlags(fitted, u.data(), predicted).empty())
            continue;
          oob_ratios[b].push_back(at_default.power_w(r) / predicted);
        }
      }
    } catch (const std::exception& e) {
      failures[b] = e.what();
    }
  }
  for (int b = 0; b < replicates; ++b) {
    if (!failures[b].empty()) {
      throw FitError(fmt::format("bootstrap replicate {} of {} (seed {}) failed: {}", b + 1,
                                 replicates, options.bootstrap_seed, failures[b]));
    }
  }
  ci.bootstrap_replicates = replicates;
  ci.seed = options.bootstrap_seed;
  for (int j = 0; j < nc; ++j) {
    std::vector<double> values(replicates);
    for (int b = 0; b < replicates; ++b) values[b] = coefficients[b][j];
    const std::pair<double, double> interval = {Quantile(values, 0.025), Quantile(values, 0.975)};
    if (j < nd) {
      ci.static_w.push_back(interval);
    } else if (j < 2 * nd) {
      ci.idle_dyn_w_per_mhz.push_back(interval);
    } else {
      ci.component_w_per_mhz.push_back(interval);
    }
  }
  // Replicates in order, so the pooled ratios (and so their quantiles) do not depend on the
  // thread count.
  std::vector<double> pooled;
  for (const std::vector<double>& v : oob_ratios) pooled.insert(pooled.end(), v.begin(), v.end());
  PredictionIntervalData& interval = result.interval;
  interval.replicate_coefficients = coefficients;
  interval.oob_predictions = static_cast<int>(pooled.size());
  if (!pooled.empty()) {
    std::sort(pooled.begin(), pooled.end());
    for (int k = 0; k < PredictionIntervalData::kOobRatioQuantiles; ++k) {
      const double p = (k + 1.0) / (PredictionIntervalData::kOobRatioQuantiles + 1.0);
      interval.oob_ratio_quantiles.push_back(Quantile(pooled, p));
    }
  }
  return result;
}

}  // namespace wattcal
