// wattcal-ingest: raw measurement dumps -> tidy tables that calibrate/validate read.
// The command itself (its options and what it runs) is ingest_command.cc.
#include "commands.h"

int main(int argc, char** argv) { return wattcal::IngestCommand(argc, argv); }
