// Where a counter export's CSV starts, and its CSV part (the header, then the data rows),
// shared by the counter readers (counter_csv.cc). Internal to ingest/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/csv_reader.h"

namespace wattcal {
namespace counters_internal {
enum class HeaderKind { kNcu, kNvprof, kHwPerf };

struct CsvStart {
  HeaderKind kind = HeaderKind::kNcu;
  int64_t line = 0;
};

// The line of the profiler's CSV header and which tool wrote it; InputError when there is
// none (or Nsight Compute profiled no kernel).
CsvStart FindCsvStart(const std::string& path);

// The CSV part of a counter export: the header, then data rows, skipping tool messages
// ("==PROF== ...") and repeated headers.
class CounterCsv {
 public:
  CounterCsv(const std::string& path, const CsvStart& start);

  const std::vector<std::string>& header() const { return header_; }
  int64_t header_line() const { return header_line_; }
  CsvReader& reader() { return reader_; }

  // Index of column `name`, or -1.
  int Column(const std::string& name) const;
  int RequireColumn(const std::string& name);

  // Next data row with as many fields as the header; false at the end of the file.
  bool Next(std::vector<std::string>* fields);

 private:
  CsvReader reader_;
  std::vector<std::string> header_;
  int64_t header_line_ = 0;
};

}  // namespace counters_internal
}  // namespace wattcal
