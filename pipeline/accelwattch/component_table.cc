#include "accelwattch/component_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "io/csv_reader.h"
#include "io/units.h"
#include "util/csv_field.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/strings.h"

namespace wattcal {
namespace {

enum class Role { kIgnored, kKernel, kComponent, kConst, kStatic, kIdle, kMeasured, kPublished };

struct Column {
  Role role = Role::kIgnored;
  UnitFactor to_w;  // io/units.h
  int component = -1;
};

// AccelWattch sheet columns that carry no model input (metadata and derived errors).
const std::set<std::string>& AccelWattchMetadata() {
  static const std::set<std::string> names = {"benchmark",       "suite",        "n_unique_kernels",
                                              "runtime_covered", "kernel_label", "rel_error",
                                              "abs_rel_error"};
  return names;
}

// The table's format from its header: AccelWattch's per_kernel_*.csv (kernel_id and hw_total
// with a power unit) or the tidy form (kernel first); anything else throws.
std::string DetectFormat(const CsvReader& reader, const std::vector<std::string>& header,
                         const std::vector<std::string>& lower) {
  const bool has_kernel_id = std::find(lower.begin(), lower.end(), "kernel_id") != lower.end();
  const bool has_hw_total = std::any_of(lower.begin(), lower.end(), [](const std::string& name) {
    return MatchUnitColumn(name, "hw_total", Dimension::kPower) != nullptr;
  });
  if (has_kernel_id && has_hw_total) return "accelwattch";
  if (!lower.empty() && lower[0] == "kernel") return "tidy";
  reader.Fail(header.empty() ? "" : header[0],
              "unrecognised component table header: expected AccelWattch's per_kernel_*.csv "
              "(kernel_id, <COMP>_W..., CONSTP_W, STATICP_W, IDLE_COREP_W, hw_total_W) or the "
              "tidy form (kernel,measured_w,const_w,static_w,idle_w,<component>_w...)");
}

// The role of a power column from its name without the unit (lower case).
Role RoleOfStem(const std::string& s, bool accelwattch) {
  if (accelwattch) {
    if (s == "constp") return Role::kConst;
    if (s == "staticp") return Role::kStatic;
    if (s == "idle_corep") return Role::kIdle;
    if (s == "hw_total") return Role::kMeasured;
    if (s == "sim_total") return Role::kPublished;
    if (s == "error" || s == "abs_error") return Role::kIgnored;
    return Role::kComponent;
  }
  if (s == "const") return Role::kConst;
  if (s == "static") return Role::kStatic;
  if (s == "idle") return Role::kIdle;
  if (s == "measured") return Role::kMeasured;
  return Role::kComponent;
}

// Every column's role and unit; the dynamic components go to table->components. A column
// named twice, or one neither metadata nor a power column with its unit, throws.
std::vector<Column> ClassifyColumns(const CsvReader& reader, const std::vector<std::string>& header,
                                    const std::vector<std::string>& lower, ComponentTable* table) {
  const bool accelwattch = table->format == "accelwattch";
  std::vector<Column> columns(header.size());
  std::set<std::string> seen;
  for (size_t j = 0; j < header.size(); ++j) {
    const std::string& name = header[j];
    if (name.empty()) reader.Fail(fmt::format("column {}", j + 1), "empty column name");
    if (!seen.insert(lower[j]).second) reader.Fail(name, "column named twice");
    Column& col = columns[j];
    if (lower[j] == (accelwattch ? "kernel_id" : "kernel")) {
      col.role = Role::kKernel;
      continue;
    }
    if (accelwattch && AccelWattchMetadata().count(lower[j]) > 0) continue;
    std::string stem;
    const Unit* unit = SplitUnitColumn(name, Dimension::kPower, &stem);
    if (unit == nullptr) {
      reader.Fail(name,
                  fmt::format(accelwattch ? "neither an AccelWattch metadata column nor a power "
                                            "column with its unit (<name>_W, or <name>_mW ...: {})"
                                          : "not a power column with its unit (<name>_w, or "
                                            "<name>_mw ...: {}); the tidy form is kernel,"
                                            "measured_w,const_w,static_w,idle_w,<component>_w...",
                              UnitWordList(Dimension::kPower)));
    }
    col.to_w = unit->to_canonical;
    col.role = RoleOfStem(ToLower(stem), accelwattch);
    if (col.role == Role::kComponent) {
      col.component = table->num_components();
      table->components.push_back(stem);
    }
  }
  return columns;
}

// Throws unless the header has the constant, static, idle (and, tidy, measured) columns and at
// least one dynamic component.
void RequireColumns(const std::string& path, int64_t header_line,
                    const std::vector<Column>& columns, const ComponentTable& table) {
  const auto require = [&](Role role, const std::string& name) {
    if (std::none_of(columns.begin(), columns.end(),
                     [&](const Column& c) { return c.role == role; })) {
      throw InputError(path, header_line, name,
                       fmt::format("missing column {} (or its _mW form) in the {} component table",
                                   name, table.format));
    }
  };
  if (table.format == "accelwattch") {
    require(Role::kConst, "CONSTP_W");
    require(Role::kStatic, "STATICP_W");
    require(Role::kIdle, "IDLE_COREP_W");
  } else {
    require(Role::kMeasured, "measured_w");
    require(Role::kConst, "const_w");
    require(Role::kStatic, "static_w");
    require(Role::kIdle, "idle_w");
  }
  if (table.components.empty()) {
    throw InputError(path, header_line, "",
                     "no dynamic component columns (<component>_W) in the header");
  }
}

// One kernel's row, in W: the terms by role (the published total in *published_w).
struct KernelRow {
  std::string kernel;
  std::vector<double> dynamic;
  double const_w = 0, static_w = 0, idle_w = 0, measured_w = 0, published_w = 0;
};

// Reads one row: its kernel (unique: `kernel_line` remembers where each was) and its powers,
// each >= 0 (the measured one > 0) and within the power bound.
KernelRow ReadKernelRow(const CsvReader& reader, const std::vector<std::string>& header,
                        const std::vector<Column>& columns, const std::vector<std::string>& fields,
                        size_t num_components, std::map<std::string, int64_t>* kernel_line) {
  KernelRow row;
  row.dynamic.assign(num_components, 0.0);
  for (size_t j = 0; j < fields.size(); ++j) {
    const Column& col = columns[j];
    if (col.role == Role::kIgnored) continue;
    if (col.role == Role::kKernel) {
      row.kernel = fields[j];
      if (row.kernel.empty()) reader.Fail(header[j], "empty kernel name");
      const auto [it, inserted] = kernel_line->emplace(row.kernel, reader.line());
      if (!inserted) {
        reader.Fail(header[j],
                    fmt::format("kernel '{}' already appears on line {}", row.kernel, it->second));
      }
      continue;
    }
    // x the factor as one double, as CsvReader::ParseBounded (outputs stay byte-identical).
    const double value_w =
        reader.ParseNumber(fields[j], header[j]) * (col.to_w.multiply / col.to_w.divide);
    if (col.role == Role::kMeasured) {
      if (!(value_w > 0.0)) {
        reader.Fail(header[j], fmt::format("measured power must be > 0 W, got {}", fields[j]));
      }
    } else if (value_w < 0.0) {
      reader.Fail(header[j], fmt::format("power must be >= 0 W, got {}", fields[j]));
    }
    reader.CheckBound(value_w, header[j], PhysicalQuantity::kPower);
    switch (col.role) {
      case Role::kComponent: row.dynamic[col.component] = value_w; break;
      case Role::kConst: row.const_w = value_w; break;
      case Role::kStatic: row.static_w = value_w; break;
      case Role::kIdle: row.idle_w = value_w; break;
      case Role::kMeasured: row.measured_w = value_w; break;
      case Role::kPublished: row.published_w = value_w; break;
      default: break;
    }
  }
  return row;
}

// Appends `row` to the table; with a published total, counts the rows whose total differs from
// the sum of their terms (the first such line in *first_mismatch_line).
void AddKernelRow(KernelRow row, int64_t line, bool has_published, ComponentTable* table,
                  int64_t* first_mismatch_line) {
  table->kernels.push_back(row.kernel);
  table->lines.push_back(line);
  table->dynamic_w.push_back(std::move(row.dynamic));
  table->const_w.push_back(row.const_w);
  table->static_w.push_back(row.static_w);
  table->idle_w.push_back(row.idle_w);
  table->measured_w.push_back(row.measured_w);
  if (!has_published) return;
  table->published_total_w.push_back(row.published_w);
  double sum_w = row.const_w + row.static_w + row.idle_w;
  for (double d : table->dynamic_w.back()) sum_w += d;
  const double diff_w = sum_w - row.published_w;
  if (std::abs(diff_w) > 1e-6 * std::max(1.0, std::abs(row.published_w))) {
    if (table->published_total_mismatches++ == 0) *first_mismatch_line = line;
    if (std::abs(diff_w) > std::abs(table->published_total_max_abs_diff_w)) {
      table->published_total_max_abs_diff_w = diff_w;
    }
  }
}

}  // namespace

int ComponentTable::FindComponent(const std::string& name) const {
  const auto it = std::find(components.begin(), components.end(), name);
  return it == components.end() ? -1 : static_cast<int>(it - components.begin());
}

ComponentTable ComponentTable::Subset(const std::vector<int>& kernel_indices) const {
  ComponentTable t;
  t.path = path;
  t.format = format;
  t.components = components;
  for (int k : kernel_indices) {
    t.kernels.push_back(kernels[k]);
    t.lines.push_back(lines[k]);
    t.dynamic_w.push_back(dynamic_w[k]);
    t.const_w.push_back(const_w[k]);
    t.static_w.push_back(static_w[k]);
    t.idle_w.push_back(idle_w[k]);
    t.measured_w.push_back(measured_w[k]);
    if (!published_total_w.empty()) t.published_total_w.push_back(published_total_w[k]);
  }
  return t;
}

ComponentTable ReadComponentTable(const std::string& path) {
  CsvReader reader(path);
  std::vector<std::string> header;
  if (!reader.Next(&header)) {
    throw InputError(path, 1, "", "empty file; expected a component table header");
  }
  const int64_t header_line = reader.line();
  std::vector<std::string> lower;
  for (const std::string& h : header) lower.push_back(ToLower(h));

  ComponentTable table;
  table.path = path;
  table.format = DetectFormat(reader, header, lower);
  const std::vector<Column> columns = ClassifyColumns(reader, header, lower, &table);
  RequireColumns(path, header_line, columns, table);
  const bool has_published = std::any_of(
      columns.begin(), columns.end(), [](const Column& c) { return c.role == Role::kPublished; });

  std::vector<std::string> fields;
  std::map<std::string, int64_t> kernel_line;
  int64_t first_mismatch_line = 0;
  while (reader.Next(&fields)) {
    if (fields.size() != header.size()) {
      reader.Fail("", fmt::format("expected {} fields as in the header (line {}), got {}",
                                  header.size(), header_line, fields.size()));
    }
    AddKernelRow(
        ReadKernelRow(reader, header, columns, fields, table.components.size(), &kernel_line),
        reader.line(), has_published, &table, &first_mismatch_line);
  }
  if (table.kernels.empty()) {
    throw InputError(path, header_line, "", "no kernel rows after the header");
  }
  if (table.published_total_mismatches > 0) {
    LogWarning(fmt::format(
        "{}:{}: sim_total_W: in {} of {} rows the sheet's modelled total differs from the sum "
        "of the component, constant, static and idle columns (by up to {:+.4f} W); wattcal's "
        "x = 1 model uses the sum",
        path, first_mismatch_line, table.published_total_mismatches, table.num_kernels(),
        table.published_total_max_abs_diff_w));
  }
  return table;
}

std::string ComponentTableToTidyCsv(const ComponentTable& table) {
  std::string out = "kernel,measured_w,const_w,static_w,idle_w";
  for (const std::string& c : table.components) out += "," + CsvFieldKeepingEdgeSpaces(c + "_w");
  out += "\n";
  for (int k = 0; k < table.num_kernels(); ++k) {
    out += CsvFieldKeepingEdgeSpaces(table.kernels[k]);
    out += fmt::format(",{:.17g},{:.17g},{:.17g},{:.17g}", table.measured_w[k], table.const_w[k],
                       table.static_w[k], table.idle_w[k]);
    for (double d : table.dynamic_w[k]) out += fmt::format(",{:.17g}", d);
    out += "\n";
  }
  return out;
}

}  // namespace wattcal
