// wattcal-synth: a measurement corpus generated from a known truth (the embedded default run,
// The command itself (its options and what it runs) is synth_command.cc.
#include "commands.h"

int main(int argc, char** argv) { return wattcal::SynthCommand(argc, argv); }
