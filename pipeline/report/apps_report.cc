#include "report/apps_report.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <map>

#include "io/csv_reader.h"
#include "report/index_sections.h"
#include "util/errors.h"

namespace wattcal {

namespace {

constexpr const char* kAppsHeader = "workload,predicted_w,uncapped_w,capped,";

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

}  // namespace

int ReportApps::measured() const { return MeanAbs(rows, &ReportApp::error_pct).second; }
double ReportApps::mape_pct() const { return MeanAbs(rows, &ReportApp::error_pct).first; }
int ReportApps::energy_measured() const {
  return MeanAbs(rows, &ReportApp::energy_error_pct).second;
}
double ReportApps::energy_mape_pct() const {
  return MeanAbs(rows, &ReportApp::energy_error_pct).first;
}

AppsTable AppsTableOf(const ReportApps& apps) {
  using index_internal::Fixed;
  using index_internal::kDash;
  using index_internal::Watts;
  AppsTable t;
  t.header = {"Workload",         "predicted_w", "uncapped_w",        "measured_w",
              "error_pct",        "duration_s",  "energy_j",          "measured_energy_j",
              "energy_error_pct", "steps",       "energy_per_step_j", "kernel_time_ms",
              "windows",          "flags"};
  t.numeric.assign(t.header.size(), true);
  t.numeric.front() = false;
  t.numeric.back() = false;
  for (const ReportApp& app : apps.rows) {
    std::string flags = app.flags;
    if (!app.measured_flags.empty())
      flags += (flags.empty() ? "" : "; ") + std::string("measured: ") + app.measured_flags;
    t.rows.push_back({app.workload, Watts(app.predicted_w),
                      app.capped ? Watts(app.uncapped_w) : kDash, Watts(app.measured_w),
                      Fixed(app.error_pct, 1), Fixed(app.duration_s, 3), Fixed(app.energy_j, 1),
                      Fixed(app.measured_energy_j, 1), Fixed(app.energy_error_pct, 1),
                      app.steps > 0 ? std::to_string(app.steps) : std::string(kDash),
                      Fixed(app.energy_per_step_j, 4), Fixed(app.kernel_time_s * 1e3, 2),
                      std::to_string(app.windows), flags.empty() ? std::string(kDash) : flags});
  }
  return t;
}

std::string AppsMeasuredSentence(const ReportApps& apps) {
  const int measured = apps.measured();
  if (measured == 0) return "None was measured (no power log): these are predictions only.";
  std::string s =
      fmt::format("{} of them also have measured power: MAPE {:.2f}%", measured, apps.mape_pct());
  if (apps.energy_measured() > 0) {
    s += fmt::format(
        "; measured energy over the run as it ran (whole windows): energy MAPE "
        "{:.2f}% over {}",
        apps.energy_mape_pct(), apps.energy_measured());
  }
  return s + ".";
}

bool IsAppPredictionsCsv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  std::getline(in, line);
  return line.rfind(kAppsHeader, 0) == 0;
}

ReportApps ReadReportApps(const std::string& path, const std::string& breakdown_path) {
  ReportApps apps;
  apps.path = path;
  apps.breakdown_path = breakdown_path;
  CsvReader reader(path);
  std::vector<std::string> f;
  if (!reader.Next(&f)) throw InputError(path, 1, "", "empty file");
  const std::vector<std::string> header = f;
  const auto c = Columns(
      header,
      {"workload", "predicted_w", "uncapped_w", "capped", "duration_s", "energy_j", "flags",
       "measured_w", "error_pct", "measured_flags", "f_core_mhz", "windows", "measured_energy_j",
       "energy_error_pct", "steps", "energy_per_step_j", "kernel_time_s"},
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
    a.measured_energy_j = Optional(reader, f, c.at("measured_energy_j"), "measured_energy_j");
    a.energy_error_pct = Optional(reader, f, c.at("energy_error_pct"), "energy_error_pct");
    const double steps = Optional(reader, f, c.at("steps"), "steps");
    a.steps = std::isfinite(steps) ? static_cast<int64_t>(steps) : 0;
    a.energy_per_step_j = Optional(reader, f, c.at("energy_per_step_j"), "energy_per_step_j");
    a.kernel_time_s = Optional(reader, f, c.at("kernel_time_s"), "kernel_time_s");
    a.f_core_mhz = reader.ParseNumber(f[c.at("f_core_mhz")], "f_core_mhz");
    a.windows = static_cast<int>(reader.ParseNumber(f[c.at("windows")], "windows"));
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
  apps.chart.pair_label = fmt::format("{:.0f} MHz", apps.rows.front().f_core_mhz);
  apps.chart.average_label = "mean";
  return apps;
}

}  // namespace wattcal
