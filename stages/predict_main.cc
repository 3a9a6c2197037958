// wattcal-predict: a calibrated model + application activity -> predicted power.
// The command itself (its options and what it runs) is predict_command.cc.
#include "commands.h"

int main(int argc, char** argv) { return wattcal::PredictCommand(argc, argv); }
