// The command lines of the stages with many options (wattcal-ingest: 34, wattcal-report: 20),
// bound straight into their options structs' fields so that their mains stay thin.
#pragma once

#include <CLI/CLI.hpp>

#include "stage/ingest_stage.h"
#include "stage/report_stage.h"

namespace wattcal {

// Adds every option of wattcal-ingest but --quiet / --verbose, in the order --help lists them.
void AddIngestOptions(CLI::App* app, IngestStageOptions* options);

// Adds every option of wattcal-report but --quiet / --verbose, in the order --help lists them.
void AddReportOptions(CLI::App* app, ReportStageOptions* options);

}  // namespace wattcal
