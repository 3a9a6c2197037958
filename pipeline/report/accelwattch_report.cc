#include "report/accelwattch_report.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "io/csv_reader.h"
#include "util/errors.h"

namespace wattcal {
namespace {

// Columns every breakdown has besides the components (AccelWattchPredictionsToCsv).
const std::vector<std::string>& RequiredColumns() {
  static const std::vector<std::string> columns = {"kernel",      "benchmark",  "f_core_mhz",
                                                   "predicted_w", "measured_w", "const_w",
                                                   "static_w",    "idle_w",     "dynamic_w"};
  return columns;
}

// The power columns that are not components.
bool IsTermColumn(const std::string& name) {
  return name == "predicted_w" || name == "measured_w" || name == "const_w" || name == "static_w" ||
         name == "idle_w" || name == "dynamic_w";
}

bool IsComponentColumn(const std::string& name) {
  return name.size() > 2 && name.compare(name.size() - 2, 2, "_w") == 0 && !IsTermColumn(name);
}

// Clocks written by the same formatter compare equal; this absorbs a parse's last bit.
bool SameClock(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(a)); }

// `k` indices of 0..n-1 spread evenly, both ends included (all when k >= n).
std::vector<size_t> SpreadIndices(size_t n, size_t k) {
  std::vector<size_t> picked;
  if (k >= n) {
    for (size_t i = 0; i < n; ++i) picked.push_back(i);
    return picked;
  }
  std::set<size_t> unique;
  for (size_t i = 0; i < k; ++i) {
    unique.insert(k == 1 ? n / 2 : (i * (n - 1) + (k - 1) / 2) / (k - 1));
  }
  return {unique.begin(), unique.end()};
}

}  // namespace

bool LooksLikeAccelWattchBreakdownCsv(const std::string& path) {
  std::ifstream in(path);
  std::string header;
  if (!in || !std::getline(in, header)) return false;
  if (!header.empty() && header.back() == '\r') header.pop_back();
  std::set<std::string> names;
  size_t components = 0;
  size_t start = 0;
  while (start <= header.size()) {
    const size_t comma = std::min(header.find(',', start), header.size());
    const std::string name = header.substr(start, comma - start);
    names.insert(name);
    components += IsComponentColumn(name);
    start = comma + 1;
  }
  for (const std::string& c : RequiredColumns()) {
    if (names.count(c) == 0) return false;
  }
  return components > 0;
}

AccelWattchBreakdownTable ReadAccelWattchBreakdownCsv(const std::string& path) {
  CsvReader reader(path);
  std::vector<std::string> fields;
  if (!reader.Next(&fields)) reader.Fail("", "empty file: expected a breakdown header");
  AccelWattchBreakdownTable table;
  table.path = path;
  std::map<std::string, size_t> column;
  std::vector<size_t> component_columns;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (!column.emplace(fields[i], i).second) reader.Fail(fields[i], "column named twice");
    if (IsComponentColumn(fields[i])) {
      table.components.push_back(fields[i].substr(0, fields[i].size() - 2));
      component_columns.push_back(i);
    }
  }
  for (const std::string& c : RequiredColumns()) {
    if (column.count(c) == 0) {
      reader.Fail(c,
                  "missing column (expected the header wattcal-predict --breakdown writes for "
                  "an AccelWattch model)");
    }
  }
  if (table.components.empty()) {
    reader.Fail("", "no <COMPONENT>_w column (expected one per dynamic component)");
  }
  const auto at = [&](const std::string& name) -> const std::string& {
    return fields[column.at(name)];
  };
  const auto optional = [&](const std::string& name) {
    const std::string& cell = at(name);
    return cell.empty() ? AccelWattchBreakdownRow::kNaN : reader.ParseNumber(cell, name);
  };
  while (reader.Next(&fields)) {
    if (fields.size() != column.size()) {
      reader.Fail("", fmt::format("{} fields, the header has {}", fields.size(), column.size()));
    }
    AccelWattchBreakdownRow row;
    row.line = reader.line();
    row.kernel = at("kernel");
    row.benchmark = at("benchmark");
    if (row.kernel.empty()) reader.Fail("kernel", "empty kernel name");
    if (row.benchmark.empty()) reader.Fail("benchmark", "empty benchmark name");
    row.f_core_mhz = reader.ParseNumber(at("f_core_mhz"), "f_core_mhz");
    if (!(row.f_core_mhz > 0.0)) reader.Fail("f_core_mhz", at("f_core_mhz") + " must be > 0");
    if (column.count("f_mem_mhz")) row.f_mem_mhz = optional("f_mem_mhz");
    row.predicted_w = reader.ParseNumber(at("predicted_w"), "predicted_w");
    row.measured_w = optional("measured_w");
    if (column.count("error_pct")) row.error_pct = optional("error_pct");
    row.const_w = reader.ParseNumber(at("const_w"), "const_w");
    row.static_w = reader.ParseNumber(at("static_w"), "static_w");
    row.idle_w = reader.ParseNumber(at("idle_w"), "idle_w");
    row.dynamic_w = reader.ParseNumber(at("dynamic_w"), "dynamic_w");
    for (size_t k = 0; k < component_columns.size(); ++k) {
      row.component_w.push_back(
          reader.ParseNumber(fields[component_columns[k]], table.components[k] + "_w"));
    }
    table.rows.push_back(std::move(row));
  }
  if (table.rows.empty()) throw InputError(path, reader.line(), "", "no breakdown rows");
  return table;
}

std::vector<ClockSplit> SplitByCoreClock(const AccelWattchBreakdownTable& table) {
  std::vector<ClockSplit> splits;
  std::vector<double> ape_sum;
  for (const AccelWattchBreakdownRow& row : table.rows) {
    auto it = std::find_if(splits.begin(), splits.end(), [&](const ClockSplit& s) {
      return SameClock(s.f_core_mhz, row.f_core_mhz);
    });
    if (it == splits.end()) {
      ClockSplit s;
      s.f_core_mhz = row.f_core_mhz;
      splits.push_back(s);
      ape_sum.push_back(0.0);
      it = splits.end() - 1;
    }
    ClockSplit& s = *it;
    ++s.kernels;
    s.const_w += row.const_w;
    s.static_w += row.static_w;
    s.idle_w += row.idle_w;
    s.dynamic_w += row.dynamic_w;
    s.predicted_w += row.predicted_w;
    if (std::isfinite(row.measured_w) && row.measured_w > 0.0) {
      ++s.measured_kernels;
      ape_sum[static_cast<size_t>(it - splits.begin())] +=
          100.0 * std::abs(row.predicted_w - row.measured_w) / row.measured_w;
    }
  }
  for (size_t i = 0; i < splits.size(); ++i) {
    ClockSplit& s = splits[i];
    const double n = static_cast<double>(s.kernels);
    s.const_w /= n;
    s.static_w /= n;
    s.idle_w /= n;
    s.dynamic_w /= n;
    s.predicted_w /= n;
    if (s.measured_kernels > 0) s.mape_pct = ape_sum[i] / static_cast<double>(s.measured_kernels);
  }
  std::sort(splits.begin(), splits.end(),
            [](const ClockSplit& a, const ClockSplit& b) { return a.f_core_mhz < b.f_core_mhz; });
  return splits;
}

BreakdownChart ClockSplitChart(const std::vector<ClockSplit>& splits, size_t max_bars) {
  BreakdownChart chart;
  chart.terms = {"constant", "static (active SMs)", "idle SMs", "dynamic"};
  chart.grey_terms = 3;
  chart.average_bar = false;
  chart.horizontal_labels = true;
  chart.x_label = "Core clock (MHz)";
  for (size_t i : SpreadIndices(splits.size(), std::max<size_t>(1, max_bars))) {
    const ClockSplit& s = splits[i];
    BreakdownBar bar;
    bar.label = fmt::format("{:g}", s.f_core_mhz);
    bar.term_w = {s.const_w, s.static_w, s.idle_w, s.dynamic_w};
    chart.bars.push_back(std::move(bar));
  }
  return chart;
}

double ChooseReferenceClock(const AccelWattchBreakdownTable& table, double preferred_mhz,
                            std::string* why) {
  const std::vector<ClockSplit> splits = SplitByCoreClock(table);
  std::string reason;
  double chosen = splits.empty() ? 0.0 : splits.back().f_core_mhz;
  reason = "the highest clock evaluated";
  bool found = false;
  for (const ClockSplit& s : splits) {
    if (std::isfinite(preferred_mhz) && SameClock(s.f_core_mhz, preferred_mhz)) {
      chosen = s.f_core_mhz;
      reason = "the energy estimates' reference clock";
      found = true;
    }
  }
  if (!found) {
    int most = 0;
    for (const ClockSplit& s : splits) {
      if (s.measured_kernels > most) {
        most = s.measured_kernels;
        chosen = s.f_core_mhz;
        reason = "the clock most kernels were measured at";
      }
    }
  }
  if (why != nullptr) *why = reason;
  return chosen;
}

BreakdownChart DynamicByBenchmarkChart(const AccelWattchBreakdownTable& table, double f_core_mhz,
                                       size_t max_benchmarks, size_t* benchmarks_total) {
  const size_t n_components = table.components.size();
  struct Sum {
    std::string benchmark;
    std::vector<double> w;
    int kernels = 0;
    double total_w = 0.0;
  };
  std::vector<Sum> sums;
  std::vector<double> all(n_components, 0.0);
  int kernels = 0;
  for (const AccelWattchBreakdownRow& row : table.rows) {
    if (!SameClock(row.f_core_mhz, f_core_mhz)) continue;
    auto it = std::find_if(sums.begin(), sums.end(),
                           [&](const Sum& s) { return s.benchmark == row.benchmark; });
    if (it == sums.end()) {
      sums.push_back({row.benchmark, std::vector<double>(n_components, 0.0), 0, 0.0});
      it = sums.end() - 1;
    }
    ++it->kernels;
    ++kernels;
    for (size_t c = 0; c < n_components && c < row.component_w.size(); ++c) {
      it->w[c] += row.component_w[c];
      all[c] += row.component_w[c];
    }
  }
  if (sums.empty()) {
    throw std::invalid_argument(
        fmt::format("{}: no kernel evaluated at {:g} MHz", table.path, f_core_mhz));
  }
  for (Sum& s : sums) {
    for (double& w : s.w) w /= static_cast<double>(s.kernels);
    for (double w : s.w) s.total_w += w;
  }
  for (double& w : all) w /= static_cast<double>(kernels);
  if (benchmarks_total != nullptr) *benchmarks_total = sums.size();
  std::stable_sort(sums.begin(), sums.end(),
                   [](const Sum& a, const Sum& b) { return a.total_w < b.total_w; });
  std::vector<Sum> drawn;
  for (size_t i : SpreadIndices(sums.size(), std::max<size_t>(1, max_benchmarks)))
    drawn.push_back(sums[i]);
  // Components with power somewhere.
  std::vector<size_t> kept;
  for (size_t c = 0; c < n_components; ++c) {
    bool any = all[c] > 0.0;
    for (const Sum& s : drawn) any = any || s.w[c] > 0.0;
    if (any) kept.push_back(c);
  }
  if (kept.empty()) kept.push_back(0);  // all zero: draw one (empty) term
  BreakdownChart chart;
  for (size_t c : kept) chart.terms.push_back(table.components[c]);
  for (const Sum& s : drawn) {
    BreakdownBar bar;
    bar.label = s.benchmark;
    for (size_t c : kept) bar.term_w.push_back(s.w[c]);
    chart.bars.push_back(std::move(bar));
  }
  for (size_t c : kept) chart.average_term_w.push_back(all[c]);
  chart.average_label = "all kernels";
  chart.pair_label = fmt::format("{:g} MHz", f_core_mhz);
  return chart;
}

std::map<std::string, double> ExpectedScalingFactors(const std::string& path,
                                                     const nlohmann::json& truth) {
  std::map<std::string, double> factors;
  if (!truth.is_object() || !truth.contains("expected_scaling_factors") ||
      !truth["expected_scaling_factors"].is_object()) {
    return factors;
  }
  for (const auto& [component, x] : truth["expected_scaling_factors"].items()) {
    if (!x.is_number()) {
      throw InputError(path, 0, "expected_scaling_factors." + component, "expected a number");
    }
    factors[component] = x.get<double>();
  }
  return factors;
}

}  // namespace wattcal
