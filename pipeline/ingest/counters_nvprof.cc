// nvprof --metrics exports and AccelWattch's hw_perf.csv.
#include "ingest/counters.h"

#include <fmt/format.h>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <utility>

#include "ingest/internal/counter_cells.h"
#include "ingest/internal/counter_csv.h"
#include "ingest/internal/counter_readers.h"
#include "io/csv_reader.h"
#include "util/errors.h"
#include "util/strings.h"

namespace wattcal {
namespace counters_internal {

namespace {

// ----------------------------------------------------------------------------------------
// Aggregation over launches.

struct MetricAccumulator {
  double mean = 0.0;
  double weight = 0.0;  // launches (or invocations) contributing
  std::string base;     // kind of quantity, from the unit
  int64_t line = 0;     // first line with a value
};

struct KernelAccumulator {
  KernelCounters record;
  std::map<std::string, MetricAccumulator> metrics;
  std::set<std::string> launch_keys;
  int rows = 0;
};

class CounterTable {
 public:
  explicit CounterTable(std::string path) : path_(std::move(path)) {}

  KernelAccumulator& Kernel(const std::string& benchmark, const std::string& kernel, int64_t line) {
    const std::string key = benchmark + '\x1f' + kernel;
    auto it = index_.find(key);
    if (it == index_.end()) {
      it = index_.emplace(key, kernels_.size()).first;
      kernels_.emplace_back();
      KernelCounters& r = kernels_.back().record;
      r.kernel = kernel;
      r.benchmark = benchmark;
      r.path = path_;
      r.line = line;
    }
    return kernels_[it->second];
  }

  // Adds one value (already in base units) of `metric` with weight `weight`.
  void Add(KernelAccumulator* k, const std::string& metric, double value, double weight,
           const std::string& base, CsvReader& reader, const std::string& unit_field,
           const std::string& unit_text) {
    MetricAccumulator& m = k->metrics[metric];
    if (m.weight == 0.0) {
      m.base = base;
      m.line = reader.line();
    } else if (m.base != base) {
      reader.Fail(unit_field, fmt::format("metric '{}' is in '{}' ({}) here but was {} on line {}",
                                          metric, unit_text, base.empty() ? "a plain count" : base,
                                          m.base.empty() ? "a plain count" : m.base, m.line));
    }
    m.weight += weight;
    m.mean += weight * (value - m.mean) / m.weight;  // exact for identical values
    numeric_lines_.emplace(metric, reader.line());
  }

  // A non-numeric value of a metric without a unit: a text attribute, left out.
  void AddText(const std::string& metric, const std::string& text, const std::string& field,
               int64_t line) {
    text_cells_.emplace(metric, TextCell{text, field, line});
  }

  // Final records; launches from `launches_of`; each record's metric kinds in `bases` when
  // given.
  std::vector<KernelCounters> Finish(
      const std::function<int(const KernelAccumulator&)>& launches_of,
      std::vector<std::map<std::string, std::string>>* bases = nullptr) {
    for (const auto& [metric, cell] : text_cells_) {
      const auto numeric = numeric_lines_.find(metric);
      if (numeric == numeric_lines_.end()) continue;
      throw InputError(path_, cell.line, cell.field,
                       fmt::format("expected a number for metric '{}', got '{}' (the metric is "
                                   "numeric on line {})",
                                   metric, cell.text, numeric->second));
    }
    std::vector<KernelCounters> out;
    out.reserve(kernels_.size());
    for (KernelAccumulator& k : kernels_) {
      if (bases != nullptr) bases->emplace_back();
      for (const auto& [name, m] : k.metrics) {
        if (m.weight == 0.0) continue;
        k.record.metrics[name] = m.mean;
        if (bases != nullptr) bases->back()[name] = m.base;
      }
      k.record.launches = launches_of(k);
      out.push_back(std::move(k.record));
    }
    return out;
  }

  bool empty() const { return kernels_.empty(); }

 private:
  struct TextCell {
    std::string text;
    std::string field;
    int64_t line;
  };
  std::string path_;
  std::vector<KernelAccumulator> kernels_;
  std::map<std::string, size_t> index_;
  std::map<std::string, int64_t> numeric_lines_;  // metric -> first line with a number
  std::map<std::string, TextCell> text_cells_;    // metric -> first text value
};

}  // namespace

// ----------------------------------------------------------------------------------------
// nvprof.

// nvprof's utilisation levels: "Idle (0)", "Low (1)", "Mid (5)", "High (8)", "Max (10)",
// and ranges "Low (1..3)" (-> midpoint).
bool ParseNvprofLevel(const std::string& cell, double* level) {
  const std::string s = Trim(cell);
  const size_t open = s.find('(');
  if (open == std::string::npos || s.back() != ')') return false;
  const std::string word = ToLower(Trim(s.substr(0, open)));
  static const std::set<std::string> kWords = {"idle", "low", "mid", "high", "max"};
  if (kWords.count(word) == 0) return false;
  const std::string inside = s.substr(open + 1, s.size() - open - 2);
  const size_t dots = inside.find("..");
  double a = 0.0, b = 0.0;
  if (dots == std::string::npos) {
    if (!AllDigits(Trim(inside)) || !ParseFiniteDouble(inside, &a)) return false;
    *level = a;
    return true;
  }
  const std::string lo = Trim(inside.substr(0, dots)), hi = Trim(inside.substr(dots + 2));
  if (!AllDigits(lo) || !AllDigits(hi) || !ParseFiniteDouble(lo, &a) ||
      !ParseFiniteDouble(hi, &b)) {
    return false;
  }
  *level = 0.5 * (a + b);
  return true;
}

// Splits "24.048094GB/s" into "24.048094" and "GB/s".
void SplitUnitSuffix(const std::string& cell, std::string* number, std::string* suffix) {
  const std::string s = Trim(cell);
  size_t cut = s.size();
  while (cut > 0) {
    const char c = s[cut - 1];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '/' || c == '%') {
      --cut;
    } else {
      break;
    }
  }
  // An exponent's 'e' belongs to the number: "1.5e+09" has no suffix.
  *number = Trim(s.substr(0, cut));
  *suffix = s.substr(cut);
}

std::vector<KernelCounters> ReadNvprof(const std::string& path, const CsvStart& start,
                                       std::vector<std::map<std::string, std::string>>* bases) {
  CounterCsv csv(path, start);
  const int kernel_col = csv.RequireColumn("Kernel");
  const int invocations_col = csv.RequireColumn("Invocations");
  int name_col = csv.Column("Metric Name");
  if (name_col < 0) name_col = csv.Column("Event Name");
  if (name_col < 0) {
    throw InputError(path, csv.header_line(), "Metric Name",
                     "missing column \"Metric Name\" (nvprof --metrics) or \"Event Name\" "
                     "(nvprof --events) in the header");
  }
  const std::string name_field = csv.header()[name_col];
  const int avg_col = csv.RequireColumn("Avg");
  CsvReader& reader = csv.reader();

  Decimal decimal = Decimal::kDot;
  {
    CounterCsv pass1(path, start);
    DecimalDetector detector;
    std::vector<std::string> f;
    std::string number, suffix;
    while (pass1.Next(&f)) {
      SplitUnitSuffix(f[avg_col], &number, &suffix);
      detector.Observe(number, pass1.reader().line());
    }
    decimal = detector.Decide(path, "Avg");
  }

  CounterTable table(path);
  std::vector<std::string> f;
  while (csv.Next(&f)) {
    const std::string& kernel = f[kernel_col];
    if (kernel.empty()) reader.Fail("Kernel", "empty kernel name");
    const std::string& metric = f[name_col];
    if (metric.empty()) reader.Fail(name_field, "empty metric name");
    double invocations = 0.0;
    if (!AllDigits(Trim(f[invocations_col])) ||
        !ParseFiniteDouble(f[invocations_col], &invocations) || invocations < 1.0) {
      reader.Fail("Invocations",
                  fmt::format("expected a positive whole number, got '{}'", f[invocations_col]));
    }
    KernelAccumulator& k = table.Kernel("", kernel, reader.line());
    const std::string& cell = f[avg_col];
    if (IsAbsent(cell, false)) continue;
    double value = 0.0;
    if (ParseNvprofLevel(cell, &value)) {
      table.Add(&k, metric, value, invocations, "level", reader, "Avg", "level");
      continue;
    }
    std::string number, suffix;
    SplitUnitSuffix(cell, &number, &suffix);
    CounterUnit unit;
    if (!ParseCounterUnit(suffix, &unit)) {
      reader.Fail("Avg", fmt::format("unknown unit '{}' in '{}' of metric '{}'; known: {}", suffix,
                                     cell, metric, KnownUnitsText()));
    }
    if (!ParseGroupedNumber(number, decimal, &value)) {
      reader.Fail("Avg", fmt::format("expected a number for metric '{}', got '{}'", metric, cell));
    }
    table.Add(&k, metric, value * unit.multiply / unit.divide, invocations, unit.base, reader,
              "Avg", suffix);
  }
  if (table.empty())
    throw InputError(path, csv.header_line(), "", "no metric rows after the nvprof header");
  return table.Finish(
      [](const KernelAccumulator& k) {
        double most = 0.0;
        for (const auto& entry : k.metrics) most = std::max(most, entry.second.weight);
        return static_cast<int>(most);
      },
      bases);
}

// ----------------------------------------------------------------------------------------
// AccelWattch hw_perf.csv.

std::vector<KernelCounters> ReadHwPerf(const std::string& path, const CsvStart& start,
                                       std::vector<std::map<std::string, std::string>>* bases) {
  CounterCsv csv(path, start);
  const std::vector<std::string> header = csv.header();
  CsvReader& reader = csv.reader();
  for (size_t j = 2; j < header.size(); ++j) {
    if (Trim(header[j]).empty()) reader.Fail(fmt::format("column {}", j + 1), "empty column name");
  }
  CounterTable table(path);
  std::vector<std::string> f;
  while (csv.Next(&f)) {
    if (f[0].empty()) reader.Fail("Benchmark", "empty benchmark name");
    if (f[1].empty()) reader.Fail("Kernel", "empty kernel name");
    KernelAccumulator& k = table.Kernel(f[0], f[1], reader.line());
    ++k.rows;
    for (size_t j = 2; j < header.size(); ++j) {
      if (IsAbsent(f[j], true)) continue;
      double value = 0.0;
      if (!ParseFiniteDouble(f[j], &value)) {
        reader.Fail(header[j], fmt::format("expected a number, got '{}'", f[j]));
      }
      table.Add(&k, header[j], value, 1.0, "", reader, header[j], "");
    }
  }
  if (table.empty())
    throw InputError(path, csv.header_line(), "", "no kernel rows after the hw_perf header");
  return table.Finish([](const KernelAccumulator& k) { return k.rows; }, bases);
}

}  // namespace counters_internal
}  // namespace wattcal
