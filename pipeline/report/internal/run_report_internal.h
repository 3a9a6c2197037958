// What the parts of wattcal-report share (run_report.cc collects a run, report_figure_plan.cc
// decides its figures, report_draw.cc draws them and stages the index). Not a public header.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/run_report.h"

namespace wattcal::report_internal {

// What the ingest run's provenance says about the measured table `path` (its power source per
// capture), with the table's board limit and the rows calibrate leaves out (measurement_note.cc);
// "" when nothing is known.
std::string MeasurementNote(const Corpus& corpus, const std::string& path);

// A file name stem from free text: lower-case letters and digits, runs of anything else as '_'.
std::string SafeStem(const std::string& text);

// `relative` below `dir`, normalised; `relative` itself when `dir` is empty.
std::string JoinPath(const std::string& dir, const std::string& relative);

// j[key] when it is a number, else NaN.
double JsonNumber(const nlohmann::json& j, const std::string& key);

// "TITLE: " (or "" without a title), the prefix of the figures' titles.
std::string TitlePrefix(const RunReport& r);

// Validations drawn over the V-F pairs: those of the run's primary model (and its
// cross-validations), else every discovered one (not the --predictions extras, which may be other
// GPUs' benchmarks).
std::vector<int> VfValidationIndices(const std::vector<ReportValidation>& validations);

// Fills report->figures from what was collected: `vf_ranking_label` names the validation the V-F
// benchmarks were ranked by ("" when chosen by hand), `constant_inputs` the sweep files behind the
// constant-power figure.
void DecideFigures(const ReportOptions& options, const std::string& vf_ranking_label,
                   const std::vector<std::string>& constant_inputs, RunReport* report);

}  // namespace wattcal::report_internal
