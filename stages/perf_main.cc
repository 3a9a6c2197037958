// wattcal-perf: run time at other core frequencies from counters measured at a base frequency
// The command itself (its options and what it runs) is perf_command.cc.
#include "commands.h"

int main(int argc, char** argv) { return wattcal::PerfCommand(argc, argv); }
