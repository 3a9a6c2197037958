// wattcal-check: every run's headline figures against the values kept in the repository.
// The command itself (its options and what it runs) is check_command.cc.
#include "commands.h"

int main(int argc, char** argv) { return wattcal::CheckCommand(argc, argv); }
