// wattcal-fleet: the captures of many GPUs -> per-GPU models and the fleet report (issue 39).
// The command itself (its options and what it runs) is fleet_command.cc.
#include "commands.h"

int main(int argc, char** argv) { return wattcal::FleetCommand(argc, argv); }
