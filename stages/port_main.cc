// wattcal-port: carry a model to another GPU of the same architecture (TPDS'19 §4.6, Eq. 11) or
// The command itself (its options and what it runs) is port_command.cc.
#include "commands.h"

int main(int argc, char** argv) { return wattcal::PortCommand(argc, argv); }
