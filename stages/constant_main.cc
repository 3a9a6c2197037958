// wattcal-constant: DVFS sweeps of microbenchmarks -> constant power P_const (AccelWattch Eq. 3,
// The command itself (its options and what it runs) is constant_command.cc.
#include "commands.h"

int main(int argc, char** argv) { return wattcal::ConstantCommand(argc, argv); }
