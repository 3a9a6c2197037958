// The fleet report (issue 39): OUT/index.html and OUT/index.md (report/document.h) with the
// figures of fleet_figures.h in OUT/figures/: per GPU model the spread of each term across its
// GPUs with the outliers, the cross-prediction matrix, the pooled fit against the per-GPU fits;
// and every capture that was not reduced, with its message.
#pragma once

#include <string>
#include <vector>

#include "fleet/fleet_reduce.h"
#include "util/output.h"

namespace wattcal {

// Stages the pages and figures into `outputs` (figures only when gnuplot is available; the page
// says so otherwise); returns their final paths. `settings`: one sentence of the run's settings.
std::vector<std::string> StageFleetReport(const FleetResult& fleet, const std::string& out_dir,
                                          const std::string& settings, OutputSet* outputs);

// At most this many GPUs of a model are listed one by one (tables); figures show them all.
constexpr size_t kFleetTableGpus = 12;

}  // namespace wattcal
