#include "accelwattch/component_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "io/csv_reader.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/strings.h"

namespace wattcal {
namespace {

// A power column: its name without the unit and the factor to W. False when the name carries
// no power unit (_W/_w or _mW/_mw).
bool SplitPowerUnit(const std::string& name, std::string* stem, double* to_w) {
  const std::string lower = ToLower(name);
  if (EndsWith(lower, "_mw") && name.size() > 3) {
    *stem = name.substr(0, name.size() - 3);
    *to_w = 1e-3;
    return true;
  }
  if (EndsWith(lower, "_w") && name.size() > 2) {
    *stem = name.substr(0, name.size() - 2);
    *to_w = 1.0;
    return true;
  }
  return false;
}

enum class Role { kIgnored, kKernel, kComponent, kConst, kStatic, kIdle, kMeasured, kPublished };

struct Column {
  Role role = Role::kIgnored;
  double to_w = 1.0;
  int component = -1;
};

// AccelWattch sheet columns that carry no model input (metadata and derived errors).
const std::set<std::string>& AccelWattchMetadata() {
  static const std::set<std::string> names = {"benchmark",       "suite",        "n_unique_kernels",
                                              "runtime_covered", "kernel_label", "rel_error",
                                              "abs_rel_error"};
  return names;
}

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos &&
      (text.empty() || (text.front() != ' ' && text.back() != ' '))) {
    return text;
  }
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
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
  const auto has = [&](const std::string& name) {
    return std::find(lower.begin(), lower.end(), name) != lower.end();
  };

  ComponentTable table;
  table.path = path;
  if (has("kernel_id") && (has("hw_total_w") || has("hw_total_mw"))) {
    table.format = "accelwattch";
  } else if (!lower.empty() && lower[0] == "kernel") {
    table.format = "tidy";
  } else {
    reader.Fail(header.empty() ? "" : header[0],
                "unrecognised component table header: expected AccelWattch's per_kernel_*.csv "
                "(kernel_id, <COMP>_W..., CONSTP_W, STATICP_W, IDLE_COREP_W, hw_total_W) or the "
                "tidy form (kernel,measured_w,const_w,static_w,idle_w,<component>_w...)");
  }
  const bool accelwattch = table.format == "accelwattch";

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
    if (!SplitPowerUnit(name, &stem, &col.to_w)) {
      reader.Fail(name, accelwattch
                            ? "neither an AccelWattch metadata column nor a power column with its "
                              "unit (<name>_W, or <name>_mW for milliwatts)"
                            : "not a power column with its unit (<name>_w, or <name>_mw for "
                              "milliwatts); the tidy form is kernel,measured_w,const_w,static_w,"
                              "idle_w,<component>_w...");
    }
    const std::string s = ToLower(stem);
    if (accelwattch) {
      if (s == "constp")
        col.role = Role::kConst;
      else if (s == "staticp")
        col.role = Role::kStatic;
      else if (s == "idle_corep")
        col.role = Role::kIdle;
      else if (s == "hw_total")
        col.role = Role::kMeasured;
      else if (s == "sim_total")
        col.role = Role::kPublished;
      else if (s == "error" || s == "abs_error")
        col.role = Role::kIgnored;
      else
        col.role = Role::kComponent;
    } else {
      if (s == "const")
        col.role = Role::kConst;
      else if (s == "static")
        col.role = Role::kStatic;
      else if (s == "idle")
        col.role = Role::kIdle;
      else if (s == "measured")
        col.role = Role::kMeasured;
      else
        col.role = Role::kComponent;
    }
    if (col.role == Role::kComponent) {
      col.component = table.num_components();
      table.components.push_back(stem);
    }
  }
  const auto require = [&](Role role, const std::string& name) {
    if (std::none_of(columns.begin(), columns.end(),
                     [&](const Column& c) { return c.role == role; })) {
      throw InputError(path, header_line, name,
                       fmt::format("missing column {} (or its _mW form) in the {} component table",
                                   name, table.format));
    }
  };
  if (accelwattch) {
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
    std::vector<double> dynamic(table.components.size(), 0.0);
    double const_w = 0, static_w = 0, idle_w = 0, measured_w = 0, published_w = 0;
    std::string kernel;
    for (size_t j = 0; j < fields.size(); ++j) {
      const Column& col = columns[j];
      if (col.role == Role::kIgnored) continue;
      if (col.role == Role::kKernel) {
        kernel = fields[j];
        if (kernel.empty()) reader.Fail(header[j], "empty kernel name");
        const auto [it, inserted] = kernel_line.emplace(kernel, reader.line());
        if (!inserted) {
          reader.Fail(header[j],
                      fmt::format("kernel '{}' already appears on line {}", kernel, it->second));
        }
        continue;
      }
      const double value_w = reader.ParseNumber(fields[j], header[j]) * col.to_w;
      if (col.role == Role::kMeasured) {
        if (!(value_w > 0.0)) {
          reader.Fail(header[j], fmt::format("measured power must be > 0 W, got {}", fields[j]));
        }
      } else if (value_w < 0.0) {
        reader.Fail(header[j], fmt::format("power must be >= 0 W, got {}", fields[j]));
      }
      reader.CheckBound(value_w, header[j], PhysicalQuantity::kPower);
      switch (col.role) {
        case Role::kComponent: dynamic[col.component] = value_w; break;
        case Role::kConst: const_w = value_w; break;
        case Role::kStatic: static_w = value_w; break;
        case Role::kIdle: idle_w = value_w; break;
        case Role::kMeasured: measured_w = value_w; break;
        case Role::kPublished: published_w = value_w; break;
        default: break;
      }
    }
    table.kernels.push_back(kernel);
    table.lines.push_back(reader.line());
    table.dynamic_w.push_back(std::move(dynamic));
    table.const_w.push_back(const_w);
    table.static_w.push_back(static_w);
    table.idle_w.push_back(idle_w);
    table.measured_w.push_back(measured_w);
    if (has_published) {
      table.published_total_w.push_back(published_w);
      double sum_w = const_w + static_w + idle_w;
      for (double d : table.dynamic_w.back()) sum_w += d;
      const double diff_w = sum_w - published_w;
      if (std::abs(diff_w) > 1e-6 * std::max(1.0, std::abs(published_w))) {
        if (table.published_total_mismatches++ == 0) first_mismatch_line = reader.line();
        if (std::abs(diff_w) > std::abs(table.published_total_max_abs_diff_w)) {
          table.published_total_max_abs_diff_w = diff_w;
        }
      }
    }
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
  for (const std::string& c : table.components) out += "," + CsvField(c + "_w");
  out += "\n";
  for (int k = 0; k < table.num_kernels(); ++k) {
    out += CsvField(table.kernels[k]);
    out += fmt::format(",{:.17g},{:.17g},{:.17g},{:.17g}", table.measured_w[k], table.const_w[k],
                       table.static_w[k], table.idle_w[k]);
    for (double d : table.dynamic_w[k]) out += fmt::format(",{:.17g}", d);
    out += "\n";
  }
  return out;
}

}  // namespace wattcal
