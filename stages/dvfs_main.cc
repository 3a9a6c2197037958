// wattcal-dvfs: the energy-optimal core V-F pair per kernel, from predicted run times
// The command itself (its options and what it runs) is dvfs_command.cc.
#include "commands.h"

int main(int argc, char** argv) { return wattcal::DvfsCommand(argc, argv); }
