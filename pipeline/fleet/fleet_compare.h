// How the GPUs of one model compare (issue 39): each GPU's model predicting each other GPU's
// windows, and one pooled model per GPU model (all its GPUs together) against the per-GPU models.
#pragma once

#include <string>
#include <vector>

#include <Eigen/Core>

#include "fleet/gpu_fit.h"

namespace wattcal {

// The cross-prediction matrix of one GPU model's GPUs.
struct CrossPrediction {
  // Indices (into the caller's GPU list) of the GPUs in the matrix: all of them up to max_gpus,
  // else max_gpus of them evenly spaced in the list's (UUID) order.
  std::vector<int> gpus;
  // mape_pct(a, b): GPU gpus[a]'s model predicting GPU gpus[b]'s unflagged windows of the
  // benchmarks both ran, at the reference pair (TPDS Eq. 9), MAPE %; the diagonal is the GPU's
  // own 5-fold CV MAPE (a model never scored on the windows it was fitted to).
  Eigen::MatrixXd mape_pct;
  // Benchmarks both ran, per pair (same shape).
  Eigen::MatrixXi common_benchmarks;
};

// `threads` OpenMP threads over the predicting GPUs (the result does not depend on them).
CrossPrediction PredictAcross(const std::vector<const GpuFit*>& fits, int max_gpus, int threads);

// One model for all GPUs of a model, against one per GPU.
struct PooledFit {
  PowerModel model;
  // The components every GPU has (an optional one some GPU lacks, as DMMA on the shared H100
  // capture, is left out of the pooled fit; named in `note`).
  std::vector<std::string> components;
  std::string note;
  // Per GPU (the caller's order): the pooled model's 5-fold CV by benchmark MAPE on that GPU's
  // windows (folds by benchmark over the whole fleet: a held-out benchmark is held out on every
  // GPU), %; beside each GPU's own cv_mape_pct.
  std::vector<double> mape_pct;
  // Over all GPUs' windows, %.
  double overall_mape_pct = 0.0;
};

// Throws InputError / FitError as calibration does. Needs at least one GPU.
PooledFit FitPooled(const std::vector<const GpuFit*>& fits, const FleetFitOptions& options);

}  // namespace wattcal
