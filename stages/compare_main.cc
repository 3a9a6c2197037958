// wattcal-compare: relative-architecture comparison (AccelWattch MICRO'21 §7.1, Fig. 12): per
// The command itself (its options and what it runs) is compare_command.cc.
#include "commands.h"

int main(int argc, char** argv) { return wattcal::CompareCommand(argc, argv); }
