#include "fleet/fleet_compare.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "util/nan.h"
#include "validate/metrics.h"

namespace wattcal {

namespace {

std::vector<std::string> CommonBenchmarks(const Corpus& a, const Corpus& b) {
  const std::vector<std::string> x = a.Benchmarks();
  const std::set<std::string> y(b.benchmark.begin(), b.benchmark.end());
  std::vector<std::string> both;
  for (const std::string& name : x)
    if (y.count(name)) both.push_back(name);
  return both;
}

}  // namespace

CrossPrediction PredictAcross(const std::vector<const GpuFit*>& fits, int max_gpus, int threads) {
  CrossPrediction out;
  const int n = static_cast<int>(fits.size());
  const int k = std::min(n, std::max(1, max_gpus));
  for (int a = 0; a < k; ++a)
    out.gpus.push_back(k == n ? a : static_cast<int>((int64_t{a} * n) / k));
  out.mape_pct = Eigen::MatrixXd::Constant(k, k, kNaN);
  out.common_benchmarks = Eigen::MatrixXi::Zero(k, k);
#pragma omp parallel for schedule(dynamic) num_threads(threads)
  for (int a = 0; a < k; ++a) {
    const GpuFit& from = *fits[out.gpus[a]];
    for (int b = 0; b < k; ++b) {
      const GpuFit& to = *fits[out.gpus[b]];
      const std::vector<std::string> both = CommonBenchmarks(from.corpus, to.corpus);
      out.common_benchmarks(a, b) = static_cast<int>(both.size());
      out.mape_pct(a, b) =
          a == b ? from.cv_mape_pct : FixedModelMapePct(from.model, to.corpus, both);
    }
  }
  return out;
}

namespace {

// The fleet's windows as one corpus: the components every GPU has, the rows of each GPU in turn
// (line = the row's index + 1 over the whole, to map predictions back to their GPU).
Corpus PooledCorpus(const std::vector<const GpuFit*>& fits, std::vector<std::string>* components,
                    std::string* note) {
  std::vector<std::string> common = fits.front()->corpus.layout.ComponentNames();
  std::set<std::string> dropped;
  for (const GpuFit* f : fits) {
    const std::vector<std::string> names = f->corpus.layout.ComponentNames();
    std::vector<std::string> kept;
    for (const std::string& c : common) {
      if (std::find(names.begin(), names.end(), c) != names.end()) kept.push_back(c);
    }
    for (const std::string& c : names)
      if (std::find(kept.begin(), kept.end(), c) == kept.end()) dropped.insert(c);
    for (const std::string& c : common)
      if (std::find(kept.begin(), kept.end(), c) == kept.end()) dropped.insert(c);
    common = kept;
  }
  if (!dropped.empty()) {
    *note = fmt::format("left out of the pooled fit (not measured on every GPU): {}",
                        fmt::join(dropped, ", "));
  }
  *components = common;
  Corpus pooled;
  pooled.path = "pooled fleet windows";
  pooled.kind = CorpusKind::kMeasured;
  pooled.layout = fits.front()->corpus.layout;
  for (FrequencyDomain& d : pooled.layout.domains) {
    std::vector<std::string> kept;
    for (const std::string& c : d.components)
      if (std::find(common.begin(), common.end(), c) != common.end()) kept.push_back(c);
    d.components = kept;
  }
  pooled.gpu = fits.front()->corpus.gpu;
  // The board's limit, as each GPU's own corpus states it (the highest): the fixed model's
  // predictions of the capped rows need it (without it, a fixed-mode CV of a corpus with capped
  // rows scored thousands of %).
  for (const GpuFit* f : fits) {
    const std::optional<double>& limit = f->corpus.power_limit_w;
    if (limit) pooled.power_limit_w = std::max(pooled.power_limit_w.value_or(*limit), *limit);
  }
  pooled.optional_components = fits.front()->corpus.optional_components;
  const std::vector<std::string> order = pooled.layout.ComponentNames();
  int rows = 0;
  for (const GpuFit* f : fits) rows += f->corpus.rows();
  const int domains = pooled.layout.num_domains();
  pooled.power_w.resize(rows);
  pooled.freq_mhz.resize(rows, domains);
  pooled.util_frac.resize(rows, static_cast<int>(order.size()));
  int r = 0;
  for (const GpuFit* f : fits) {
    const Corpus& c = f->corpus;
    const std::vector<std::string> names = c.layout.ComponentNames();
    std::vector<int> column;
    for (const std::string& name : order)
      column.push_back(
          static_cast<int>(std::find(names.begin(), names.end(), name) - names.begin()));
    for (int i = 0; i < c.rows(); ++i, ++r) {
      pooled.benchmark.push_back(c.benchmark[i]);
      pooled.power_w[r] = c.power_w[i];
      pooled.freq_mhz.row(r) = c.freq_mhz.row(i).head(domains);
      for (size_t j = 0; j < column.size(); ++j) pooled.util_frac(r, j) = c.util_frac(i, column[j]);
      pooled.flags.push_back(c.has_flags() ? c.flags[i] : std::string());
      pooled.line.push_back(r + 1);
    }
  }
  pooled.components_line = 1;
  pooled.defaults_line = 0;
  return pooled;
}

}  // namespace

PooledFit FitPooled(const std::vector<const GpuFit*>& fits, const FleetFitOptions& options) {
  PooledFit out;
  const Corpus pooled = PooledCorpus(fits, &out.components, &out.note);
  const CalibrationResult calibrated = FitFleetModel(pooled, 0, options.seed);
  out.model = calibrated.model;
  const CrossValidationReport folds = CrossValidateFleetModel(pooled, calibrated, options);
  // Each held-out row back to its GPU by its line (its index in the pooled corpus + 1).
  std::vector<int> first_row;
  int rows = 0;
  for (const GpuFit* f : fits) {
    first_row.push_back(rows);
    rows += f->corpus.rows();
  }
  std::vector<std::vector<PredictionRow>> per_gpu(fits.size());
  for (const PredictionRow& p : folds.rows) {
    const int r = static_cast<int>(p.line) - 1;
    const size_t g =
        std::upper_bound(first_row.begin(), first_row.end(), r) - first_row.begin() - 1;
    per_gpu[g].push_back(p);
  }
  for (const std::vector<PredictionRow>& rows_of_gpu : per_gpu) {
    out.mape_pct.push_back(rows_of_gpu.empty() ? kNaN : ComputeErrorMetrics(rows_of_gpu).mape_pct);
  }
  out.overall_mape_pct = ComputeErrorMetrics(folds.rows).mape_pct;
  return out;
}

}  // namespace wattcal
