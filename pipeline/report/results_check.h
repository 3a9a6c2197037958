// Checking a set of runs against the headline figures kept in the repository
// (expected/results.csv), for `make -f Makefile.runs check`.
#pragma once

#include <string>
#include <vector>

namespace wattcal {

struct ExpectedFigure {
  std::string run;   // folder under the reports directory
  std::string file;  // JSON or CSV file inside it
  // JSON pointer to the number, e.g. /mape_pct; in a CSV file (a table whose first column names
  // its rows) /<first column's value>/<column name>, e.g. /GPU-1e00b39f-.../idle_w.
  std::string pointer;
  double expected = 0.0;
  double tolerance = 0.0;  // absolute
  std::string reference;   // what the figure is compared with (paper, gpmTOOL, truth)
  int64_t line = 0;        // line in the expected file
};

struct CheckedFigure {
  ExpectedFigure expected;
  bool found = false;  // the file and the number exist
  double obtained = 0.0;
  bool within = false;
};

// Reads expected/results.csv: run,file,pointer,expected,tolerance,reference (InputError).
std::vector<ExpectedFigure> ReadExpectedFigures(const std::string& path);

// Looks every figure up under `reports_dir`; runs listed in `only_runs` (empty: all).
std::vector<CheckedFigure> CheckFigures(const std::vector<ExpectedFigure>& expected,
                                        const std::string& reports_dir,
                                        const std::vector<std::string>& only_runs);

// A Markdown table: run, figure, expected ± tolerance, obtained, verdict, reference.
std::string CheckTable(const std::vector<CheckedFigure>& checked);

}  // namespace wattcal
