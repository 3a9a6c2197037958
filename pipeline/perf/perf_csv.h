// Small CSV helpers shared by the readers and writers of the perf module (counters, timelines,
// run times, DVFS choices): a header-to-column map that rejects unknown and duplicate columns,
// frequency columns in MHz, GHz or kHz recognised from the header, RFC 4180 quoting and one
// fixed number format, so every file the module writes is byte-identical across reruns.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "io/csv_reader.h"
#include "io/units.h"

namespace wattcal {

// The columns of a header row, by name. Built from the header read by `reader`; throws
// InputError (naming the header line and the column) for an empty, duplicate or unknown
// column name, and for a missing required one.
class PerfCsvColumns {
 public:
  // `required` must be present; `optional` may be. A frequency column given as "<stem>_mhz"
  // in either list is also recognised as "<stem>_ghz" or "<stem>_khz" and converted to MHz
  // by Frequency().
  PerfCsvColumns(const CsvReader& reader, const std::vector<std::string>& header,
                 const std::vector<std::string>& required,
                 const std::vector<std::string>& optional);

  bool Has(const std::string& name) const;
  // The cell of column `name` in `fields` (the record must have as many fields as the header;
  // check with CheckWidth first).
  const std::string& Cell(const std::vector<std::string>& fields, const std::string& name) const;
  // Throws InputError when `fields` has another width than the header.
  void CheckWidth(const CsvReader& reader, const std::vector<std::string>& fields) const;
  // A finite number from column `name`.
  double Number(const CsvReader& reader, const std::vector<std::string>& fields,
                const std::string& name) const;
  // A frequency in MHz from the "<stem>_mhz" column (or its GHz/kHz spelling), which must be
  // finite and > 0. The field named in errors is the column as written in the file.
  double FrequencyMhz(const CsvReader& reader, const std::vector<std::string>& fields,
                      const std::string& mhz_name) const;
  // The header spelling of column `name` (e.g. "base_ghz" for "base_mhz").
  const std::string& Spelling(const std::string& name) const;

 private:
  std::map<std::string, int> index_;             // canonical name -> column
  std::map<std::string, std::string> spelling_;  // canonical name -> as written
  std::map<std::string, UnitFactor> to_mhz_;     // canonical frequency name -> io/units.h factor
  size_t width_ = 0;
};

// A CSV field: quoted (RFC 4180) only when it contains a comma, a double quote or a line break.
std::string PerfCsvField(const std::string& text);

// The number format of every float the perf module writes: %.10g (shortest-looking, fixed
// digits, so reruns are byte-identical and values round-trip to 1e-10 relative).
std::string PerfCsvNumber(double value);

}  // namespace wattcal
