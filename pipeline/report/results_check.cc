#include "report/results_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "io/csv_reader.h"
#include "util/errors.h"
#include "util/json_file.h"

namespace wattcal {

std::vector<ExpectedFigure> ReadExpectedFigures(const std::string& path) {
  CsvReader::Options options;
  options.comment = '#';
  CsvReader reader(path, options);
  std::vector<std::string> fields;
  if (!reader.Next(&fields)) reader.Fail("", "the file is empty");
  const std::vector<std::string> header = {"run",      "file",      "pointer",
                                           "expected", "tolerance", "reference"};
  if (fields != header)
    reader.Fail("header", "expected run,file,pointer,expected,tolerance,reference");
  std::vector<ExpectedFigure> out;
  while (reader.Next(&fields)) {
    if (fields.size() != header.size()) {
      reader.Fail("", fmt::format("expected {} fields, got {}", header.size(), fields.size()));
    }
    ExpectedFigure e;
    e.run = fields[0];
    e.file = fields[1];
    e.pointer = fields[2];
    if (e.pointer.empty() || e.pointer[0] != '/')
      reader.Fail("pointer", "a JSON pointer starts with '/'");
    e.expected = reader.ParseNumber(fields[3], "expected");
    e.tolerance = reader.ParseNumber(fields[4], "tolerance");
    if (e.tolerance < 0.0) reader.Fail("tolerance", "must be >= 0");
    e.reference = fields[5];
    e.line = reader.line();
    out.push_back(e);
  }
  return out;
}

std::vector<CheckedFigure> CheckFigures(const std::vector<ExpectedFigure>& expected,
                                        const std::string& reports_dir,
                                        const std::vector<std::string>& only_runs) {
  std::vector<CheckedFigure> out;
  for (const ExpectedFigure& e : expected) {
    if (!only_runs.empty() &&
        std::find(only_runs.begin(), only_runs.end(), e.run) == only_runs.end()) {
      continue;
    }
    CheckedFigure c;
    c.expected = e;
    const nlohmann::json j = ReadJsonFileOrDiscarded(reports_dir + "/" + e.run + "/" + e.file);
    if (!j.is_discarded()) {
      try {
        const nlohmann::json::json_pointer pointer(e.pointer);
        if (j.contains(pointer) && j.at(pointer).is_number()) {
          c.found = true;
          c.obtained = j.at(pointer).get<double>();
          c.within = std::abs(c.obtained - e.expected) <= e.tolerance;
        }
      } catch (const nlohmann::json::exception&) {
      }
    }
    out.push_back(c);
  }
  return out;
}

std::string CheckTable(const std::vector<CheckedFigure>& checked) {
  std::string s =
      "| run | figure | expected | obtained | | compared with |\n|---|---|---:|---:|---|---|\n";
  for (const CheckedFigure& c : checked) {
    const ExpectedFigure& e = c.expected;
    s += fmt::format("| {} | {}{} | {:.6g} ± {:.3g} | {} | {} | {} |\n", e.run, e.file, e.pointer,
                     e.expected, e.tolerance,
                     c.found ? fmt::format("{:.6g}", c.obtained) : "missing",
                     !c.found ? "MISSING" : (c.within ? "ok" : "DIFFERS"), e.reference);
  }
  return s;
}

}  // namespace wattcal
