#include "report/apps_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <utility>
#include <vector>

#include "io/csv_reader.h"
#include "report/internal/index_sections.h"
#include "util/errors.h"

namespace wattcal {

namespace {

// The first two columns of every version of the table, and columns only it has.
constexpr const char* kAppsHeaderStart = "workload,predicted_w,";
constexpr const char* kAppsColumns[] = {"uncapped_w", "capped", "f_core_mhz", "windows",
                                        "measured_flags"};

// Column index by name; InputError naming the file when one is missing.
std::map<std::string, size_t> Columns(const std::vector<std::string>& header,
                                      const std::vector<std::string>& needed,
                                      const CsvReader& reader) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < header.size(); ++i) index[header[i]] = i;
  for (const std::string& n : needed) {
    if (!index.count(n)) reader.Fail(n, "missing column");
  }
  return index;
}

double Optional(const CsvReader& reader, const std::vector<std::string>& f, size_t i,
                const std::string& field) {
  if (i >= f.size() || f[i].empty()) return std::numeric_limits<double>::quiet_NaN();
  return reader.ParseNumber(f[i], field);
}

// Mean |x| over the finite values of `pct` (NaN when none), and their count.
std::pair<double, int> MeanAbs(const std::vector<ReportApp>& rows, double ReportApp::*pct) {
  double sum = 0.0;
  int n = 0;
  for (const ReportApp& a : rows) {
    if (!std::isfinite(a.*pct)) continue;
    sum += std::fabs(a.*pct);
    ++n;
  }
  return {n > 0 ? sum / n : std::numeric_limits<double>::quiet_NaN(), n};
}

}  // namespace

int ReportApps::measured() const { return MeanAbs(rows, &ReportApp::error_pct).second; }
double ReportApps::mape_pct() const { return MeanAbs(rows, &ReportApp::error_pct).first; }
int ReportApps::energy_measured() const {
  return MeanAbs(rows, &ReportApp::energy_error_pct).second;
}
double ReportApps::energy_mape_pct() const {
  return MeanAbs(rows, &ReportApp::energy_error_pct).first;
}

int ReportApps::with_interval() const {
  int n = 0;
  for (const ReportApp& a : rows) n += a.has_interval() && std::isfinite(a.measured_w) ? 1 : 0;
  return n;
}

int ReportApps::inside_interval() const {
  int n = 0;
  for (const ReportApp& a : rows) n += a.measured_inside() ? 1 : 0;
  return n;
}

namespace {

using index_internal::Fixed;
using index_internal::kDash;
using index_internal::Significant;
using index_internal::Watts;

// One column of the applications' table.
struct AppColumn {
  const char* header;
  bool numeric;
  std::string (*cell)(const ReportApp&);
};

std::string Interval(double lo, double hi) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) return kDash;
  return fmt::format("{} – {}", Fixed(lo, 0), Fixed(hi, 0));
}

// A table without kernel_time_s is of an older predict, whose duration and energy were the
// profiled kernels': they are not shown as the run's.
bool HasRunTimes(const ReportApp& a) { return std::isfinite(a.kernel_time_s); }

constexpr AppColumn kAppColumns[] = {
    {"Workload", false, [](const ReportApp& a) { return a.workload; }},
    {"predicted_w", true, [](const ReportApp& a) { return Watts(a.predicted_w); }},
    {"predicted_w 95%", true,
     [](const ReportApp& a) { return Interval(a.predicted_w_lo, a.predicted_w_hi); }},
    {"uncapped_w", true,
     [](const ReportApp& a) { return a.capped ? Watts(a.uncapped_w) : std::string(kDash); }},
    {"measured_w", true, [](const ReportApp& a) { return Watts(a.measured_w); }},
    {"error_pct", true, [](const ReportApp& a) { return Fixed(a.error_pct, 1); }},
    {"f_core_mhz", true, [](const ReportApp& a) { return Fixed(a.f_core_mhz, 0); }},
    {"measured_f_core_mhz", true,
     [](const ReportApp& a) { return Fixed(a.measured_f_core_mhz, 0); }},
    {"duration_s", true,
     [](const ReportApp& a) { return HasRunTimes(a) ? Fixed(a.duration_s, 3) : kDash; }},
    {"energy_j", true,
     [](const ReportApp& a) { return HasRunTimes(a) ? Fixed(a.energy_j, 1) : kDash; }},
    {"energy_j 95%", true,
     [](const ReportApp& a) { return Interval(a.energy_j_lo, a.energy_j_hi); }},
    {"measured_energy_j", true, [](const ReportApp& a) { return Fixed(a.measured_energy_j, 1); }},
    {"energy_error_pct", true, [](const ReportApp& a) { return Fixed(a.energy_error_pct, 1); }},
    {"steps", true, [](const ReportApp& a) { return Fixed(a.steps, 0); }},
    {"energy_per_step_j", true,
     [](const ReportApp& a) { return Significant(a.energy_per_step_j); }},
    {"kernel_time_ms", true, [](const ReportApp& a) { return Fixed(a.kernel_time_s * 1e3, 2); }},
    {"windows", true, [](const ReportApp& a) { return std::to_string(a.windows); }},
    {"flags", false,
     [](const ReportApp& a) {
       std::string flags = a.flags;
       if (!a.measured_flags.empty())
         flags += (flags.empty() ? "" : "; ") + std::string("measured: ") + a.measured_flags;
       return flags.empty() ? std::string(kDash) : flags;
     }},
};

}  // namespace

AppsTable AppsTableOf(const ReportApps& apps) {
  AppsTable t;
  std::vector<const AppColumn*> shown;
  for (const AppColumn& c : kAppColumns) {
    bool any = std::string(c.header) == "Workload";
    for (const ReportApp& a : apps.rows) {
      const std::string cell = c.cell(a);
      any = any || (!cell.empty() && cell != kDash);
    }
    if (!any) continue;
    shown.push_back(&c);
    t.header.push_back(c.header);
    t.numeric.push_back(c.numeric);
  }
  for (const ReportApp& a : apps.rows) {
    std::vector<std::string> row;
    for (const AppColumn* c : shown) row.push_back(c->cell(a));
    t.rows.push_back(std::move(row));
  }
  return t;
}

std::string AppsMeasuredSentence(const ReportApps& apps) {
  const int measured = apps.measured();
  if (measured == 0) return "None was measured (no power log): these are predictions only.";
  std::string s =
      fmt::format("{} of them also have measured power: MAPE {:.2f}%", measured, apps.mape_pct());
  if (apps.energy_measured() > 0) {
    s += fmt::format("; energy over the run as it ran (whole windows): energy MAPE {:.2f}% over {}",
                     apps.energy_mape_pct(), apps.energy_measured());
  }
  return s + ".";
}

bool IsAppPredictionsCsv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  std::getline(in, line);
  if (line.rfind(kAppsHeaderStart, 0) != 0) return false;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  const std::string columns = "," + line + ",";
  for (const char* c : kAppsColumns) {
    if (columns.find("," + std::string(c) + ",") == std::string::npos) return false;
  }
  return true;
}

ReportApps ReadReportApps(const std::string& path, const std::string& breakdown_path) {
  ReportApps apps;
  apps.path = path;
  apps.breakdown_path = breakdown_path;
  CsvReader reader(path);
  std::vector<std::string> f;
  if (!reader.Next(&f)) throw InputError(path, 1, "", "empty file");
  const std::vector<std::string> header = f;
  const auto c =
      Columns(header,
              {"workload", "predicted_w", "uncapped_w", "capped", "duration_s", "energy_j", "flags",
               "measured_w", "error_pct", "measured_flags", "f_core_mhz", "windows"},
              reader);
  while (reader.Next(&f)) {
    if (f.size() != header.size())
      reader.Fail("", fmt::format("{} fields, the header has {}", f.size(), header.size()));
    ReportApp a;
    a.workload = f[c.at("workload")];
    a.predicted_w = reader.ParseNumber(f[c.at("predicted_w")], "predicted_w");
    a.uncapped_w = reader.ParseNumber(f[c.at("uncapped_w")], "uncapped_w");
    a.capped = f[c.at("capped")] == "1";
    a.duration_s = Optional(reader, f, c.at("duration_s"), "duration_s");
    a.energy_j = Optional(reader, f, c.at("energy_j"), "energy_j");
    a.flags = f[c.at("flags")];
    a.measured_w = Optional(reader, f, c.at("measured_w"), "measured_w");
    a.error_pct = Optional(reader, f, c.at("error_pct"), "error_pct");
    a.measured_flags = f[c.at("measured_flags")];
    a.f_core_mhz = reader.ParseNumber(f[c.at("f_core_mhz")], "f_core_mhz");
    a.windows = static_cast<int>(reader.ParseNumber(f[c.at("windows")], "windows"));
    auto later = [&](const char* name) {
      const auto it = c.find(name);
      return it == c.end() ? std::numeric_limits<double>::quiet_NaN()
                           : Optional(reader, f, it->second, name);
    };
    a.predicted_w_lo = later("predicted_w_lo");
    a.predicted_w_hi = later("predicted_w_hi");
    a.energy_j_lo = later("energy_j_lo");
    a.energy_j_hi = later("energy_j_hi");
    a.measured_energy_j = later("measured_energy_j");
    a.energy_error_pct = later("energy_error_pct");
    a.steps = later("steps");
    a.energy_per_step_j = later("energy_per_step_j");
    a.kernel_time_s = later("kernel_time_s");
    a.measured_f_core_mhz = later("measured_f_core_mhz");
    apps.rows.push_back(a);
  }
  if (apps.rows.empty()) throw InputError(path, 1, "", "no workloads after the header");
  if (breakdown_path.empty()) return apps;

  CsvReader b(breakdown_path);
  if (!b.Next(&f) || f.size() < 4 || f[0] != "workload" || f[1] != "predicted_w" ||
      f[2] != "uncapped_w") {
    throw InputError(breakdown_path, 1, "",
                     "expected the header workload,predicted_w,uncapped_w,<term>_w...");
  }
  for (size_t i = 3; i < f.size(); ++i) {
    std::string term = f[i];
    if (term.size() > 2 && term.compare(term.size() - 2, 2, "_w") == 0)
      term.resize(term.size() - 2);
    apps.chart.terms.push_back(term);
    if (term.rfind("static_", 0) == 0 || term.rfind("idle_dyn_", 0) == 0) ++apps.chart.grey_terms;
  }
  const size_t width = f.size();
  size_t row = 0;
  while (b.Next(&f)) {
    if (f.size() != width) b.Fail("", fmt::format("{} fields, the header has {}", f.size(), width));
    if (row >= apps.rows.size() || f[0] != apps.rows[row].workload) {
      b.Fail("workload", fmt::format("'{}' is not the predictions' workload {} ({})", f[0], row + 1,
                                     row < apps.rows.size() ? apps.rows[row].workload : "none"));
    }
    BreakdownBar bar;
    bar.label = f[0];
    // A workload predicted beyond the model's training, or with a unit the model has no term for,
    // is marked in the figure as in the table.
    const std::string& flags = apps.rows[row].flags;
    if (flags.find("beyond_training") != std::string::npos ||
        flags.find("no_model_term") != std::string::npos) {
      bar.label += " †";
      apps.chart.note = "† beyond the model's\ntraining range (the\ntable's flags say\nwhich unit)";
    }
    for (size_t i = 3; i < width; ++i)
      bar.term_w.push_back(b.ParseNumber(f[i], apps.chart.terms[i - 3]));
    bar.measured_w = apps.rows[row].measured_w;
    apps.chart.bars.push_back(bar);
    ++row;
  }
  if (row != apps.rows.size()) {
    throw InputError(
        breakdown_path, b.line(), "",
        fmt::format("{} workloads, the predictions {} have {}", row, path, apps.rows.size()));
  }
  // The breakdown is the uncapped model's at its reference clock: the highest clock of the rows
  // (a capped row's f_core_mhz is where it settles).
  double reference_mhz = 0.0;
  for (const ReportApp& a : apps.rows) reference_mhz = std::max(reference_mhz, a.f_core_mhz);
  apps.chart.pair_label = fmt::format("{:.0f} MHz", reference_mhz);
  apps.chart.average_label = "mean";
  return apps;
}

ReportWhatIf ReadReportWhatIf(const std::string& path) {
  ReportWhatIf w;
  w.path = path;
  CsvReader reader(path);
  std::vector<std::string> f;
  if (!reader.Next(&f)) throw InputError(path, 1, "", "empty file");
  const std::vector<std::string> header = f;
  const auto c =
      Columns(header,
              {"workload", "setting", "setting_value", "f_core_mhz", "predicted_w", "run_time_s",
               "energy_j", "time_change_pct", "energy_change_pct", "flags"},
              reader);
  auto text = [&](const char* name) {
    const auto it = c.find(name);
    return it == c.end() ? std::string() : f[it->second];
  };
  while (reader.Next(&f)) {
    if (f.size() != header.size())
      reader.Fail("", fmt::format("{} fields, the header has {}", f.size(), header.size()));
    ReportWhatIfRow r;
    r.workload = text("workload");
    r.setting = text("setting");
    auto number = [&](const char* name) {
      const auto it = c.find(name);
      return it == c.end() ? std::numeric_limits<double>::quiet_NaN()
                           : Optional(reader, f, it->second, name);
    };
    r.setting_value = number("setting_value");
    r.f_core_mhz = number("f_core_mhz");
    r.measured_f_core_mhz = number("measured_f_core_mhz");
    r.predicted_w = number("predicted_w");
    r.run_time_s = number("run_time_s");
    r.energy_j = number("energy_j");
    r.time_change_pct = number("time_change_pct");
    r.energy_change_pct = number("energy_change_pct");
    r.time_model = text("time_model");
    r.flags = text("flags");
    if (w.vf_source.empty()) w.vf_source = text("vf_source");
    w.rows.push_back(std::move(r));
  }
  if (w.rows.empty()) throw InputError(path, 1, "", "no rows after the header");
  return w;
}

}  // namespace wattcal
