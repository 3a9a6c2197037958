// One GPU of a fleet calibrated (issue 39): its captures ingested in memory, the model calibrated
// as `make gpu` does (--method auto: the fixed model, TPDS Eq. 9, at one V-F pair, with bootstrap
// intervals), 5-fold cross-validation by benchmark, and the terms the fleet report compares.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "fleet/fleet_captures.h"
#include "crossval/cross_validation.h"
#include "ingest/capture.h"
#include "io/corpus.h"
#include "model/power_model.h"
#include "usecases/calibration.h"

namespace wattcal {

struct FleetFitOptions {
  // Bootstrap replicates of each GPU's coefficient intervals (wattcal-calibrate --bootstrap):
  // 50 keeps 1,000 GPUs tractable on 2 cores; the 2.5/97.5% percentiles of 50 refits are coarse
  // but honest (`make gpu` uses 200).
  int bootstrap_replicates = 50;
  // Seed of every GPU's bootstrap and of its folds (the same for each GPU: reruns are identical
  // whatever the thread count).
  uint64_t seed = 1;
  // Cross-validation folds by benchmark (each GPU's cv_mape_pct, the pooled fit's per-GPU MAPE).
  int cv_folds = 5;
  // Fit each GPU of a model on the benchmarks every reduced-to-be GPU of that model ran only
  // (--common-benchmarks): the terms of two GPUs compared on the same work. Off: each GPU on all
  // of its benchmarks.
  bool common_benchmarks = false;
  // How each capture is read (settle time, flag thresholds); counters_from is set per GPU.
  CaptureOptions capture;

  bool Check(std::string* error) const;
};

// A term's value with its bootstrap 95% interval, W (NaN ends when there is none).
struct TermEstimate {
  double w = std::numeric_limits<double>::quiet_NaN();
  double lo_w = std::numeric_limits<double>::quiet_NaN();
  double hi_w = std::numeric_limits<double>::quiet_NaN();
};

struct GpuFit {
  // Its benchmark windows, one row each (CaptureReport::ToCorpus), and its model.
  Corpus corpus;
  PowerModel model;
  // Mean measured power of its idle windows (but those flagged overlap, sample_gap or
  // too_few_samples), W; NaN when it has none.
  double idle_w = std::numeric_limits<double>::quiet_NaN();
  // The constant term b0 of TPDS Eq. 9 (alpha0 of the core domain at v = 1), W.
  TermEstimate static_w;
  // Per component of the model (model.layout order): its power at full use (U = 1) at the
  // default clocks, gamma_i * f_k (TPDS Eq. 9's omega_i), W.
  std::vector<std::string> components;
  std::vector<TermEstimate> component_w;
  // 5-fold CV by benchmark MAPE of its own model, %; NaN when a fold could not be fitted (a
  // component that only the held-out benchmarks use): then `cv_note` says why.
  double cv_mape_pct = std::numeric_limits<double>::quiet_NaN();
  std::string cv_note;
  // The GPU whose counters its windows use (its own when it has them): its UUID, or its first
  // capture directory when it recorded none (CountersName).
  std::string counters_from;
  // The ingest's warnings (its own captures' files named) and every file it read.
  std::vector<std::string> warnings;
  std::vector<std::string> inputs;
};

// The fleet's fit of a corpus, one rule for each GPU and for the pooled model: TPDS Eq. 9 at one
// V-F pair (`make gpu`'s auto choice), with `bootstrap_replicates` refits seeded by `seed`.
CalibrationResult FitFleetModel(const Corpus& corpus, int bootstrap_replicates, uint64_t seed);

// That fit's cross-validation by benchmark: min(options.cv_folds, the corpus's benchmarks) folds
// seeded by options.seed, each refitted without a bootstrap.
CrossValidationReport CrossValidateFleetModel(const Corpus& corpus,
                                              const CalibrationResult& calibrated,
                                              const FleetFitOptions& options);

// How a fleet names the GPU counters were measured on: its UUID, else its first capture directory.
std::string CountersName(const CaptureCounters& counters);

// Ingests `captures` through `description` (with `lent` counters when not null), calibrates and
// cross-validates. Throws InputError / OptionError / FitError as the stages do.
// `only` (not empty): its windows of these benchmarks only are fitted and cross-validated.
GpuFit FitFleetGpu(const std::vector<std::string>& captures, const FleetDescription& description,
                   std::shared_ptr<const CaptureCounters> lent, const FleetFitOptions& options,
                   const std::vector<std::string>& only = {}, CaptureReport* ingested = nullptr);

// The mean absolute percentage error of `model` on the rows of `corpus` whose benchmark is in
// `benchmarks` and that carry no flag, each predicted at the model's default clocks (TPDS Eq. 9);
// components are matched by name (one the corpus lacks counts U = 0). NaN when no row qualifies.
double FixedModelMapePct(const PowerModel& model, const Corpus& corpus,
                         const std::vector<std::string>& benchmarks);

}  // namespace wattcal
