// wattcal-report: figures (gnuplot, PNG + SVG) and one index.html / index.md per run.
// The command itself (its options and what it runs) is report_command.cc.
#include "commands.h"

int main(int argc, char** argv) { return wattcal::ReportCommand(argc, argv); }
