#include "perf/crisp_counters.h"

#include <cmath>
#include <map>

#include <fmt/format.h>

#include "io/csv_reader.h"
#include "perf/perf_csv.h"
#include "util/errors.h"

namespace wattcal {
namespace {

const std::vector<std::string>& RequiredColumns() {
  static const std::vector<std::string> columns = {
      "kernel",     "base_mhz",          "total_cycles",
      "lcp_cycles", "load_stall_cycles", "store_stall_cycles"};
  return columns;
}

// The optional counter fields, in OptionalCounterColumns() order.
std::vector<double CrispCounters::*> OptionalFields() {
  return {&CrispCounters::crit_cycles, &CrispCounters::lead_cycles, &CrispCounters::miss_cycles,
          &CrispCounters::stall_cycles, &CrispCounters::load_outstanding_cycles};
}

}  // namespace

const std::vector<std::string>& OptionalCounterColumns() {
  static const std::vector<std::string> columns = {"crit_cycles", "lead_cycles", "miss_cycles",
                                                   "stall_cycles", "load_outstanding_cycles"};
  return columns;
}

std::string CrispCounters::Inconsistency(std::string* field) const {
  auto fail = [field](const std::string& name, const std::string& message) {
    *field = name;
    return message;
  };
  if (!(std::isfinite(base_mhz) && base_mhz > 0.0)) {
    return fail("base_mhz", fmt::format("base_mhz = {} must be > 0", base_mhz));
  }
  const std::vector<std::pair<const char*, double>> counts = {
      {"total_cycles", total_cycles},
      {"lcp_cycles", lcp_cycles},
      {"load_stall_cycles", load_stall_cycles},
      {"store_stall_cycles", store_stall_cycles}};
  for (const auto& [name, value] : counts) {
    if (!(std::isfinite(value) && value >= 0.0)) {
      return fail(name, fmt::format("{} = {} must be a finite count >= 0", name, value));
    }
  }
  if (!(total_cycles > 0.0)) return fail("total_cycles", "total_cycles must be > 0");
  if (lcp_cycles > total_cycles) {
    return fail("lcp_cycles",
                fmt::format("lcp_cycles = {} exceeds total_cycles = {}", lcp_cycles, total_cycles));
  }
  if (load_stall_cycles > lcp_cycles) {
    return fail("load_stall_cycles",
                fmt::format("load_stall_cycles = {} exceeds lcp_cycles = {} (the adjusted load "
                            "critical path includes every load stall, §3.5)",
                            load_stall_cycles, lcp_cycles));
  }
  if (store_stall_cycles > total_cycles - lcp_cycles) {
    return fail("store_stall_cycles",
                fmt::format("store_stall_cycles = {} exceeds total_cycles - lcp_cycles = {} "
                            "(store stalls lie outside the load critical path, §3.3)",
                            store_stall_cycles, total_cycles - lcp_cycles));
  }
  const std::vector<std::string>& names = OptionalCounterColumns();
  const std::vector<double CrispCounters::*> fields = OptionalFields();
  for (size_t i = 0; i < fields.size(); ++i) {
    const double value = this->*fields[i];
    if (std::isnan(value)) continue;  // absent
    if (!(std::isfinite(value) && value >= 0.0)) {
      return fail(names[i], fmt::format("{} = {} must be a finite count >= 0", names[i], value));
    }
    if (names[i] != "miss_cycles" && value > total_cycles) {
      return fail(names[i],
                  fmt::format("{} = {} exceeds total_cycles = {}", names[i], value, total_cycles));
    }
  }
  if (!std::isnan(load_outstanding_cycles)) {
    if (load_outstanding_cycles < load_stall_cycles) {
      return fail("load_outstanding_cycles",
                  fmt::format("load_outstanding_cycles = {} is below load_stall_cycles = {} "
                              "(every load stall has a load outstanding)",
                              load_outstanding_cycles, load_stall_cycles));
    }
    if (load_outstanding_cycles > total_cycles - store_stall_cycles) {
      return fail("load_outstanding_cycles",
                  fmt::format("load_outstanding_cycles = {} exceeds total_cycles - "
                              "store_stall_cycles = {} (a store stall has no load outstanding)",
                              load_outstanding_cycles, total_cycles - store_stall_cycles));
    }
  }
  return "";
}

std::vector<CrispCounters> ReadCrispCounters(const std::string& path) {
  CsvReader reader(path);
  std::vector<std::string> fields;
  if (!reader.Next(&fields)) throw InputError(path, 1, "", "the file is empty");
  const PerfCsvColumns columns(reader, fields, RequiredColumns(), OptionalCounterColumns());
  const std::vector<std::string>& optional = OptionalCounterColumns();
  const std::vector<double CrispCounters::*> optional_fields = OptionalFields();

  std::vector<CrispCounters> rows;
  std::map<std::string, int64_t> seen;
  while (reader.Next(&fields)) {
    columns.CheckWidth(reader, fields);
    CrispCounters c;
    c.line = reader.line();
    c.kernel = columns.Cell(fields, "kernel");
    if (c.kernel.empty()) reader.Fail("kernel", "empty kernel name");
    const auto [it, inserted] = seen.emplace(c.kernel, c.line);
    if (!inserted) {
      reader.Fail("kernel", fmt::format("kernel '{}' appears twice (first on line {})", c.kernel,
                                        it->second));
    }
    c.base_mhz = columns.FrequencyMhz(reader, fields, "base_mhz");
    c.total_cycles = columns.Number(reader, fields, "total_cycles");
    c.lcp_cycles = columns.Number(reader, fields, "lcp_cycles");
    c.load_stall_cycles = columns.Number(reader, fields, "load_stall_cycles");
    c.store_stall_cycles = columns.Number(reader, fields, "store_stall_cycles");
    for (size_t i = 0; i < optional.size(); ++i) {
      if (columns.Has(optional[i]))
        c.*optional_fields[i] = columns.Number(reader, fields, optional[i]);
    }
    std::string field;
    const std::string problem = c.Inconsistency(&field);
    if (!problem.empty()) {
      reader.Fail(columns.Has(field) ? columns.Spelling(field) : field, problem);
    }
    rows.push_back(std::move(c));
  }
  if (rows.empty()) throw InputError(path, reader.line(), "", "no kernel rows after the header");
  return rows;
}

std::string CrispCountersToCsv(const std::vector<CrispCounters>& rows) {
  const std::vector<std::string>& optional = OptionalCounterColumns();
  const std::vector<double CrispCounters::*> optional_fields = OptionalFields();
  std::vector<bool> write(optional.size(), !rows.empty());
  for (const CrispCounters& c : rows) {
    for (size_t i = 0; i < optional.size(); ++i) {
      if (std::isnan(c.*optional_fields[i])) write[i] = false;
    }
  }
  std::string out;
  for (const std::string& name : RequiredColumns()) out += (out.empty() ? "" : ",") + name;
  for (size_t i = 0; i < optional.size(); ++i) {
    if (write[i]) out += "," + optional[i];
  }
  out += "\n";
  for (const CrispCounters& c : rows) {
    out += PerfCsvField(c.kernel);
    for (double v :
         {c.base_mhz, c.total_cycles, c.lcp_cycles, c.load_stall_cycles, c.store_stall_cycles}) {
      out += "," + PerfCsvNumber(v);
    }
    for (size_t i = 0; i < optional.size(); ++i) {
      if (write[i]) out += "," + PerfCsvNumber(c.*optional_fields[i]);
    }
    out += "\n";
  }
  return out;
}

}  // namespace wattcal
