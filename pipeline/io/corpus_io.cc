#include "io/corpus_io.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include "io/units.h"
#include "util/bounds.h"
#include "util/errors.h"
#include "util/option_rule.h"
#include "util/row_order.h"
#include "util/logging.h"
#include "util/strings.h"
#include "util/text_input.h"

namespace wattcal {
namespace {

constexpr const char* kDomainNames[2] = {"core", "mem"};
// Largest board power limit accepted in a preamble, W (a GPU board, not a node).
constexpr double kMaxPowerLimitW = 10000.0;
// How many utilisations above 1 the warning lists by location.
constexpr size_t kMaxListedOverOne = 10;

std::string FreqField(int d) { return fmt::format("f_{}_mhz", kDomainNames[d]); }

// Parses a whole non-negative integer (e.g. a count in the gpmTOOL header).
int ParseCount(const CsvReader& reader, const std::string& cell, const std::string& field,
               const std::string& what) {
  const double value = reader.ParseNumber(cell, field);
  if (value < 0 || value != std::floor(value) || value > 1e6) {
    reader.Fail(field, fmt::format("expected {} as a whole number >= 0, got '{}'", what, cell));
  }
  return static_cast<int>(value);
}

// Collects utilisations above 1 (kept as read) for a single warning per file.
class OverOneWarning {
 public:
  void Add(const std::string& path, int64_t line, const std::string& component, double value) {
    if (listed_.size() < kMaxListedOverOne) {
      listed_.push_back(fmt::format("{}:{} {}={}", path, line, component, value));
    }
    ++count_;
  }

  void Emit() const {
    if (count_ == 0) return;
    std::string message = fmt::format(
        "{} utilisation value(s) above {} (kept as read, not clipped; above {} is an "
        "error): ",
        count_, kUtilisationWarnAbove, kMaxUtilisation);
    for (size_t i = 0; i < listed_.size(); ++i) message += (i > 0 ? ", " : "") + listed_[i];
    if (count_ > static_cast<int64_t>(listed_.size())) {
      message += fmt::format(", and {} more", count_ - static_cast<int64_t>(listed_.size()));
    }
    LogWarning(message);
  }

 private:
  std::vector<std::string> listed_;
  int64_t count_ = 0;
};

// Rows as they are read, before they become the corpus's Eigen matrices.
struct RowBuffer {
  // Number of frequency columns per row (0 or the number of domains).
  int num_freq = 0;
  // Number of utilisation columns per row.
  int num_util = 0;
  // Whether rows carry a power value.
  bool has_power = false;
  // Whether rows carry window flags (a `flags` column).
  bool has_flags = false;
  // Per row: benchmark name.
  std::vector<std::string> benchmark;
  // Per row: power in W (empty without power).
  std::vector<double> power_w;
  // Row-major frequencies in MHz, num_freq per row.
  std::vector<double> freq_mhz;
  // Row-major utilisations, num_util per row.
  std::vector<double> util_frac;
  // Per row: window flags, semicolon-separated (empty without a flags column).
  std::vector<std::string> flags;
  // Per row: duration_s and energy_j (empty without those columns).
  bool has_energy = false;
  std::vector<double> duration_s, energy_j;
  // Per row: 1-based line.
  std::vector<int64_t> line;

  int rows() const { return static_cast<int>(line.size()); }

  void MoveInto(Corpus* corpus) {
    using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const int n = rows();
    corpus->benchmark = std::move(benchmark);
    corpus->line = std::move(line);
    corpus->flags = has_flags ? std::move(flags) : std::vector<std::string>();
    corpus->duration_s = has_energy ? std::move(duration_s) : std::vector<double>();
    corpus->energy_j = has_energy ? std::move(energy_j) : std::vector<double>();
    corpus->power_w = has_power ? Eigen::VectorXd(Eigen::Map<Eigen::VectorXd>(power_w.data(), n))
                                : Eigen::VectorXd();
    corpus->freq_mhz = Eigen::Map<RowMajor>(freq_mhz.data(), n, num_freq);
    corpus->util_frac = Eigen::Map<RowMajor>(util_frac.data(), n, num_util);
  }
};

// Reads one utilisation cell: a finite number in [0, kMaxUtilisation] (util/bounds.h); values
// above kUtilisationWarnAbove are kept and noted for the warning.
double ReadUtil(const CsvReader& reader, const std::string& cell, const std::string& field,
                const std::string& component, OverOneWarning* over_one) {
  const double u = reader.ParseNumber(cell, field);
  if (u < 0) reader.Fail(field, fmt::format("utilisation must be >= 0, got {}", cell));
  reader.CheckBound(u, field, PhysicalQuantity::kUtilisation);
  if (u > kUtilisationWarnAbove) over_one->Add(reader.path(), reader.line(), component, u);
  return u;
}

// Reads a value > 0 (in `unit`'s canonical unit) within the physical bound of `quantity`.
double ReadPositive(const CsvReader& reader, const std::string& cell, const std::string& field,
                    const char* what, PhysicalQuantity quantity,
                    const UnitFactor& unit = UnitFactor()) {
  double value = reader.ParseNumber(cell, field);
  if (value <= 0) reader.Fail(field, fmt::format("{} must be > 0, got {}", what, cell));
  if (!unit.IsIdentity()) value *= unit.multiply / unit.divide;  // as CsvReader::ParseBounded
  reader.CheckBound(value, field, quantity);
  return value;
}

// Reads one `flags` cell: "" or flag names (letters, digits, '_') joined by ';'.
std::string ReadFlags(const CsvReader& reader, const std::string& cell, const std::string& field) {
  size_t begin = 0;
  while (!cell.empty() && begin <= cell.size()) {
    const size_t end = std::min(cell.find(';', begin), cell.size());
    const std::string flag = cell.substr(begin, end - begin);
    const bool ok = !flag.empty() && std::all_of(flag.begin(), flag.end(), [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
    });
    if (!ok) {
      reader.Fail(field, fmt::format("expected flag names (letters, digits, '_') separated by ';', "
                                     "e.g. '{};{}', got '{}'",
                                     kCorpusFlagPowerCap, kCorpusFlagClockMoved, cell));
    }
    begin = end + 1;
  }
  return cell;
}

// Names training rows by benchmark: identical utilisation vectors are one microbenchmark.
void NameTrainingRows(const RowBuffer& rows, std::vector<std::string>* names) {
  // Groups of identical utilisation rows by sorting indices (util/row_order.h), numbered in
  // order of first appearance: what a map keyed by the rows gave, without an allocation per row.
  const int n = rows.rows();
  const std::vector<int> order = LexicographicRowOrder(rows.util_frac, rows.num_util);
  std::vector<int> run_of(n), run_first;  // each row's run; each run's first (smallest) row
  for (size_t k = 0; k < order.size(); ++k) {
    if (k == 0 || !RowEquivalent(rows.util_frac, rows.num_util, order[k - 1], order[k])) {
      run_first.push_back(order[k]);  // equivalent rows sort by index: the first is the smallest
    }
    run_of[order[k]] = static_cast<int>(run_first.size()) - 1;
  }
  std::vector<int> runs_by_first(run_first.size());
  std::iota(runs_by_first.begin(), runs_by_first.end(), 0);
  std::sort(runs_by_first.begin(), runs_by_first.end(),
            [&](int a, int b) { return run_first[a] < run_first[b]; });
  std::vector<int> id_of_run(run_first.size());
  for (size_t i = 0; i < runs_by_first.size(); ++i)
    id_of_run[runs_by_first[i]] = static_cast<int>(i);
  std::vector<int> group(n);
  for (int r = 0; r < n; ++r) group[r] = id_of_run[run_of[r]];
  const size_t groups = run_first.size();
  const int digits = std::max<int>(3, static_cast<int>(std::to_string(groups).size()));
  names->resize(rows.rows());
  for (int r = 0; r < rows.rows(); ++r) {
    (*names)[r] = fmt::format("micro_{:0{}d}", group[r] + 1, digits);
  }
}

Corpus ReadGpmtoolCorpus(const std::string& path) {
  CsvReader reader(path);
  Corpus corpus;
  corpus.path = path;
  corpus.layout = ReadGpmtoolHeader(&reader);
  const int64_t header_end_line = reader.line();
  const int num_domains = corpus.layout.num_domains();
  const int n = corpus.layout.num_components();
  const std::vector<std::string> names = corpus.layout.ComponentNames();
  std::vector<std::string> util_fields;
  for (const std::string& name : names) util_fields.push_back("U[" + name + "]");

  const size_t training_width = 1 + num_domains + n;
  const size_t measured_width = 2 + num_domains + n;
  const size_t activity_width = 1 + n;

  RowBuffer rows;
  rows.num_util = n;
  OverOneWarning over_one;
  size_t width = 0;
  int64_t first_row_line = 0;
  std::vector<std::string> fields;
  while (reader.Next(&fields)) {
    if (width == 0) {
      width = fields.size();
      first_row_line = reader.line();
      if (width == training_width) {
        corpus.kind = CorpusKind::kTraining;
      } else if (width == measured_width) {
        corpus.kind = CorpusKind::kMeasured;
      } else if (width == activity_width) {
        corpus.kind = CorpusKind::kActivity;
      } else {
        reader.Fail(
            "",
            fmt::format(
                "wrong column count: for {} domain(s) and {} components expected {} fields "
                "(training: P,f,U), {} (measured: name,P,f,U) or {} (prediction: name,U), got {}",
                num_domains, n, training_width, measured_width, activity_width, width));
      }
      rows.has_power = corpus.kind != CorpusKind::kActivity;
      rows.num_freq = rows.has_power ? num_domains : 0;
    } else if (fields.size() != width) {
      reader.Fail("", fmt::format("wrong column count: expected {} fields (as on line {}), got {}",
                                  width, first_row_line, fields.size()));
    }
    size_t c = 0;
    if (corpus.kind != CorpusKind::kTraining) {
      if (fields[c].empty()) reader.Fail("benchmark", "empty benchmark name");
      rows.benchmark.push_back(fields[c++]);
    }
    if (rows.has_power) {
      rows.power_w.push_back(
          ReadPositive(reader, fields[c++], "power_w", "power", PhysicalQuantity::kPower));
      for (int d = 0; d < num_domains; ++d) {
        rows.freq_mhz.push_back(ReadPositive(reader, fields[c++], FreqField(d), "frequency",
                                             PhysicalQuantity::kFrequency));
      }
    }
    for (int i = 0; i < n; ++i) {
      rows.util_frac.push_back(ReadUtil(reader, fields[c++], util_fields[i], names[i], &over_one));
    }
    rows.line.push_back(reader.line());
  }
  if (rows.rows() == 0) {
    throw InputError(path, header_end_line, "", "no data rows after the 4-line gpmTOOL header");
  }
  if (corpus.kind == CorpusKind::kTraining) NameTrainingRows(rows, &rows.benchmark);
  rows.MoveInto(&corpus);
  over_one.Emit();
  return corpus;
}

// What a column of a tidy file holds.
struct TidyColumn {
  enum Role { kPower, kFreq, kComponent, kFlags, kDuration, kEnergy } role = kComponent;
  // Header text as written (the field name in error messages).
  std::string header;
  // To W or MHz (io/units.h).
  UnitFactor factor;
  // kFreq: the domain; kComponent: the domain.
  int domain = 0;
  // kComponent: the component's name without its prefix.
  std::string component;
  // kComponent: column of Corpus::util_frac (set once all columns are known).
  int util_index = -1;
};

// A tidy header, classified: every column's role and where the single ones are.
struct TidyHeader {
  std::vector<TidyColumn> columns;
  int power_column = -1;
  int flags_column = -1;
  int duration_column = -1, energy_column = -1;
  int freq_column[2] = {-1, -1};
  std::vector<std::set<std::string>> seen_components = std::vector<std::set<std::string>>(2);
};

// The factor of a column named "<stem>_<unit>" with a unit of `dimension`; an unknown unit
// throws, naming the column and the units it may have.
UnitFactor TidyUnit(const CsvReader& reader, const std::string& header, const std::string& stem,
                    Dimension dimension) {
  const Unit* unit = MatchUnitColumn(header, stem, dimension);
  if (unit == nullptr) {
    reader.Fail(header, fmt::format("unknown unit in column '{}'; use one of {}", header,
                                    UnitColumnList(stem, dimension)));
  }
  return unit->to_canonical;
}

// A component column "core:NAME", "mem:NAME" or "NAME" (core): its domain and name; a
// component named twice in a domain throws.
void ClassifyTidyComponent(const CsvReader& reader, const std::string& name, TidyColumn* col,
                           TidyHeader* h) {
  col->role = TidyColumn::kComponent;
  col->component = name;
  const size_t colon = name.find(':');
  if (colon != std::string::npos) {
    const std::string prefix = ToLower(name.substr(0, colon));
    if (prefix == "core") {
      col->domain = 0;
    } else if (prefix == "mem") {
      col->domain = 1;
    } else {
      reader.Fail(name, fmt::format("unknown domain prefix '{}:'; component columns are "
                                    "core:NAME, mem:NAME or NAME (core)",
                                    name.substr(0, colon)));
    }
    col->component = name.substr(colon + 1);
    const size_t first = col->component.find_first_not_of(" \t");
    col->component = first == std::string::npos ? "" : col->component.substr(first);
    if (col->component.empty()) reader.Fail(name, "empty component name after the prefix");
  }
  if (!h->seen_components[col->domain].insert(CanonicalComponentName(col->component)).second) {
    reader.Fail(name, fmt::format("component '{}' appears twice in the {} domain", col->component,
                                  kDomainNames[col->domain]));
  }
}

// The roles of a tidy header's columns after the benchmark: flags, power_<unit>,
// f_core_<unit> / f_mem_<unit>, components.
TidyHeader ClassifyTidyHeader(const CsvReader& reader, const std::vector<std::string>& header) {
  TidyHeader h;
  h.columns.resize(header.size());
  for (size_t j = 1; j < header.size(); ++j) {
    TidyColumn& col = h.columns[j];
    col.header = header[j];
    const std::string lower = ToLower(header[j]);
    if (header[j].empty()) reader.Fail(fmt::format("column {}", j + 1), "empty column name");
    if (lower == "benchmark") reader.Fail(header[j], "a second benchmark column");
    if (lower == "flags") {
      col.role = TidyColumn::kFlags;
      if (h.flags_column >= 0) reader.Fail(header[j], "a second flags column");
      h.flags_column = static_cast<int>(j);
      continue;
    }
    if (lower == "duration_s" || lower == "energy_j") {
      const bool duration = lower == "duration_s";
      col.role = duration ? TidyColumn::kDuration : TidyColumn::kEnergy;
      int& column = duration ? h.duration_column : h.energy_column;
      if (column >= 0) reader.Fail(header[j], fmt::format("a second {} column", lower));
      column = static_cast<int>(j);
      continue;
    }
    if (StartsWith(lower, "power")) {
      col.role = TidyColumn::kPower;
      col.factor = TidyUnit(reader, header[j], "power", Dimension::kPower);
      if (h.power_column >= 0) {
        reader.Fail(header[j], fmt::format("a second power column (the first is '{}')",
                                           header[h.power_column]));
      }
      h.power_column = static_cast<int>(j);
      continue;
    }
    bool is_freq = false;
    for (int d = 0; d < 2; ++d) {
      const std::string prefix = std::string("f_") + kDomainNames[d];
      if (!StartsWith(lower, prefix)) continue;
      col.role = TidyColumn::kFreq;
      col.domain = d;
      col.factor = TidyUnit(reader, header[j], prefix, Dimension::kFrequency);
      if (h.freq_column[d] >= 0) {
        reader.Fail(header[j], fmt::format("a second {} frequency column (the first is '{}')",
                                           kDomainNames[d], header[h.freq_column[d]]));
      }
      h.freq_column[d] = static_cast<int>(j);
      is_freq = true;
    }
    if (!is_freq) ClassifyTidyComponent(reader, header[j], &col, &h);
  }
  return h;
}

// The corpus's layout from the header (core always, mem when the file has a memory frequency
// or memory components), each component column's index in it, and the frequency columns a
// file with power or frequencies needs.
void SetTidyLayout(const CsvReader& reader, TidyHeader* h, Corpus* corpus) {
  const bool has_mem = h->freq_column[1] >= 0 || !h->seen_components[1].empty();
  const int num_domains = has_mem ? 2 : 1;
  corpus->layout.domains.resize(num_domains);
  for (int d = 0; d < num_domains; ++d) corpus->layout.domains[d].name = kDomainNames[d];
  for (size_t j = 1; j < h->columns.size(); ++j) {
    const TidyColumn& col = h->columns[j];
    if (col.role == TidyColumn::kComponent) {
      corpus->layout.domains[col.domain].components.push_back(col.component);
    }
  }
  if (corpus->layout.num_components() == 0) {
    reader.Fail("", "no component (utilisation) columns in the header");
  }
  // Index of each component column in the layout's (domain by domain) order.
  int next_index = 0;
  for (int d = 0; d < num_domains; ++d) {
    for (size_t j = 1; j < h->columns.size(); ++j) {
      if (h->columns[j].role == TidyColumn::kComponent && h->columns[j].domain == d) {
        h->columns[j].util_index = next_index++;
      }
    }
  }
  const bool has_power = h->power_column >= 0;
  if (has_power || h->freq_column[0] >= 0 || h->freq_column[1] >= 0) {
    for (int d = 0; d < num_domains; ++d) {
      if (h->freq_column[d] >= 0) continue;
      const std::string why =
          has_power ? "a file with a power column needs one frequency column per domain"
                    : "frequency columns, when present, are needed for every domain";
      reader.Fail(FreqField(d), fmt::format("missing column {} ({}; the file has {} domain(s))",
                                            FreqField(d), why, num_domains));
    }
  }
}

// The rows of a tidy file into `rows` (sized by SetTidyLayout's layout).
void ReadTidyRows(CsvReader* reader, const std::vector<std::string>& header, const TidyHeader& h,
                  int64_t header_line, int num_domains, RowBuffer* rows, OverOneWarning* over_one) {
  std::vector<double> freq(num_domains), util(rows->num_util);
  std::vector<std::string> fields;
  while (reader->Next(&fields)) {
    if (fields.size() != header.size()) {
      reader->Fail("", fmt::format("wrong column count: expected {} fields (as in the header on "
                                   "line {}), got {}",
                                   header.size(), header_line, fields.size()));
    }
    if (fields[0].empty()) reader->Fail(header[0], "empty benchmark name");
    double power_w = 0.0;
    double duration_s = std::numeric_limits<double>::quiet_NaN(), energy_j = duration_s;
    std::string flags;
    for (size_t j = 1; j < fields.size(); ++j) {
      const TidyColumn& col = h.columns[j];
      switch (col.role) {
        case TidyColumn::kPower:
          power_w = ReadPositive(*reader, fields[j], col.header, "power", PhysicalQuantity::kPower,
                                 col.factor);
          break;
        case TidyColumn::kFreq: {
          double f = ReadPositive(*reader, fields[j], col.header, "frequency",
                                  PhysicalQuantity::kFrequency, col.factor);
          // Unit conversion to a 1 Hz grid, so that 1.164 GHz reads as exactly 1164 MHz.
          if (!col.factor.IsIdentity()) f = std::round(f * 1e6) / 1e6;
          freq[col.domain] = f;
          break;
        }
        case TidyColumn::kComponent:
          util[col.util_index] = ReadUtil(*reader, fields[j], col.header, col.component, over_one);
          break;
        case TidyColumn::kFlags: flags = ReadFlags(*reader, fields[j], col.header); break;
        case TidyColumn::kDuration:
          if (!fields[j].empty())
            duration_s = ReadPositive(*reader, fields[j], col.header, "duration",
                                      PhysicalQuantity::kDuration);
          break;
        case TidyColumn::kEnergy:
          if (!fields[j].empty())
            energy_j =
                ReadPositive(*reader, fields[j], col.header, "energy", PhysicalQuantity::kEnergy);
          break;
      }
    }
    rows->benchmark.push_back(fields[0]);
    if (rows->has_power) rows->power_w.push_back(power_w);
    if (rows->has_flags) rows->flags.push_back(flags);
    if (rows->has_energy)
      rows->duration_s.push_back(duration_s), rows->energy_j.push_back(energy_j);
    if (rows->num_freq > 0) rows->freq_mhz.insert(rows->freq_mhz.end(), freq.begin(), freq.end());
    rows->util_frac.insert(rows->util_frac.end(), util.begin(), util.end());
    rows->line.push_back(reader->line());
  }
}

// Default frequencies: the options', else the file's single frequency of the domain (more
// than one throws: the reference V-F pair cannot be inferred).
void SetTidyDefaults(const std::string& path, const TidyHeader& h, const RowBuffer& rows,
                     const CorpusReadOptions& options, Corpus* corpus) {
  const int num_domains = corpus->layout.num_domains();
  const double option_default[2] = {options.default_core_mhz, options.default_mem_mhz};
  for (int d = 0; d < num_domains; ++d) {
    double& default_mhz = corpus->layout.domains[d].default_freq_mhz;
    if (option_default[d] > 0) {
      default_mhz = option_default[d];
      continue;
    }
    if (rows.num_freq == 0) continue;  // activity without frequencies: unknown (0)
    default_mhz = rows.freq_mhz[d];
    for (int r = 1; r < rows.rows(); ++r) {
      const double f = rows.freq_mhz[static_cast<size_t>(r) * num_domains + d];
      if (f == default_mhz) continue;
      throw InputError(
          path, rows.line[r], h.columns[h.freq_column[d]].header,
          fmt::format("the file holds more than one {} frequency ({} MHz on line {}, {} MHz "
                      "here), so the default (reference) V-F pair cannot be inferred; pass {}",
                      kDomainNames[d], default_mhz, rows.line[0], f,
                      num_domains == 2 ? "--default-core-mhz and --default-mem-mhz"
                                       : "--default-core-mhz"));
    }
  }
}

Corpus ReadTidyCorpus(CsvReader* reader, const std::vector<std::string>& header,
                      const CorpusReadOptions& options) {
  Corpus corpus;
  corpus.path = reader->path();
  const int64_t header_line = reader->line();
  TidyHeader h = ClassifyTidyHeader(*reader, header);
  SetTidyLayout(*reader, &h, &corpus);
  const int num_domains = corpus.layout.num_domains();
  const bool has_power = h.power_column >= 0;
  const bool any_freq = h.freq_column[0] >= 0 || h.freq_column[1] >= 0;
  corpus.kind = has_power ? CorpusKind::kMeasured : CorpusKind::kActivity;
  corpus.components_line = 1;
  corpus.defaults_line = 0;

  RowBuffer rows;
  rows.has_power = has_power;
  rows.has_flags = h.flags_column >= 0;
  if ((h.duration_column >= 0) != (h.energy_column >= 0)) {
    reader->Fail(header[std::max(h.duration_column, h.energy_column)],
                 "duration_s and energy_j go together (the windows' length as they ran and their "
                 "energy over it): give both or neither");
  }
  rows.has_energy = h.duration_column >= 0;
  rows.num_freq = any_freq ? num_domains : 0;
  rows.num_util = corpus.layout.num_components();
  OverOneWarning over_one;
  ReadTidyRows(reader, header, h, header_line, num_domains, &rows, &over_one);
  if (rows.rows() == 0) {
    throw InputError(corpus.path, header_line, "", "no data rows after the header");
  }
  SetTidyDefaults(corpus.path, h, rows, options, &corpus);
  rows.MoveInto(&corpus);
  over_one.Emit();
  return corpus;
}

}  // namespace

bool CorpusReadOptions::Check(std::string* error) const {
  const std::pair<const char*, double> fields[] = {{"default_core_mhz", default_core_mhz},
                                                   {"default_mem_mhz", default_mem_mhz}};
  for (const auto& [name, value] : fields) {
    if (!std::isfinite(value) || value < 0)
      return RejectOption(error,
                          "{} = {} must be a finite frequency >= 0 MHz (0 = infer from the file)",
                          name, value);
  }
  return true;
}

Layout ReadGpmtoolHeader(CsvReader* reader) {
  std::vector<std::string> fields;
  auto next_line = [&](int k) {
    if (reader->Next(&fields)) return;
    if (k == 1) throw InputError(reader->path(), 1, "", "the file is empty");
    throw InputError(
        reader->path(), reader->line(), fmt::format("header line {}", k),
        fmt::format("the file ends inside the 4-line gpmTOOL header (after line {})", k - 1));
  };

  next_line(1);
  if (!fields.empty()) StripUtf8ByteOrderMark(&fields[0]);
  if (fields.size() != 1) {
    reader->Fail("header line 1", fmt::format("expected one field, the number of frequency "
                                              "domains (1 or 2), got {} fields",
                                              fields.size()));
  }
  const int num_domains = ParseCount(*reader, fields[0], "header line 1", "the number of domains");
  if (num_domains != 1 && num_domains != 2) {
    reader->Fail("header line 1",
                 fmt::format("the number of frequency domains must be 1 or 2, got {}", fields[0]));
  }
  Layout layout;
  layout.domains.resize(num_domains);
  for (int d = 0; d < num_domains; ++d) layout.domains[d].name = kDomainNames[d];

  next_line(2);
  if (static_cast<int>(fields.size()) != num_domains) {
    reader->Fail("header line 2", fmt::format("expected {} default frequencies (one per domain), "
                                              "got {} fields",
                                              num_domains, fields.size()));
  }
  for (int d = 0; d < num_domains; ++d) {
    layout.domains[d].default_freq_mhz = ReadPositive(
        *reader, fields[d], "header line 2", "a default frequency", PhysicalQuantity::kFrequency);
  }

  next_line(3);
  if (static_cast<int>(fields.size()) != num_domains) {
    reader->Fail("header line 3", fmt::format("expected {} component counts (one per domain), "
                                              "got {} fields",
                                              num_domains, fields.size()));
  }
  std::vector<int> counts(num_domains);
  int total = 0;
  for (int d = 0; d < num_domains; ++d) {
    counts[d] = ParseCount(*reader, fields[d], "header line 3", "a component count");
    total += counts[d];
  }
  if (total == 0) reader->Fail("header line 3", "the header declares no components");

  next_line(4);
  if (static_cast<int>(fields.size()) != total) {
    std::string sum;
    for (int d = 0; d < num_domains; ++d) sum += (d > 0 ? "+" : "") + std::to_string(counts[d]);
    reader->Fail("header line 4", fmt::format("line 3 declares {} components ({}), this line "
                                              "names {}",
                                              total, sum, fields.size()));
  }
  std::set<std::string> seen;
  size_t k = 0;
  for (int d = 0; d < num_domains; ++d) {
    for (int i = 0; i < counts[d]; ++i, ++k) {
      if (fields[k].empty()) {
        reader->Fail("header line 4", fmt::format("component {} has an empty name", k + 1));
      }
      if (!seen.insert(CanonicalComponentName(fields[k])).second) {
        reader->Fail("header line 4", fmt::format("component '{}' is named twice", fields[k]));
      }
      layout.domains[d].components.push_back(fields[k]);
    }
  }
  return layout;
}

namespace {

// Tidy files may open with comment lines "# key=value ..." that state their default pair
// (wattcal-ingest writes "# wattcal-tidy default_f_core_mhz=975 default_f_mem_mhz=3505").
// The board's power limit is stated as power_limit_w=W (0 < W <= kMaxPowerLimitW).
// Returns the number of leading comment lines; fills the defaults the options leave at 0.
int ReadTidyPreamble(const std::string& path, CorpusReadOptions* options,
                     std::optional<double>* power_limit_w,
                     std::vector<std::string>* optional_components, std::string* gpu) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    if (lines == 0) StripUtf8ByteOrderMark(&line);
    if (line.empty() || line[0] != '#') break;
    ++lines;
    static const std::string kGpu = "# gpu:";
    if (line.rfind(kGpu, 0) == 0) {
      const size_t a = line.find_first_not_of(" \t", kGpu.size());
      const size_t b = line.find_last_not_of(" \t\r");
      *gpu = a == std::string::npos ? "" : line.substr(a, b - a + 1);
      continue;
    }
    static const std::string kOptional = "# optional components:";
    if (line.rfind(kOptional, 0) == 0) {
      std::istringstream names(line.substr(kOptional.size()));
      for (std::string name; std::getline(names, name, ';');) {
        const size_t a = name.find_first_not_of(" \t\r");
        const size_t b = name.find_last_not_of(" \t\r");
        if (a != std::string::npos) optional_components->push_back(name.substr(a, b - a + 1));
      }
      continue;
    }
    std::istringstream tokens(line.substr(1));
    std::string token;
    while (tokens >> token) {
      const size_t eq = token.find('=');
      if (eq == std::string::npos) continue;
      const std::string key = token.substr(0, eq);
      if (key == "power_limit_w") {
        double value = 0.0;
        if (!ParseFiniteDouble(token.substr(eq + 1), &value) || !(value > 0.0) ||
            value > kMaxPowerLimitW) {
          throw InputError(path, lines, key,
                           fmt::format("expected a board power limit in W in (0, {}], got '{}'",
                                       kMaxPowerLimitW, token.substr(eq + 1)));
        }
        *power_limit_w = value;
        continue;
      }
      double* target = key == "default_f_core_mhz"  ? &options->default_core_mhz
                       : key == "default_f_mem_mhz" ? &options->default_mem_mhz
                                                    : nullptr;
      if (target == nullptr) continue;
      double value = 0.0;
      if (!ParseFiniteDouble(token.substr(eq + 1), &value) || value <= 0.0) {
        throw InputError(
            path, lines, key,
            "expected a positive frequency in MHz, got '" + token.substr(eq + 1) + "'");
      }
      if (*target == 0.0) *target = value;
    }
  }
  return lines;
}

}  // namespace

Corpus ReadCorpus(const std::string& path, const CorpusReadOptions& given_options) {
  std::string error;
  if (!given_options.Check(&error)) throw OptionError(error);
  CorpusReadOptions options = given_options;
  std::optional<double> power_limit_w;
  std::vector<std::string> optional_components;
  std::string gpu;
  const int preamble_lines =
      ReadTidyPreamble(path, &options, &power_limit_w, &optional_components, &gpu);
  std::vector<std::string> first;
  {
    CsvReader::Options csv_options;
    if (preamble_lines > 0) csv_options.comment = '#';
    CsvReader reader(path, csv_options);
    if (!reader.Next(&first)) throw InputError(path, 1, "", "the file is empty");
    if (ToLower(first[0]) == "benchmark") {
      const int64_t header_line = reader.line();
      Corpus corpus = ReadTidyCorpus(&reader, first, options);
      corpus.components_line = header_line;
      corpus.power_limit_w = power_limit_w;
      corpus.optional_components = optional_components;
      corpus.gpu = gpu;
      return corpus;
    }
    if (preamble_lines > 0) {
      throw InputError(path, 1, "", "comment lines are only allowed before a tidy CSV header");
    }
    if (first.size() != 1) {
      reader.Fail("header line 1",
                  fmt::format("expected a gpmTOOL header (line 1: the number of frequency "
                              "domains) or a tidy CSV header whose first column is 'benchmark', "
                              "got {} fields starting with '{}'",
                              first.size(), first[0]));
    }
  }
  return ReadGpmtoolCorpus(path);
}

std::string CorpusToTidyCsv(const Corpus& c) {
  const Layout& l = c.layout;
  std::string s;
  std::string preamble;
  if (l.num_domains() > 0 && l.domains[0].default_freq_mhz > 0.0) {
    preamble += fmt::format(" default_f_core_mhz={}", l.domains[0].default_freq_mhz);
    if (l.num_domains() > 1 && l.domains[1].default_freq_mhz > 0.0) {
      preamble += fmt::format(" default_f_mem_mhz={}", l.domains[1].default_freq_mhz);
    }
  }
  if (c.power_limit_w) preamble += fmt::format(" power_limit_w={}", *c.power_limit_w);
  if (!preamble.empty()) s += "# wattcal-tidy" + preamble + "\n";
  if (!c.optional_components.empty()) {
    s += "# optional components:";
    for (size_t i = 0; i < c.optional_components.size(); ++i)
      s += (i > 0 ? "; " : " ") + c.optional_components[i];
    s += "\n";
  }
  if (!c.gpu.empty()) {
    std::string name = c.gpu;  // one line, whatever the capture said
    for (char& ch : name) ch = static_cast<unsigned char>(ch) < 0x20 ? ' ' : ch;
    s += "# gpu: " + name + "\n";
  }
  auto field = [](const std::string& v) {
    if (v.find_first_of(",\"\n\r") == std::string::npos) return v;
    std::string q = "\"";
    for (char ch : v) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return q + "\"";
  };
  s += "benchmark";
  if (c.has_power()) s += ",power_w";
  if (c.has_freq()) s += l.num_domains() > 1 ? ",f_core_mhz,f_mem_mhz" : ",f_core_mhz";
  if (c.has_flags()) s += ",flags";
  if (c.has_energy()) s += ",duration_s,energy_j";
  for (const FrequencyDomain& d : l.domains) {
    for (const std::string& comp : d.components) s += "," + field(d.name + ":" + comp);
  }
  s += "\n";
  for (int r = 0; r < c.rows(); ++r) {
    s += field(c.benchmark[r]);
    if (c.has_power()) s += fmt::format(",{}", c.power_w(r));
    if (c.has_freq()) {
      for (int d = 0; d < l.num_domains(); ++d) s += fmt::format(",{}", c.freq_mhz(r, d));
    }
    if (c.has_flags()) s += "," + field(c.flags[r]);
    if (c.has_energy()) {
      for (double v : {c.duration_s[r], c.energy_j[r]})
        s += std::isfinite(v) ? fmt::format(",{}", v) : std::string(",");
    }
    for (int i = 0; i < l.num_components(); ++i) s += fmt::format(",{}", c.util_frac(r, i));
    s += "\n";
  }
  return s;
}

}  // namespace wattcal
