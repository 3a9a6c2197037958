// wattcal-validate: predictions vs. held-out measurements, or k-fold cross-validation by
// The command itself (its options and what it runs) is validate_command.cc.
#include "commands.h"

int main(int argc, char** argv) { return wattcal::ValidateCommand(argc, argv); }
