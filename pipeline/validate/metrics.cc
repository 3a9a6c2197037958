#include "validate/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>

#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <fmt/format.h>

#include "util/csv_field.h"
#include "util/json_check.h"
#include "util/option_rule.h"
#include "util/stats.h"

namespace wattcal {
namespace {

constexpr int kWorstBenchmarksShown = 5;

// Throws std::invalid_argument unless the row can enter the statistics.
void CheckRow(const PredictionRow& row) {
  if (!(std::isfinite(row.measured_w) && row.measured_w > 0.0) || !std::isfinite(row.predicted_w)) {
    throw std::invalid_argument(fmt::format(
        "validation metrics: benchmark '{}' (line {}) has measured_w = {} and predicted_w = {}; "
        "measured power must be finite and > 0 and the prediction finite",
        row.benchmark, row.line, row.measured_w, row.predicted_w));
  }
}

// Writes the statistics of `e` into `out` under their unit-carrying keys.
void AddErrorMetrics(const ErrorMetrics& e, const MetricsOptions& options, nlohmann::json* out) {
  const std::string ci_label = PercentKeyLabel(100.0 * options.confidence_level);
  nlohmann::json& j = *out;
  j["points"] = e.points;
  j["mape_pct"] = FiniteOrNull(e.mape_pct);
  j["mape_ci" + ci_label + "_low_pct"] = FiniteOrNull(e.mape_ci_low_pct);
  j["mape_ci" + ci_label + "_high_pct"] = FiniteOrNull(e.mape_ci_high_pct);
  j["max_ape_pct"] = FiniteOrNull(e.max_ape_pct);
  j["mean_error_pct"] = FiniteOrNull(e.mean_error_pct);
  j["rmse_w"] = FiniteOrNull(e.rmse_w);
  j["pearson_r"] = FiniteOrNull(e.pearson_r);
  for (size_t i = 0; i < options.within_pct.size(); ++i) {
    const double frac = i < e.within_frac.size() ? e.within_frac[i] : ErrorMetrics::kNaN;
    j["within_" + PercentKeyLabel(options.within_pct[i]) + "_pct_frac"] = FiniteOrNull(frac);
  }
}

std::string Printf(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), format, value);
  return buffer;
}

}  // namespace

const char* MapeCiMethodName(MapeCiMethod method) {
  return method == MapeCiMethod::kStudentT ? "student-t" : "normal-population-sd";
}

bool MetricsOptions::Check(std::string* error) const {
  if (!(std::isfinite(confidence_level) && confidence_level > 0.0 && confidence_level < 1.0))
    return RejectOption(error,
                        "MetricsOptions.confidence_level = {} must lie strictly between 0 and 1",
                        confidence_level);
  std::set<std::string> labels;
  for (size_t i = 0; i < within_pct.size(); ++i) {
    const double pct = within_pct[i];
    if (!(std::isfinite(pct) && pct >= 0.0))
      return RejectOption(error, "MetricsOptions.within_pct[{}] = {} must be finite and >= 0", i,
                          pct);
    if (i > 0 && !(pct > within_pct[i - 1]))
      return RejectOption(
          error,
          "MetricsOptions.within_pct[{}] = {} must be greater than within_pct[{}] = {} "
          "(thresholds strictly ascending)",
          i, pct, i - 1, within_pct[i - 1]);
    if (!labels.insert(PercentKeyLabel(pct)).second)
      return RejectOption(
          error,
          "MetricsOptions.within_pct[{}] = {} is indistinguishable from an earlier threshold "
          "at 6 significant digits",
          i, pct);
  }
  return true;
}

ErrorMetrics ComputeErrorMetrics(const std::vector<PredictionRow>& rows,
                                 const MetricsOptions& options) {
  ErrorMetrics e;
  e.points = static_cast<int>(rows.size());
  if (rows.empty()) {
    e.within_frac.assign(options.within_pct.size(), ErrorMetrics::kNaN);
    return e;
  }
  const size_t n = rows.size();
  std::vector<double> ape_pct, error_pct, measured_w, predicted_w;
  ape_pct.reserve(n);
  error_pct.reserve(n);
  measured_w.reserve(n);
  predicted_w.reserve(n);
  double sum_sq_w = 0.0;
  for (const PredictionRow& row : rows) {
    CheckRow(row);
    error_pct.push_back(row.error_pct());
    ape_pct.push_back(std::abs(row.error_pct()));
    measured_w.push_back(row.measured_w);
    predicted_w.push_back(row.predicted_w);
    const double residual_w = row.predicted_w - row.measured_w;
    sum_sq_w += residual_w * residual_w;
  }

  e.mape_pct = Mean(ape_pct);
  if (n == 1) {
    e.mape_ci_low_pct = e.mape_pct;
    e.mape_ci_high_pct = e.mape_pct;
  } else if (options.ci_method == MapeCiMethod::kNormalPopulationSd) {
    const boost::math::normal normal;
    const double z = boost::math::quantile(normal, 0.5 * (1.0 + options.confidence_level));
    const double half_width =
        z * PopulationStdDev(ape_pct, e.mape_pct) / std::sqrt(static_cast<double>(n));
    e.mape_ci_low_pct = e.mape_pct - half_width;
    e.mape_ci_high_pct = e.mape_pct + half_width;
  } else {
    const boost::math::students_t t_dist(static_cast<double>(n - 1));
    const double t = boost::math::quantile(t_dist, 0.5 * (1.0 + options.confidence_level));
    const double half_width =
        t * SampleStdDev(ape_pct, e.mape_pct) / std::sqrt(static_cast<double>(n));
    e.mape_ci_low_pct = e.mape_pct - half_width;
    e.mape_ci_high_pct = e.mape_pct + half_width;
  }
  e.max_ape_pct = *std::max_element(ape_pct.begin(), ape_pct.end());
  e.mean_error_pct = Mean(error_pct);
  e.rmse_w = std::sqrt(sum_sq_w / static_cast<double>(n));
  e.pearson_r = PearsonR(measured_w, predicted_w);
  for (double threshold_pct : options.within_pct) {
    const auto within = std::count_if(ape_pct.begin(), ape_pct.end(),
                                      [&](double ape) { return ape <= threshold_pct; });
    e.within_frac.push_back(static_cast<double>(within) / static_cast<double>(n));
  }
  return e;
}

std::string FreqPairKey(double f_core_mhz, double f_mem_mhz) {
  if (f_mem_mhz == 0.0) return Printf("%.6g", f_core_mhz);
  return Printf("%.6g", f_core_mhz) + "/" + Printf("%.6g", f_mem_mhz);
}

std::string PercentKeyLabel(double pct) {
  std::string label = Printf("%.6g", pct);
  std::replace(label.begin(), label.end(), '.', 'p');
  return label;
}

ValidationMetrics ComputeValidationMetrics(const std::vector<PredictionRow>& rows,
                                           const MetricsOptions& options) {
  ValidationMetrics m;
  m.overall = ComputeErrorMetrics(rows, options);  // validates every row
  double sum_ape = 0.0, sum_error = 0.0, max_ape = 0.0;
  for (const PredictionRow& row : rows) {
    const double e = row.energy_error_pct();
    if (!std::isfinite(e)) continue;
    ++m.energy_points;
    sum_ape += std::fabs(e);
    sum_error += e;
    max_ape = std::max(max_ape, std::fabs(e));
  }
  if (m.energy_points > 0) {
    m.energy_mape_pct = sum_ape / m.energy_points;
    m.energy_max_ape_pct = max_ape;
    m.energy_mean_error_pct = sum_error / m.energy_points;
  }

  std::vector<std::string> benchmark_order;
  std::map<std::string, std::vector<PredictionRow>> by_benchmark;
  std::map<std::pair<double, double>, std::vector<PredictionRow>> by_freq_pair;
  for (const PredictionRow& row : rows) {
    if (!std::isfinite(row.f_core_mhz) || !std::isfinite(row.f_mem_mhz)) {
      throw std::invalid_argument(fmt::format(
          "validation metrics: benchmark '{}' (line {}) has f_core_mhz = {}, f_mem_mhz = {}; "
          "frequencies must be finite",
          row.benchmark, row.line, row.f_core_mhz, row.f_mem_mhz));
    }
    auto [it, inserted] = by_benchmark.try_emplace(row.benchmark);
    if (inserted) benchmark_order.push_back(row.benchmark);
    it->second.push_back(row);
    by_freq_pair[{row.f_core_mhz, row.f_mem_mhz}].push_back(row);
  }
  for (const std::string& benchmark : benchmark_order) {
    m.per_benchmark.push_back({benchmark, ComputeErrorMetrics(by_benchmark[benchmark], options)});
  }
  for (const auto& [pair, group] : by_freq_pair) {  // std::map: core, then memory ascending
    m.per_freq_pair.push_back(
        {FreqPairKey(pair.first, pair.second), ComputeErrorMetrics(group, options)});
  }

  m.ape_cdf_pct.reserve(rows.size());
  for (const PredictionRow& row : rows) m.ape_cdf_pct.push_back(std::abs(row.error_pct()));
  std::sort(m.ape_cdf_pct.begin(), m.ape_cdf_pct.end());

  std::vector<PredictionRow> full_clock, capped;
  for (const PredictionRow& row : rows) {
    m.has_capping = m.has_capping || row.measured_capped || row.capped;
    (row.measured_capped ? capped : full_clock).push_back(row);
  }
  if (m.has_capping) {
    m.full_clock = ComputeErrorMetrics(full_clock, options);
    m.capped = ComputeErrorMetrics(capped, options);
  }
  return m;
}

nlohmann::json MetricsToJson(const ValidationMetrics& m, const MetricsOptions& options) {
  nlohmann::json j = nlohmann::json::object();
  j["confidence_level"] = options.confidence_level;
  if (options.ci_method != MapeCiMethod::kStudentT) {
    j["mape_ci_method"] = MapeCiMethodName(options.ci_method);
  }
  j["within_pct"] = options.within_pct;
  AddErrorMetrics(m.overall, options, &j);
  if (m.energy_points > 0) {
    j["energy"] = {{"points", m.energy_points},
                   {"mape_pct", m.energy_mape_pct},
                   {"max_ape_pct", m.energy_max_ape_pct},
                   {"mean_error_pct", m.energy_mean_error_pct}};
  }

  nlohmann::json per_benchmark = nlohmann::json::array();
  for (const GroupMetrics& g : m.per_benchmark) {
    nlohmann::json entry = {{"benchmark", g.key}};
    AddErrorMetrics(g.metrics, options, &entry);
    per_benchmark.push_back(std::move(entry));
  }
  j["per_benchmark"] = std::move(per_benchmark);

  nlohmann::json per_freq_pair = nlohmann::json::array();
  for (const GroupMetrics& g : m.per_freq_pair) {
    // Recover the numeric frequencies from the key written by FreqPairKey.
    double f_core_mhz = 0.0, f_mem_mhz = 0.0;
    const size_t slash = g.key.find('/');
    f_core_mhz = std::stod(g.key.substr(0, slash));
    if (slash != std::string::npos) f_mem_mhz = std::stod(g.key.substr(slash + 1));
    nlohmann::json entry = {{"key", g.key}, {"f_core_mhz", f_core_mhz}, {"f_mem_mhz", f_mem_mhz}};
    AddErrorMetrics(g.metrics, options, &entry);
    per_freq_pair.push_back(std::move(entry));
  }
  j["per_freq_pair"] = std::move(per_freq_pair);
  if (m.has_capping) {
    nlohmann::json by_capping = nlohmann::json::object();
    const std::pair<const char*, const ErrorMetrics*> groups[] = {
        {"all", &m.overall}, {"full_clock", &m.full_clock}, {"capped", &m.capped}};
    for (const auto& [name, metrics] : groups) {
      if (metrics->points == 0) continue;  // an empty group has no statistics (never null)
      nlohmann::json entry = nlohmann::json::object();
      AddErrorMetrics(*metrics, options, &entry);
      by_capping[name] = std::move(entry);
    }
    j["by_capping"] = std::move(by_capping);
  }
  return j;
}

std::string FormatMetricsTable(const ValidationMetrics& m, const MetricsOptions& options,
                               const std::string& title) {
  const ErrorMetrics& e = m.overall;
  const std::string level = Printf("%.6g", 100.0 * options.confidence_level);
  std::string out = title + "\n";
  out += fmt::format("  {:<18}{}\n", "points", e.points);
  out += fmt::format("  {:<18}{:.2f} %  ({}% CI {:.2f} .. {:.2f} %)\n", "MAPE", e.mape_pct, level,
                     e.mape_ci_low_pct, e.mape_ci_high_pct);
  out += fmt::format("  {:<18}{:.2f} %\n", "max APE", e.max_ape_pct);
  out += fmt::format("  {:<18}{:+.2f} %  (> 0 over-predicts)\n", "mean error", e.mean_error_pct);
  out += fmt::format("  {:<18}{:.3f} W\n", "RMSE", e.rmse_w);
  out += fmt::format("  {:<18}{:.4f}\n", "Pearson r", e.pearson_r);
  if (m.energy_points > 0) {
    out += fmt::format(
        "  {:<18}{:.2f} %  (max {:.2f} %, mean error {:+.2f} %, {} points: predicted W "
        "x duration_s vs measured energy_j)\n",
        "energy MAPE", m.energy_mape_pct, m.energy_max_ape_pct, m.energy_mean_error_pct,
        m.energy_points);
  }
  if (!options.within_pct.empty()) {
    std::string thresholds, fractions;
    for (size_t i = 0; i < options.within_pct.size(); ++i) {
      if (i > 0) {
        thresholds += "/";
        fractions += " / ";
      }
      thresholds += Printf("%.6g", options.within_pct[i]);
      const double frac = i < e.within_frac.size() ? e.within_frac[i] : ErrorMetrics::kNaN;
      fractions += fmt::format("{:.1f}", 100.0 * frac);
    }
    out += fmt::format("  {:<18}{} % of points\n", "within " + thresholds + " %", fractions);
  }
  if (m.has_capping) {
    auto group = [](const ErrorMetrics& g) {
      return g.points == 0 ? std::string("none")
                           : fmt::format("{:.2f} % ({} pts)", g.mape_pct, g.points);
    };
    out += fmt::format("  {:<18}all {} / full clock {} / capped {}\n", "MAPE by capping",
                       group(m.overall), group(m.full_clock), group(m.capped));
  }

  if (m.per_benchmark.empty()) return out;
  std::vector<const GroupMetrics*> worst;
  for (const GroupMetrics& g : m.per_benchmark) worst.push_back(&g);
  // Stable: ties keep the order of first appearance.
  std::stable_sort(worst.begin(), worst.end(), [](const GroupMetrics* a, const GroupMetrics* b) {
    return a->metrics.mape_pct > b->metrics.mape_pct;
  });
  if (worst.size() > static_cast<size_t>(kWorstBenchmarksShown)) {
    worst.resize(kWorstBenchmarksShown);
  }
  size_t name_width = std::string("benchmark").size();
  for (const GroupMetrics* g : worst) name_width = std::max(name_width, g->key.size());
  out +=
      fmt::format("  worst {} of {} benchmarks by MAPE:\n", worst.size(), m.per_benchmark.size());
  out += fmt::format("    {:<{}}  {:>6}  {:>8}  {:>11}  {:>8}\n", "benchmark", name_width, "points",
                     "MAPE %", "max APE %", "bias %");
  for (const GroupMetrics* g : worst) {
    out += fmt::format("    {:<{}}  {:>6}  {:>8.2f}  {:>11.2f}  {:>+8.2f}\n", g->key, name_width,
                       g->metrics.points, g->metrics.mape_pct, g->metrics.max_ape_pct,
                       g->metrics.mean_error_pct);
  }
  return out;
}

std::string PredictionsToCsv(const std::vector<PredictionRow>& rows) {
  const bool with_fold =
      std::any_of(rows.begin(), rows.end(), [](const PredictionRow& row) { return row.fold >= 0; });
  const bool with_capping = std::any_of(rows.begin(), rows.end(), [](const PredictionRow& row) {
    return row.capped || row.measured_capped;
  });
  const bool with_flags = std::any_of(rows.begin(), rows.end(),
                                      [](const PredictionRow& row) { return !row.flags.empty(); });
  const bool with_energy = std::any_of(rows.begin(), rows.end(), [](const PredictionRow& row) {
    return std::isfinite(row.energy_error_pct());
  });
  std::string out = "benchmark,f_core_mhz,f_mem_mhz,measured_w,predicted_w,error_pct";
  if (with_energy) out += ",duration_s,measured_energy_j,predicted_energy_j,energy_error_pct";
  if (with_fold) out += ",fold";
  if (with_capping) out += ",uncapped_w,capped,measured_capped";
  out += with_flags ? ",flags\n" : "\n";
  for (const PredictionRow& row : rows) {
    out += CsvField(row.benchmark);
    out += "," + Printf("%.6g", row.f_core_mhz);
    out += "," + Printf("%.6g", row.f_mem_mhz);
    out += "," + Printf("%.6f", row.measured_w);
    out += "," + Printf("%.6f", row.predicted_w);
    out += "," + Printf("%.6f", row.error_pct());
    if (with_energy) {
      for (double v : {row.duration_s, row.measured_energy_j, row.predicted_energy_j(),
                       row.energy_error_pct()})
        out += "," + (std::isfinite(v) ? Printf("%.6f", v) : std::string());
    }
    if (with_fold) out += "," + std::to_string(row.fold);
    if (with_capping) {
      out += "," + Printf("%.6f", row.uncapped_w) + (row.capped ? ",1" : ",0") +
             (row.measured_capped ? ",1" : ",0");
    }
    if (with_flags) out += "," + CsvField(row.flags);
    out += "\n";
  }
  return out;
}

}  // namespace wattcal
