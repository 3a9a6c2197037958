#include "report/results_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include <nlohmann/json.hpp>

#include "io/csv_reader.h"
#include "util/errors.h"
#include "util/json_file.h"

namespace wattcal {
namespace {

// A CSV table's number: the pointer /<first column's value>/<column name> (fleet.csv's
// /GPU-1e00b39f-.../idle_w). Unset when the file, the row, the column or a number is missing.
std::optional<double> CsvCell(const std::string& path, const std::string& pointer) {
  // Its two reference tokens, unescaped as a JSON pointer's (RFC 6901: ~1 is '/', ~0 is '~').
  std::string row, column;
  try {
    const nlohmann::json::json_pointer p(pointer);
    if (p.empty() || p.parent_pointer().empty() || !p.parent_pointer().parent_pointer().empty())
      return std::nullopt;
    column = p.back();
    row = p.parent_pointer().back();
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
  try {
    CsvReader reader(path, CsvReader::Options{});
    std::vector<std::string> header, fields;
    if (!reader.Next(&header)) return std::nullopt;
    const auto at = std::find(header.begin(), header.end(), column);
    if (at == header.end()) return std::nullopt;
    const size_t c = static_cast<size_t>(at - header.begin());
    while (reader.Next(&fields)) {
      if (fields.empty() || fields[0] != row || c >= fields.size()) continue;
      return reader.ParseNumber(fields[c], column);  // finite, else InputError: not found
    }
  } catch (const InputError&) {
  }
  return std::nullopt;
}

std::optional<double> JsonNumber(const std::string& path, const std::string& pointer) {
  const nlohmann::json j = ReadJsonFileOrDiscarded(path);
  if (j.is_discarded()) return std::nullopt;
  try {
    const nlohmann::json::json_pointer p(pointer);
    if (j.contains(p) && j.at(p).is_number()) return j.at(p).get<double>();
  } catch (const nlohmann::json::exception&) {
  }
  return std::nullopt;
}

}  // namespace

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
    const std::string path = reports_dir + "/" + e.run + "/" + e.file;
    const bool csv = path.size() > 4 && path.compare(path.size() - 4, 4, ".csv") == 0;
    const std::optional<double> v = csv ? CsvCell(path, e.pointer) : JsonNumber(path, e.pointer);
    if (v) {
      c.found = true;
      c.obtained = *v;
      c.within = std::abs(c.obtained - e.expected) <= e.tolerance;
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
