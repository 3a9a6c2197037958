#include "port/estimate_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "io/csv_reader.h"
#include "io/units.h"
#include "util/csv_field.h"
#include "util/errors.h"
#include "util/strings.h"

namespace wattcal {
namespace {

// What a column holds.
enum class ColumnRole { kIgnored, kDynamic, kStatic, kIdleSm, kConstant, kTotal, kMeasured };

struct Column {
  ColumnRole role = ColumnRole::kIgnored;
  std::string name;  // component name for kDynamic
  UnitFactor to_w;   // io/units.h
};

// The column's power unit (io/units.h) and its name without the unit, or nullptr when the
// header has no power unit.
const Unit* SplitUnit(const std::string& header, std::string* stem) {
  return SplitUnitColumn(header, Dimension::kPower, stem);
}

Column ClassifyAccelWattch(const std::string& header) {
  Column c;
  std::string stem;
  const Unit* unit = SplitUnit(header, &stem);
  if (unit == nullptr || stem == "error" || stem == "abs_error") return c;  // metadata
  c.to_w = unit->to_canonical;
  if (stem == "CONSTP")
    c.role = ColumnRole::kConstant;
  else if (stem == "STATICP")
    c.role = ColumnRole::kStatic;
  else if (stem == "IDLE_COREP")
    c.role = ColumnRole::kIdleSm;
  else if (stem == "sim_total")
    c.role = ColumnRole::kTotal;
  else if (stem == "hw_total")
    c.role = ColumnRole::kMeasured;
  else
    c.role = ColumnRole::kDynamic;
  c.name = stem;
  return c;
}

Column ClassifyTidy(const CsvReader& reader, const std::string& header) {
  Column c;
  std::string stem;
  const Unit* unit = SplitUnit(header, &stem);
  if (unit == nullptr) {
    reader.Fail(header,
                "no power unit: tidy estimate columns end in _w (watts) or another "
                "power unit (" +
                    UnitColumnList("", Dimension::kPower) + ")");
  }
  c.to_w = unit->to_canonical;
  if (stem == "const")
    c.role = ColumnRole::kConstant;
  else if (stem == "static")
    c.role = ColumnRole::kStatic;
  else if (stem == "idle")
    c.role = ColumnRole::kIdleSm;
  else if (stem == "total")
    c.role = ColumnRole::kTotal;
  else if (stem == "measured")
    c.role = ColumnRole::kMeasured;
  else
    c.role = ColumnRole::kDynamic;
  c.name = stem;
  return c;
}

}  // namespace

const char* EstimateTermName(EstimateTerm term) {
  switch (term) {
    case EstimateTerm::kDynamic: return "dynamic";
    case EstimateTerm::kStatic: return "static";
    case EstimateTerm::kIdleSm: return "idle_sm";
    case EstimateTerm::kConstant: return "constant";
    case EstimateTerm::kTotal: return "total";
  }
  return "?";
}

double EstimateTable::TotalW(int k) const {
  double sum = static_w[k] + idle_w[k] + const_w[k];
  for (double d : dynamic_w[k]) sum += d;
  return sum;
}

int EstimateTable::FindKernel(const std::string& kernel) const {
  for (size_t k = 0; k < kernels.size(); ++k) {
    if (kernels[k] == kernel) return static_cast<int>(k);
  }
  return -1;
}

EstimateTable ReadEstimateTable(const std::string& path) {
  CsvReader::Options csv_options;
  csv_options.comment = '#';
  CsvReader reader(path, csv_options);
  std::vector<std::string> header;
  if (!reader.Next(&header)) throw InputError(path, 0, "", "empty file (expected a CSV header)");
  const bool accelwattch = !header.empty() && header[0] == "kernel_id";
  if (header.empty() || (!accelwattch && header[0] != "kernel")) {
    reader.Fail(header.empty() ? "header" : header[0],
                "the first column must be kernel_id (AccelWattch per_kernel_*.csv) or kernel "
                "(tidy estimates)");
  }
  std::vector<Column> columns(header.size());
  std::map<ColumnRole, size_t> single;  // role -> column, for the one-per-table roles
  EstimateTable table;
  table.path = path;
  for (size_t i = 1; i < header.size(); ++i) {
    columns[i] = accelwattch ? ClassifyAccelWattch(header[i]) : ClassifyTidy(reader, header[i]);
    const ColumnRole role = columns[i].role;
    if (role == ColumnRole::kIgnored) continue;
    if (role == ColumnRole::kDynamic) {
      for (const std::string& name : table.components) {
        if (name == columns[i].name) reader.Fail(header[i], "component named twice");
      }
      table.components.push_back(columns[i].name);
      continue;
    }
    if (!single.emplace(role, i).second) reader.Fail(header[i], "column named twice");
  }
  const std::pair<ColumnRole, const char*> required[] = {
      {ColumnRole::kConstant, accelwattch ? "CONSTP_W" : "const_w"},
      {ColumnRole::kStatic, accelwattch ? "STATICP_W" : "static_w"},
      {ColumnRole::kIdleSm, accelwattch ? "IDLE_COREP_W" : "idle_w"}};
  for (const auto& [role, name] : required) {
    if (single.count(role) == 0) reader.Fail(name, "missing column");
  }
  if (table.components.empty()) reader.Fail("header", "no dynamic component column");
  const bool has_measured = single.count(ColumnRole::kMeasured) > 0;
  const bool has_total = single.count(ColumnRole::kTotal) > 0;

  std::vector<std::string> fields;
  while (reader.Next(&fields)) {
    if (fields.size() != header.size()) {
      reader.Fail("", fmt::format("{} fields, the header has {}", fields.size(), header.size()));
    }
    const std::string& kernel = fields[0];
    if (kernel.empty()) reader.Fail(header[0], "empty kernel name");
    if (table.FindKernel(kernel) >= 0) {
      reader.Fail(header[0], fmt::format("kernel \"{}\" appears twice", kernel));
    }
    std::vector<double> dynamic;
    double static_w = 0.0, idle_w = 0.0, const_w = 0.0, total_w = 0.0, measured_w = 0.0;
    for (size_t i = 1; i < header.size(); ++i) {
      if (columns[i].role == ColumnRole::kIgnored) continue;
      const double v = columns[i].to_w.Apply(reader.ParseNumber(fields[i], header[i]));
      if (columns[i].role == ColumnRole::kMeasured) {
        if (!(v > 0.0)) reader.Fail(header[i], fmt::format("{} must be a measured power > 0", v));
        measured_w = v;
        continue;
      }
      if (v < 0.0) reader.Fail(header[i], fmt::format("{} must be a power >= 0", v));
      switch (columns[i].role) {
        case ColumnRole::kDynamic: dynamic.push_back(v); break;
        case ColumnRole::kStatic: static_w = v; break;
        case ColumnRole::kIdleSm: idle_w = v; break;
        case ColumnRole::kConstant: const_w = v; break;
        case ColumnRole::kTotal: total_w = v; break;
        default: break;
      }
    }
    double sum = static_w + idle_w + const_w;
    for (double d : dynamic) sum += d;
    double remainder = 0.0;
    if (has_total && std::fabs(total_w - sum) > 1e-9 * std::max(1.0, total_w)) {
      remainder = total_w - sum;
      if (remainder < 0.0) {
        reader.Fail(header[single[ColumnRole::kTotal]],
                    fmt::format("total {} W is below the sum of its terms, {} W", total_w, sum));
      }
    }
    table.kernels.push_back(kernel);
    table.lines.push_back(reader.line());
    table.dynamic_w.push_back(dynamic);
    table.static_w.push_back(static_w);
    table.idle_w.push_back(idle_w);
    table.const_w.push_back(const_w + remainder);
    table.remainder_w.push_back(remainder);
    if (has_measured) table.measured_w.push_back(measured_w);
  }
  if (table.kernels.empty()) throw InputError(path, 0, "", "no kernels");
  return table;
}

std::string EstimateTableToCsv(const EstimateTable& table) {
  const bool measured = !table.measured_w.empty();
  std::string out = "kernel";
  if (measured) out += ",measured_w";
  out += ",const_w,static_w,idle_w";
  for (const std::string& c : table.components) out += "," + c + "_w";
  out += "\n";
  for (int k = 0; k < table.num_kernels(); ++k) {
    out += CsvField(table.kernels[k]);
    if (measured) out += "," + ExactNumber(table.measured_w[k]);
    out += "," + ExactNumber(table.const_w[k]) + "," + ExactNumber(table.static_w[k]) + "," +
           ExactNumber(table.idle_w[k]);
    for (double d : table.dynamic_w[k]) out += "," + ExactNumber(d);
    out += "\n";
  }
  return out;
}

std::string EstimateTotalsToCsv(const EstimateTable& table) {
  std::string out = "kernel,power_w\n";
  for (int k = 0; k < table.num_kernels(); ++k) {
    out += CsvField(table.kernels[k]) + "," + ExactNumber(table.TotalW(k)) + "\n";
  }
  return out;
}

EstimateTable ScaleEstimates(const EstimateTable& table, const NodeScaling& scaling) {
  EstimateTable out = table;
  for (int k = 0; k < out.num_kernels(); ++k) {
    for (double& d : out.dynamic_w[k]) d *= scaling.dynamic_factor;
    out.static_w[k] *= scaling.static_factor;
    out.idle_w[k] *= scaling.idle_sm_factor;
    out.const_w[k] *= scaling.board_constant_factor;
    out.remainder_w[k] *= scaling.board_constant_factor;
  }
  return out;
}

bool ColumnFactor::single_factor() const {
  return kernels > 0 && std::fabs(max - mean) <= 1e-12 * std::fabs(mean) &&
         std::fabs(mean - min) <= 1e-12 * std::fabs(mean);
}

std::vector<ColumnFactor> DeriveColumnFactors(const EstimateTable& before,
                                              const EstimateTable& after) {
  if (before.components != after.components) {
    throw InputError(after.path, 0, "header",
                     fmt::format("its dynamic components differ from those of {}", before.path));
  }
  std::vector<int> match;  // after's row of each kernel of before
  for (int k = 0; k < before.num_kernels(); ++k) {
    const int j = after.FindKernel(before.kernels[k]);
    if (j < 0) {
      throw InputError(
          after.path, 0, "kernel",
          fmt::format("no kernel \"{}\" (it is in {})", before.kernels[k], before.path));
    }
    match.push_back(j);
  }
  if (after.num_kernels() != before.num_kernels()) {
    throw InputError(after.path, 0, "kernel",
                     fmt::format("{} kernels here, {} in {}", after.num_kernels(),
                                 before.num_kernels(), before.path));
  }
  std::vector<ColumnFactor> out;
  const auto add = [&](const std::string& name, EstimateTerm term, auto value) {
    ColumnFactor f;
    f.column = name;
    f.term = term;
    double sum = 0.0;
    for (int k = 0; k < before.num_kernels(); ++k) {
      const double b = value(before, k), a = value(after, match[k]);
      if (b == 0.0) continue;
      const double ratio = a / b;
      if (f.kernels == 0 || ratio < f.min) f.min = ratio;
      if (f.kernels == 0 || ratio > f.max) f.max = ratio;
      sum += ratio;
      ++f.kernels;
    }
    f.mean = f.kernels > 0 ? sum / f.kernels : 0.0;
    out.push_back(f);
  };
  for (size_t i = 0; i < before.components.size(); ++i) {
    add(before.components[i], EstimateTerm::kDynamic,
        [i](const EstimateTable& t, int k) { return t.dynamic_w[k][i]; });
  }
  add("static", EstimateTerm::kStatic, [](const EstimateTable& t, int k) { return t.static_w[k]; });
  add("idle_sm", EstimateTerm::kIdleSm, [](const EstimateTable& t, int k) { return t.idle_w[k]; });
  add("constant", EstimateTerm::kConstant,
      [](const EstimateTable& t, int k) { return t.const_w[k]; });
  add("total", EstimateTerm::kTotal, [](const EstimateTable& t, int k) { return t.TotalW(k); });
  return out;
}

void to_json(nlohmann::ordered_json& row, const ColumnFactor& f) {
  row = nlohmann::ordered_json::object();
  row["column"] = f.column;
  row["term"] = EstimateTermName(f.term);
  row["kernels"] = f.kernels;
  row["min"] = f.min;
  row["max"] = f.max;
  row["mean"] = f.mean;
  row["single_factor"] = f.single_factor();
}

}  // namespace wattcal
