// wattcal-clocks: power (and run time) per workload at locked core clocks, no counters -> the
// The command itself (its options and what it runs) is clocks_command.cc.
#include "commands.h"

int main(int argc, char** argv) { return wattcal::ClocksCommand(argc, argv); }
