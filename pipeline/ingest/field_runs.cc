// Per-(application, clock) DCGM field tables (ingest/field_runs.h).
#include "ingest/field_runs.h"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "io/csv_reader.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/strings.h"

namespace wattcal {
namespace {

// The column of `field` in `header`; -1 when none.
int FieldColumn(const std::vector<std::string>& header, const KnownField& field) {
  std::string plain = field.name;
  for (const char* prefix : {"DCGM_FI_PROF_", "PIPE_"}) {
    if (StartsWith(plain, prefix)) plain = plain.substr(std::string_view(prefix).size());
  }
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == field.dmon_tag || ToLower(header[i]) == ToLower(plain)) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

int Required(const std::vector<std::string>& header, const std::string& name,
             const std::string& path, int64_t line) {
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return static_cast<int>(i);
  }
  throw InputError(path, line, name, "missing column");
}

double Number(const std::vector<std::string>& row, int column, const std::string& name,
              const std::string& path, int64_t line) {
  const std::string& cell = row[static_cast<size_t>(column)];
  char* end = nullptr;
  const double v = std::strtod(cell.c_str(), &end);
  if (cell.empty() || end != cell.c_str() + cell.size() || !std::isfinite(v)) {
    throw InputError(path, line, name, fmt::format("expected a number, got '{}'", cell));
  }
  return v;
}

}  // namespace

Corpus ReadFieldRuns(const std::string& path, const FieldSet& set) {
  CsvReader reader(path);
  std::vector<std::string> header;
  if (!reader.Next(&header)) throw InputError(path, 1, "", "empty file");
  const int app = Required(header, "application", path, reader.line());
  const int clock = Required(header, "sm_app_clock", path, reader.line());
  const int power = Required(header, "power_usage", path, reader.line());
  std::map<std::string, int> columns;  // field name -> column
  for (const std::string& name : set.Fields()) {
    const KnownField* f = FindKnownField(name);
    const int c = f != nullptr ? FieldColumn(header, *f) : -1;
    if (c < 0) throw InputError(path, reader.line(), name, "no column holds this field");
    columns[name] = c;
  }
  const int fp = FieldColumn(header, *FindKnownField("DCGM_FI_PROF_PIPE_FP32_ACTIVE"));
  const int fp64 = FieldColumn(header, *FindKnownField("DCGM_FI_PROF_PIPE_FP64_ACTIVE"));
  int fp_active = -1;
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == "fp_active") fp_active = static_cast<int>(i);
  }
  Corpus corpus;
  corpus.path = path;
  corpus.kind = CorpusKind::kMeasured;
  corpus.layout = set.ToLayout();
  std::vector<std::vector<double>> utils, freqs;
  std::vector<double> watts;
  int carried_fp64 = 0;
  std::vector<std::string> row;
  while (reader.Next(&row)) {
    const int64_t line = reader.line();
    if (row.size() != header.size()) {
      throw InputError(path, line, "",
                       fmt::format("{} cells, but the header names {}", row.size(), header.size()));
    }
    const bool fp32_dominant = fp_active >= 0 && fp >= 0 && fp64 >= 0 &&
                               row[fp_active] == row[fp] &&
                               Number(row, fp64, header[fp64], path, line) > 0;
    std::map<std::string, double> means;
    for (const auto& [name, c] : columns) {
      means[name] = (fp32_dominant && c == fp64) ? 0.0 : Number(row, c, header[c], path, line);
    }
    carried_fp64 += fp32_dominant && columns.count("DCGM_FI_PROF_PIPE_FP64_ACTIVE") > 0;
    std::vector<std::string> missing;
    utils.push_back(FieldUtilisations(set, means, &missing));
    corpus.benchmark.push_back(row[app]);
    corpus.line.push_back(line);
    watts.push_back(Number(row, power, "power_usage", path, line));
    freqs.push_back({Number(row, clock, "sm_app_clock", path, line), set.default_mem_mhz});
  }
  if (utils.empty()) throw InputError(path, 2, "", "no data row");
  const int domains = corpus.layout.num_domains();
  corpus.power_w.resize(static_cast<Eigen::Index>(utils.size()));
  corpus.freq_mhz.resize(static_cast<Eigen::Index>(utils.size()), domains);
  corpus.util_frac.resize(static_cast<Eigen::Index>(utils.size()),
                          static_cast<Eigen::Index>(set.components.size()));
  for (size_t r = 0; r < utils.size(); ++r) {
    const auto i = static_cast<Eigen::Index>(r);
    corpus.power_w(i) = watts[r];
    for (int d = 0; d < domains; ++d) corpus.freq_mhz(i, d) = freqs[r][static_cast<size_t>(d)];
    for (size_t c = 0; c < utils[r].size(); ++c) {
      corpus.util_frac(i, static_cast<Eigen::Index>(c)) = utils[r][c];
    }
  }
  if (carried_fp64 > 0) {
    LogWarning(
        fmt::format("{}: {} rows of FP32-dominant applications (fp_active = fp32_active) "
                    "carry a constant fp64_active; read as 0 (datasets/README.md §3)",
                    path, carried_fp64));
  }
  return corpus;
}

}  // namespace wattcal
