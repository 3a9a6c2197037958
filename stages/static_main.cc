// wattcal-static: lane x SM sweeps -> power-gating terms (first SM vs each further SM, first
// The command itself (its options and what it runs) is static_command.cc.
#include "commands.h"

int main(int argc, char** argv) { return wattcal::StaticCommand(argc, argv); }
