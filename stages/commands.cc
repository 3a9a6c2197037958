#include "commands.h"

#include <map>

namespace wattcal {

StageCommand FindStageCommand(const std::string& program) {
  static const std::map<std::string, StageCommand> kCommands = {
      {"wattcal-calibrate", CalibrateCommand}, {"wattcal-check", CheckCommand},
      {"wattcal-clocks", ClocksCommand},       {"wattcal-compare", CompareCommand},
      {"wattcal-constant", ConstantCommand},   {"wattcal-dvfs", DvfsCommand},
      {"wattcal-idle", IdleCommand},           {"wattcal-ingest", IngestCommand},
      {"wattcal-perf", PerfCommand},           {"wattcal-port", PortCommand},
      {"wattcal-predict", PredictCommand},     {"wattcal-report", ReportCommand},
      {"wattcal-static", StaticCommand},       {"wattcal-synth", SynthCommand},
      {"wattcal-validate", ValidateCommand},   {"wattcal-fields", FieldsCommand},
      {"wattcal-fleet", FleetCommand},
  };
  const auto it = kCommands.find(program);
  return it == kCommands.end() ? nullptr : it->second;
}

}  // namespace wattcal
