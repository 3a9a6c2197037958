// The fleet reduce in memory (issue 39): captures grouped into GPUs, each GPU calibrated in
// parallel (one GPU's counters lent to the GPUs of its model that have none), then per GPU model
// the cross-prediction matrix and the pooled fit. Failures are kept, never dropped: a GPU that
// cannot be reduced keeps its status and message, and the rest of the fleet is reduced.
#pragma once

#include <string>
#include <vector>

#include "fleet/fleet_captures.h"
#include "fleet/fleet_compare.h"
#include "fleet/gpu_fit.h"

namespace wattcal {

struct FleetReduceOptions {
  // Each GPU's calibration (bootstrap, seed, folds, capture reading).
  FleetFitOptions fit;
  // OpenMP threads over the GPUs; the results do not depend on it.
  int threads = 1;
  // The cross-prediction matrix of a model holds at most this many GPUs (evenly spaced in UUID
  // order beyond it): its cost and its figure grow with the square.
  int max_matrix_gpus = 100;

  bool Check(std::string* error) const;
};

struct FleetGpu {
  FleetMember member;
  // Valid when member.status is kOk.
  GpuFit fit;
  // The pooled model's CV MAPE on this GPU's windows, %; NaN when none.
  double pooled_mape_pct = 0.0;
};

struct FleetModel {
  int model = -1;  // index of the description
  // Indices into FleetResult::gpus of its reduced GPUs (status ok), in UUID order.
  std::vector<int> gpus;
  // The UUID whose counters were lent to its GPUs without counters ("" when none was needed).
  std::string counters_uuid;
  CrossPrediction cross;
  // Valid when pooled_error is "" and gpus is not empty.
  PooledFit pooled;
  std::string pooled_error;
};

struct FleetResult {
  std::vector<FleetDescription> descriptions;
  // Every member (GroupCaptures' order), reduced or not.
  std::vector<FleetGpu> gpus;
  // One per description that has at least one GPU, in description order.
  std::vector<FleetModel> models;
  // The files every reduced GPU read (for the provenance record).
  std::vector<std::string> inputs;
  // Members not reduced (status other than ok).
  int failed() const;
};

FleetResult ReduceFleet(const std::vector<std::string>& captures,
                        const std::vector<FleetDescription>& descriptions,
                        const FleetReduceOptions& options);

}  // namespace wattcal
