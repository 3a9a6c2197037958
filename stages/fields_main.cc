// wattcal-fields: DCGM / NVML GPM field tables and logs -> a corpus, or per-job energy.
// The command itself (its options and what it runs) is fields_command.cc.
#include "commands.h"

int main(int argc, char** argv) { return wattcal::FieldsCommand(argc, argv); }
