// Every stage's command line, bound in one place per stage: AddXxxOptions(app, options) binds
// every option of wattcal-xxx but --quiet / --verbose straight into its options struct's fields
// (in the order --help lists them), and is defined beside its command in stages/xxx_command.cc.
// The command is then: AddXxxOptions, AddLoggingOptions, RunStageMain(one RunXxxStage call).
// Tests parse a command line into the options with the same function.
#pragma once

#include <CLI/CLI.hpp>

#include "usecases/calibrate_stage.h"
#include "usecases/check_stage.h"
#include "usecases/clocks_stage.h"
#include "usecases/compare_stage.h"
#include "usecases/constant_stage.h"
#include "usecases/dvfs_stage.h"
#include "usecases/fields_stage.h"
#include "usecases/idle_stage.h"
#include "usecases/ingest_stage.h"
#include "usecases/perf_stage.h"
#include "usecases/port_stage.h"
#include "usecases/predict_stage.h"
#include "usecases/report_stage.h"
#include "usecases/static_stage.h"
#include "usecases/synth_stage.h"
#include "usecases/validate_stage.h"

namespace wattcal {

void AddCalibrateOptions(CLI::App* app, CalibrateStageOptions* options);
void AddCheckOptions(CLI::App* app, CheckStageOptions* options);
// --no-figures clears options->figures.
void AddClocksOptions(CLI::App* app, ClocksStageOptions* options);
void AddCompareOptions(CLI::App* app, CompareStageOptions* options);
void AddConstantOptions(CLI::App* app, ConstantStageOptions* options);
// --objective, --power-mode and --activity-scaling straight into options->dvfs's enums
// (AddEnumOption).
void AddDvfsOptions(CLI::App* app, DvfsStageOptions* options);
void AddFieldsOptions(CLI::App* app, FieldsStageOptions* options);
void AddIdleOptions(CLI::App* app, IdleStageOptions* options);
void AddIngestOptions(CLI::App* app, IngestStageOptions* options);
void AddPerfOptions(CLI::App* app, PerfStageOptions* options);
// The subcommands gpu, project and node (exactly one required) with their options.
void AddPortOptions(CLI::App* app, PortStageOptions* options);
void AddPredictOptions(CLI::App* app, PredictStageOptions* options);
void AddReportOptions(CLI::App* app, ReportStageOptions* options);
void AddStaticOptions(CLI::App* app, StaticStageOptions* options);
void AddSynthOptions(CLI::App* app, SynthStageOptions* options);
// --method's presence sets options->method_given.
void AddValidateOptions(CLI::App* app, ValidateStageOptions* options);

}  // namespace wattcal
