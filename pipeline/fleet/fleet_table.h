// The fleet's tables (issue 39): fleet.csv, one row per GPU (and per capture that is no GPU of the
// fleet), and cross_prediction.csv, the cross-prediction matrices in long form. Fixed float
// formatting: same result, same bytes.
#pragma once

#include <string>
#include <vector>

#include "fleet/fleet_reduce.h"

namespace wattcal {

// uuid,name,model,status,message,captures,counters_from,windows,idle_w,static_w,static_w_lo,
// static_w_hi,cv_mape_pct,pooled_mape_pct, then per component (every model's, in order of first
// appearance; ColumnSafeName) <comp>_w,<comp>_w_lo,<comp>_w_hi: W at full use with the bootstrap
// 95% interval. `model` is the description's file name without .json; captures are joined by ';'.
// Empty cells: no value (a GPU not reduced, a component its model lacks).
std::string FleetCsv(const FleetResult& fleet);

// model,from_uuid,to_uuid,common_benchmarks,mape_pct: every cell of every model's matrix (the
// diagonal is the GPU's own CV MAPE).
std::string CrossPredictionCsv(const FleetResult& fleet);

// The description's short name: its file name without the extension ("h100_sxm").
std::string FleetModelName(const FleetDescription& d);

// Every component name of the reduced GPUs, in order of first appearance.
std::vector<std::string> FleetComponents(const FleetResult& fleet);

}  // namespace wattcal
