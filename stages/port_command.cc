// wattcal-port: carry a model to another GPU of the same architecture (TPDS'19 §4.6, Eq. 11) or
// power estimates / a model to another technology node (AccelWattch MICRO'21 §7.1).
//
//   wattcal-port gpu --model BASE.json --base-gpu BASE.json --target-gpu TARGET.json
//                    [--constant-scaling components|idle-power|none]
//                    [--base-idle-w W | --base-idle-from CORPUS]
//                    [--target-idle-w W | --target-idle-from CORPUS]
//                    --out PORTED.json [--report PORT.json]
//   wattcal-port project --corpus TRAIN.csv --target-gpu TARGET.json --out TRAIN_TARGET.csv
//   wattcal-port node (--estimates PER_KERNEL.csv [--reference SCALED.csv] | --model M.json)
//                     [--node-table technology_nodes.csv --from-node 12nm --to-node 16nm]
//                     [--dynamic-factor X] [--static-factor X] [--idle-sm-factor X]
//                     [--board-constant-factor X] --out OUT [--report NODE.json]
//                     [--totals-out TOTALS.csv]
#include "commands.h"

#include "usecases/port_stage.h"
#include "stage_common.h"
#include "stage_options.h"

namespace wattcal {

int PortCommand(int argc, char** argv) {
  CLI::App app{
      "Carry a power model to another GPU (TPDS §4.6) or technology node "
      "(AccelWattch §7.1)",
      "wattcal-port"};
  AddLoggingOptions(&app);
  PortStageOptions o;

  AddPortOptions(&app, &o);

  return RunStageMain(&app, argc, argv, [&] {
    o.subcommand = app.get_subcommands().front()->get_name();  // require_subcommand(1)
    auto r = RunPortStage(o);
    std::cout << r.summary;
    return r.exit_code;
  });
}

}  // namespace wattcal
