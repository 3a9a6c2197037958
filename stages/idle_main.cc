// wattcal-idle: active-SM sweeps -> power per idle SM (AccelWattch Eqs. 6-8, geometric mean
// The command itself (its options and what it runs) is idle_command.cc.
#include "commands.h"

int main(int argc, char** argv) { return wattcal::IdleCommand(argc, argv); }
