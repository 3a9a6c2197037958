// wattcal-calibrate: microbenchmark measurements -> a calibrated power model (JSON).
// The command itself (its options and what it runs) is calibrate_command.cc.
#include "commands.h"

int main(int argc, char** argv) { return wattcal::CalibrateCommand(argc, argv); }
