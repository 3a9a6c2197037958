// The command lines of the stages with many options (wattcal-ingest: 34, wattcal-report: 20,
// wattcal-port: 3 subcommands with 26, wattcal-perf: 19, wattcal-dvfs: 20),
// bound straight into their options structs' fields so that their mains stay thin.
#pragma once

#include <CLI/CLI.hpp>

#include "usecases/dvfs_stage.h"
#include "usecases/ingest_stage.h"
#include "usecases/perf_stage.h"
#include "usecases/port_stage.h"
#include "usecases/report_stage.h"

namespace wattcal {

// Adds every option of wattcal-ingest but --quiet / --verbose, in the order --help lists them.
void AddIngestOptions(CLI::App* app, IngestStageOptions* options);

// Adds every option of wattcal-report but --quiet / --verbose, in the order --help lists them.
void AddReportOptions(CLI::App* app, ReportStageOptions* options);

// Adds wattcal-port's subcommands gpu, project and node (exactly one required) with their options.
void AddPortOptions(CLI::App* app, PortStageOptions* options);

// Adds every option of wattcal-perf but --quiet / --verbose.
void AddPerfOptions(CLI::App* app, PerfStageOptions* options);

// Adds every option of wattcal-dvfs but --quiet / --verbose (--objective, --power-mode and
// --activity-scaling straight into options->dvfs's enums: AddEnumOption).
void AddDvfsOptions(CLI::App* app, DvfsStageOptions* options);

}  // namespace wattcal
