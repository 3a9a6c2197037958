// The stage commands: each wattcal-<stage> executable's command line and run, as a function
// (stages/<stage>_command.cc), so that its thin main (stages/<stage>_main.cc) and the tests,
// in process, run the same code: argv in, exit status out (RunStageMain's mapping).
#pragma once

#include <string>

namespace wattcal {

int CalibrateCommand(int argc, char** argv);
int CheckCommand(int argc, char** argv);
int ClocksCommand(int argc, char** argv);
int CompareCommand(int argc, char** argv);
int ConstantCommand(int argc, char** argv);
int DvfsCommand(int argc, char** argv);
int FieldsCommand(int argc, char** argv);
int FleetCommand(int argc, char** argv);
int IdleCommand(int argc, char** argv);
int IngestCommand(int argc, char** argv);
int PerfCommand(int argc, char** argv);
int PortCommand(int argc, char** argv);
int PredictCommand(int argc, char** argv);
int ReportCommand(int argc, char** argv);
int StaticCommand(int argc, char** argv);
int SynthCommand(int argc, char** argv);
int ValidateCommand(int argc, char** argv);

// A stage command: argv (argv[0] the program's name) in, exit status out.
using StageCommand = int (*)(int argc, char** argv);
// The command of the executable `program` ("wattcal-calibrate"); nullptr for any other name
// (the front door wattcal, wattcal-capture).
StageCommand FindStageCommand(const std::string& program);

}  // namespace wattcal
