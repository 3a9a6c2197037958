// Validation statistics of predictions against held-out measurements: MAPE with its
// confidence interval, maximum error, bias, RMSE and Pearson r as reported by AccelWattch
// (MICRO'21, §7) and Guerreiro et al. (TPDS'19, §5), plus the fraction of points within
// given error bounds and the per-benchmark / per-frequency-pair breakdown.
//
// Definitions, over n points with measured power m_j and predicted power p_j:
//   error_j  = 100 (p_j - m_j) / m_j                 (signed percentage error, %)
//   APE_j    = |error_j|                             (absolute percentage error, %)
//   MAPE     = mean_j APE_j
//   CI       = MAPE -/+ t_{(1+level)/2, n-1} * sd(APE) / sqrt(n)   (Student t, sample sd);
//              for n == 1 both ends equal the MAPE. MapeCiMethod::kNormalPopulationSd instead
//              uses z_{(1+level)/2} * sd_pop(APE) / sqrt(n) (population sd, n in its
//              denominator): Excel's CONFIDENCE(alpha, STDEV.P(APE), n), which is what the
//              AccelWattch paper prints (SASS SIM 9.2% +/- 3.12%, Pascal 11 +/- 3.8%, Turing
//              13 +/- 4.7%; the Student t interval of the same sheets is 3.34 / 4.14 / 5.05).
//   RMSE     = sqrt(mean_j (p_j - m_j)^2)            (W)
//   r        = Pearson correlation of (m_j, p_j); NaN when either has zero variance
//              (including n == 1), since the correlation is undefined there
// A set of zero points has every statistic NaN. JSON writes NaN and infinities as null.
#pragma once

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "validate/prediction.h"

namespace wattcal {

// How the MAPE confidence interval is computed (see the definitions above).
enum class MapeCiMethod {
  kStudentT,            // t quantile, sample standard deviation (wattcal's default)
  kNormalPopulationSd,  // normal quantile, population standard deviation (AccelWattch's sheet)
};

const char* MapeCiMethodName(MapeCiMethod method);  // "student-t" | "normal-population-sd"

struct MetricsOptions {
  // Two-sided confidence level of the MAPE confidence interval, in (0, 1).
  double confidence_level = 0.95;
  // Distribution and standard deviation behind the MAPE confidence interval.
  MapeCiMethod ci_method = MapeCiMethod::kStudentT;
  // Thresholds, in % APE, for the "fraction of points within" statistics; strictly
  // ascending, finite and >= 0.
  std::vector<double> within_pct = {1.0, 5.0, 10.0};

  bool Check(std::string* error) const;
};

struct ErrorMetrics {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

  int points = 0;
  double mape_pct = kNaN;          // mean absolute percentage error
  double mape_ci_low_pct = kNaN;   // lower end of the MAPE confidence interval
  double mape_ci_high_pct = kNaN;  // upper end of the MAPE confidence interval
  double max_ape_pct = kNaN;       // largest absolute percentage error
  double mean_error_pct = kNaN;    // mean signed percentage error (bias; > 0 over-predicts)
  double rmse_w = kNaN;            // root-mean-square error of the predicted power
  double pearson_r = kNaN;         // correlation of measured and predicted power
  // Fraction of points with APE <= MetricsOptions::within_pct[i], in [0, 1].
  std::vector<double> within_frac;
};

// Statistics over `rows` (all of them, in any order). Throws std::invalid_argument when a
// row's measured power is not finite and > 0 or its prediction is not finite: the I/O layer
// rejects such data, so reaching here with it is a programming error.
ErrorMetrics ComputeErrorMetrics(const std::vector<PredictionRow>& rows,
                                 const MetricsOptions& options = {});

struct GroupMetrics {
  std::string key;
  ErrorMetrics metrics;
};

struct ValidationMetrics {
  ErrorMetrics overall;
  // key = benchmark name, in order of first appearance in the rows.
  std::vector<GroupMetrics> per_benchmark;
  // key = FreqPairKey(f_core_mhz, f_mem_mhz), sorted by core then memory frequency ascending.
  std::vector<GroupMetrics> per_freq_pair;
  // Every point's APE, sorted ascending (the empirical error CDF).
  std::vector<double> ape_cdf_pct;
  // Split by capping: present when any row was measured under the power cap
  // (PredictionRow::measured_capped) or predicted capped. full_clock = rows not measured under
  // the cap; capped = rows measured under it (flagged power_cap in the corpus).
  bool has_capping = false;
  ErrorMetrics full_clock;
  ErrorMetrics capped;
  // The energy over each row's windows as they ran: predicted_w x duration_s against the measured
  // energy_j (PredictionRow::energy_error_pct), over the rows that have both (a per-workload
  // measured table); energy_points = 0 (and NaN statistics) when none has.
  int energy_points = 0;
  double energy_mape_pct = std::numeric_limits<double>::quiet_NaN();
  double energy_max_ape_pct = std::numeric_limits<double>::quiet_NaN();
  double energy_mean_error_pct = std::numeric_limits<double>::quiet_NaN();
};

ValidationMetrics ComputeValidationMetrics(const std::vector<PredictionRow>& rows,
                                           const MetricsOptions& options = {});

// "<f_core>/<f_mem>" in MHz with %.6g ("1000/3505"), or "<f_core>" when f_mem_mhz == 0.
std::string FreqPairKey(double f_core_mhz, double f_mem_mhz);

// The label of a percentage in a JSON key: %.6g with '.' written as 'p' (5 -> "5",
// 2.5 -> "2p5"), so that keys stay identifiers.
std::string PercentKeyLabel(double pct);

// JSON with the overall statistics at the top level and one object per group:
//   {"confidence_level": 0.95, ["mape_ci_method": "normal-population-sd" (only when not the
//    default Student t, so that default outputs keep their bytes),] "within_pct": [1, 5, 10],
//    "points": n,
//    ["energy": {"points", "mape_pct", "max_ape_pct", "mean_error_pct"} (only when rows carry
//     their energy: ValidationMetrics::energy_points > 0),]
//    "mape_pct", "mape_ci95_low_pct", "mape_ci95_high_pct", "max_ape_pct",
//    "mean_error_pct", "rmse_w", "pearson_r", "within_1_pct_frac", "within_5_pct_frac", ...,
//    "per_benchmark": [{"benchmark": ..., <the same statistics>}, ...],
//    "per_freq_pair": [{"key": ..., "f_core_mhz", "f_mem_mhz", <the same statistics>}, ...],
//    ["by_capping": {"all": {...}, "full_clock": {...}, "capped": {...}}, each with the same
//     statistics; only when ValidationMetrics::has_capping]}
// (the per-pair frequencies are read back from the key, i.e. to 6 significant digits).
// The "95" in the CI keys is PercentKeyLabel(100 * confidence_level). Doubles keep full
// precision (nlohmann writes the shortest round-trip form); non-finite values are null.
nlohmann::json MetricsToJson(const ValidationMetrics& m, const MetricsOptions& options);

// A short table for the terminal: the overall statistics and the 5 benchmarks with the
// largest MAPE.
std::string FormatMetricsTable(const ValidationMetrics& m, const MetricsOptions& options,
                               const std::string& title);

// The predictions as CSV, one row per point in the given order:
//   benchmark,f_core_mhz,f_mem_mhz,measured_w,predicted_w,error_pct[,fold]
//   [,uncapped_w,capped,measured_capped][,flags]
// (the capping columns only when any row is capped or measured capped, flags only when any
// row has flags, so that outputs without them keep their bytes)
// with frequencies as %.6g, powers and error as %.6f, "fold" only when any row has
// fold >= 0, and benchmark names quoted (RFC 4180) only when they contain a comma, a
// double quote or a line break. Lines end with "\n".
std::string PredictionsToCsv(const std::vector<PredictionRow>& rows);

}  // namespace wattcal
