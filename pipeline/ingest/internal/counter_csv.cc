#include "ingest/internal/counter_csv.h"

#include <fmt/format.h>

#include <fstream>

#include "ingest/internal/counter_cells.h"
#include "util/errors.h"
#include "util/strings.h"
#include "util/text_input.h"

namespace wattcal {
namespace counters_internal {

CsvStart FindCsvStart(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, 0, "", "cannot open file");
  std::string text;
  int64_t line = 0;
  int64_t no_kernels_line = 0;  // ncu's "==WARNING== No kernels were profiled."
  while (std::getline(in, text)) {
    ++line;
    if (line == 1) StripUtf8ByteOrderMark(&text);
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (StartsWith(text, "==") && text.find("No kernels were profiled") != std::string::npos)
      no_kernels_line = line;
    if (StartsWith(text, "\"ID\",")) return {HeaderKind::kNcu, line};
    if (StartsWith(text, "\"Device\",\"Kernel\",")) return {HeaderKind::kNvprof, line};
    if (StartsWith(text, "Benchmark,Kernel,") || StartsWith(text, "\"Benchmark\",\"Kernel\",")) {
      return {HeaderKind::kHwPerf, line};
    }
  }
  if (no_kernels_line > 0) {
    throw InputError(
        path, no_kernels_line, "",
        "Nsight Compute profiled no kernels ('No kernels were profiled'): the program "
        "launched none that its filters (--nvtx-include, --kernel-name, ...) let through");
  }
  throw InputError(path, 0, "",
                   "no profiler CSV found: expected a header line starting with \"ID\", (Nsight "
                   "Compute --csv), \"Device\",\"Kernel\", (nvprof --csv) or Benchmark,Kernel, "
                   "(AccelWattch hw_perf.csv)");
}

CounterCsv::CounterCsv(const std::string& path, const CsvStart& start) : reader_(path) {
  std::vector<std::string> fields;
  while (reader_.Next(&fields)) {
    if (reader_.line() < start.line) continue;
    if (!fields.empty()) StripUtf8ByteOrderMark(&fields[0]);
    const char* first = start.kind == HeaderKind::kNcu      ? "ID"
                        : start.kind == HeaderKind::kNvprof ? "Device"
                                                            : "Benchmark";
    if (reader_.line() != start.line || fields.empty() || fields[0] != first) {
      reader_.Fail("", fmt::format("the CSV header on line {} is hidden inside a quoted field "
                                   "that starts before it (an unbalanced '\"' in the text "
                                   "before the CSV?); remove that text or write the profiler "
                                   "output with --log-file",
                                   start.line));
    }
    header_ = fields;
    header_line_ = reader_.line();
    return;
  }
  throw InputError(path, start.line, "", "the CSV header line could not be read");
}

int CounterCsv::Column(const std::string& name) const {
  for (size_t j = 0; j < header_.size(); ++j) {
    if (header_[j] == name) return static_cast<int>(j);
  }
  return -1;
}

int CounterCsv::RequireColumn(const std::string& name) {
  const int j = Column(name);
  if (j < 0) {
    throw InputError(reader_.path(), header_line_, name,
                     fmt::format("missing column \"{}\" in the header", name));
  }
  return j;
}

bool CounterCsv::Next(std::vector<std::string>* fields) {
  while (reader_.Next(fields)) {
    if (!fields->empty() && StartsWith((*fields)[0], "==")) continue;  // tool message
    if (*fields == header_) continue;  // the header again (files appended with >>)
    if (fields->size() != header_.size()) {
      reader_.Fail("", fmt::format("{} row: expected {} fields as in the header on line {}, "
                                   "got {}",
                                   fields->size() < header_.size() ? "truncated" : "overlong",
                                   header_.size(), header_line_, fields->size()));
    }
    return true;
  }
  return false;
}

}  // namespace counters_internal
}  // namespace wattcal
