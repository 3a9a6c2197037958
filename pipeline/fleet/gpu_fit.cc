#include "fleet/gpu_fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "util/errors.h"
#include "util/nan.h"
#include "util/option_rule.h"
#include "validate/metrics.h"

namespace wattcal {

bool FleetFitOptions::Check(std::string* error) const {
  if (bootstrap_replicates < 0)
    return RejectOption(error, "--bootstrap: {} is not a count >= 0", bootstrap_replicates);
  if (cv_folds < 2) return RejectOption(error, "--cv-folds: {} is not a count >= 2", cv_folds);
  return capture.Check(error);
}

namespace {

// Mean power of the idle windows, W, but those over a benchmark window, across a gap of the power
// log or with too few readings. An idle GPU lowers its clocks: clock_moved is what idle looks like.
double IdlePowerW(const CaptureReport& r) {
  constexpr uint32_t kUnusable = kFlagOverlap | kFlagSampleGap | kFlagTooFewSamples;
  double sum = 0.0;
  int n = 0;
  for (const CaptureWindow& w : r.windows) {
    if (w.kind != "idle" || (w.energy.flags & kUnusable) || !std::isfinite(w.energy.mean_power_w))
      continue;
    sum += w.energy.mean_power_w;
    ++n;
  }
  return n > 0 ? sum / n : kNaN;
}

CaptureReport Ingest(const std::vector<std::string>& captures, const FleetDescription& d,
                     std::shared_ptr<const CaptureCounters> lent, const FleetFitOptions& options) {
  CaptureOptions capture = options.capture;
  capture.counters_from = lent;
  if (d.fields) return IngestCaptures(captures, *d.fields, capture);
  // Borrowed counters are read through the description they were read with (its optional
  // components resolved as on the lending GPU).
  return IngestCaptures(captures, lent ? lent->gpu : d.gpu, capture);
}

// The terms of a fixed model at full use (TPDS Eq. 9: b0 and omega_i = gamma_i * f_k), with the
// bootstrap intervals scaled the same way.
void ReadTerms(const PowerModel& m, GpuFit* fit) {
  fit->static_w.w = m.static_w.empty() ? kNaN : m.static_w[0];
  const CoefficientCi& ci = m.coefficient_ci95;
  if (ci.known() && !ci.static_w.empty()) {
    fit->static_w.lo_w = ci.static_w[0].first;
    fit->static_w.hi_w = ci.static_w[0].second;
  }
  const std::vector<double> f = m.DefaultFrequencies();
  const std::vector<int> domains = m.layout.ComponentDomains();
  fit->components = m.layout.ComponentNames();
  for (size_t i = 0; i < fit->components.size(); ++i) {
    const double f_mhz = f[domains[i]];
    TermEstimate t;
    t.w = m.component_w_per_mhz[i] * f_mhz;
    if (ci.known() && i < ci.component_w_per_mhz.size()) {
      t.lo_w = ci.component_w_per_mhz[i].first * f_mhz;
      t.hi_w = ci.component_w_per_mhz[i].second * f_mhz;
    }
    fit->component_w.push_back(t);
  }
}

}  // namespace

CalibrationResult FitFleetModel(const Corpus& corpus, int bootstrap_replicates, uint64_t seed) {
  CalibrationRequest request;
  request.auto_method = true;  // fixed at one V-F pair, as `make gpu`
  request.options.method = FitMethod::kFixed;
  request.options.loss = DefaultLoss(FitMethod::kFixed, FitSolver::kJoint);
  request.options.bootstrap_replicates = bootstrap_replicates;
  request.options.bootstrap_seed = seed;
  request.options.show_progress = false;
  return RunCalibration(corpus, request);
}

CrossValidationReport CrossValidateFleetModel(const Corpus& corpus,
                                              const CalibrationResult& calibrated,
                                              const FleetFitOptions& options) {
  CalibrationOptions refit = calibrated.options;
  refit.bootstrap_replicates = 0;
  CrossValidationOptions cv;
  cv.folds = std::min<int>(options.cv_folds, static_cast<int>(corpus.Benchmarks().size()));
  cv.seed = static_cast<unsigned>(options.seed);
  const PredictMode mode =
      calibrated.options.method == FitMethod::kFixed ? PredictMode::kFixed : PredictMode::kDvfs;
  return CrossValidate(corpus, refit, mode, cv);
}

std::string CountersName(const CaptureCounters& counters) {
  return counters.uuid.empty() && !counters.captures.empty() ? counters.captures.front()
                                                             : counters.uuid;
}

GpuFit FitFleetGpu(const std::vector<std::string>& captures, const FleetDescription& description,
                   std::shared_ptr<const CaptureCounters> lent, const FleetFitOptions& options,
                   const std::vector<std::string>& only, CaptureReport* ingested) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  const CaptureReport report = Ingest(captures, description, lent, options);
  GpuFit fit;
  fit.corpus = report.ToCorpus();
  if (!only.empty()) {
    const std::set<std::string> wanted(only.begin(), only.end());
    std::vector<int> rows;
    for (int r = 0; r < fit.corpus.rows(); ++r)
      if (wanted.count(fit.corpus.benchmark[r])) rows.push_back(r);
    fit.corpus = fit.corpus.Subset(rows);
  }
  fit.idle_w = IdlePowerW(report);
  fit.warnings = report.warnings;
  fit.inputs = report.inputs;
  fit.counters_from = lent                               ? CountersName(*lent)
                      : !report.recorded_on.uuid.empty() ? report.recorded_on.uuid
                                                         : captures.front();

  const CalibrationResult calibrated =
      FitFleetModel(fit.corpus, options.bootstrap_replicates, options.seed);
  fit.model = calibrated.model;
  ReadTerms(fit.model, &fit);
  // A fold that cannot be fitted leaves the GPU its model, without a CV figure.
  try {
    const CrossValidationReport folds = CrossValidateFleetModel(fit.corpus, calibrated, options);
    fit.cv_mape_pct = ComputeErrorMetrics(folds.rows).mape_pct;
  } catch (const FitError& e) {
    fit.cv_note = fmt::format("no cv_mape_pct: {}", e.what());
  } catch (const InputError& e) {
    fit.cv_note = fmt::format("no cv_mape_pct: {}", e.what());
  }
  if (ingested != nullptr) *ingested = report;
  return fit;
}

double FixedModelMapePct(const PowerModel& model, const Corpus& corpus,
                         const std::vector<std::string>& benchmarks) {
  const std::set<std::string> wanted(benchmarks.begin(), benchmarks.end());
  const std::vector<std::string> model_names = model.layout.ComponentNames();
  const std::vector<std::string> corpus_names = corpus.layout.ComponentNames();
  std::vector<int> column(model_names.size(), -1);
  for (size_t i = 0; i < model_names.size(); ++i) {
    const auto it = std::find(corpus_names.begin(), corpus_names.end(), model_names[i]);
    if (it != corpus_names.end()) column[i] = static_cast<int>(it - corpus_names.begin());
  }
  std::vector<double> u(model_names.size());
  double sum = 0.0;
  int n = 0;
  for (int r = 0; r < corpus.rows(); ++r) {
    if (!wanted.count(corpus.benchmark[r])) continue;
    if (corpus.has_flags() && !corpus.flags[r].empty()) continue;
    for (size_t i = 0; i < u.size(); ++i)
      u[i] = column[i] < 0 ? 0.0 : corpus.util_frac(r, column[i]);
    const double p = model.PredictAtDefault(u.data());  // TPDS Eq. 9 at the reference pair
    sum += std::abs(p - corpus.power_w[r]) / corpus.power_w[r];
    ++n;
  }
  return n > 0 ? 100.0 * sum / n : kNaN;
}

}  // namespace wattcal
