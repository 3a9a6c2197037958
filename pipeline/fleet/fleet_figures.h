// The fleet report's figures (gnuplot through report/gnuplot_figure.h), each readable from 2 to
// 1,000 GPUs: no per-GPU labels, every GPU a point.
#pragma once

#include <string>
#include <vector>

#include <Eigen/Core>

#include "fleet/fleet_terms.h"

namespace wattcal {

// Per term (x: one band per term), the GPUs sorted by value across the band, each with its 95%
// interval, as W off the fleet median of the term; outliers in another colour.
void WriteTermSpreadFigure(const std::vector<FleetTerm>& terms, const std::string& title,
                           const std::string& png_path, const std::string& svg_path);

// The cross-prediction matrix as a heatmap (row: the predicting GPU's model, column: the GPU
// predicted; rank in UUID order), MAPE %.
void WriteCrossPredictionFigure(const Eigen::MatrixXd& mape_pct, const std::string& title,
                                const std::string& png_path, const std::string& svg_path);

// Each GPU's own CV MAPE (x) against the pooled model's on its windows (y), with y = x.
void WritePooledFigure(const std::vector<double>& own_pct, const std::vector<double>& pooled_pct,
                       const std::string& title, const std::string& png_path,
                       const std::string& svg_path);

}  // namespace wattcal
