// The run report's answer first: a short summary of the run, then the applications (their power,
// energy, interval, flags and clock, the breakdown once, the what-if when the run asked for one).
// The cross-validation and the model's details follow them (report/index_page.cc).
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "report/internal/index_sections.h"

namespace wattcal {
namespace index_internal {

namespace {

// The first cross-validation of the run (its MAPE is the model's headline), else nullptr.
const ReportValidation* CrossValidation(const RunReport& r) {
  for (const ReportValidation& v : r.validations) {
    if (v.cross_validated) return &v;
  }
  return nullptr;
}

std::string CappedClocks(const ReportApps& a) {
  std::vector<std::string> parts;
  for (const ReportApp& app : a.rows) {
    if (!app.capped) continue;
    std::string part = app.workload;
    if (std::isfinite(app.f_core_mhz)) part += fmt::format(" at {:.0f} MHz", app.f_core_mhz);
    if (std::isfinite(app.measured_f_core_mhz))
      part += fmt::format(" (ran at {:.0f} MHz)", app.measured_f_core_mhz);
    parts.push_back(part);
  }
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? ", " : "") + parts[i];
  return s;
}

// Where the what-if's curve came from: the model's own sentence when the table names the model's
// curve, else the table's words.
std::string CurveSource(const RunReport& r, const ReportWhatIf& w) {
  if (r.primary_model >= 0 && w.vf_source.rfind("model_vf_curve", 0) == 0) {
    const VfCurve& curve = r.models[static_cast<size_t>(r.primary_model)].model.vf_curve;
    if (curve.known() && !curve.source.empty()) return curve.source;
  }
  return w.vf_source;
}

// The what-if table of the same predict run: per application and setting, the clock, power,
// run time and energy, and their change against the run as recorded.
void WhatIfSection(Document* doc, const RunReport& r, const ReportOptions& o, const Linker& link) {
  const ReportWhatIf& w = r.apps.what_if;
  if (w.path.empty()) return;
  doc->Heading(3, "What if: another clock or power limit", "what_if");
  doc->Paragraph({{"From each application's one profiled run (", "", false},
                  link.File(w.path),
                  {"): the clock it would settle at, its power, run time and energy, against the "
                   "run as recorded. The voltage-frequency curve: " +
                       Sentence(CurveSource(r, w)),
                   "", false}});
  std::vector<std::vector<Inline>> rows;
  for (const ReportWhatIfRow& x : w.rows) {
    const std::string setting = x.setting == "clock"         ? Fixed(x.setting_value, 0) + " MHz"
                                : x.setting == "power_limit" ? Fixed(x.setting_value, 0) + " W"
                                                             : std::string("as recorded");
    rows.push_back({Text(x.workload), Text(setting), Text(Fixed(x.f_core_mhz, 0)),
                    Text(Fixed(x.measured_f_core_mhz, 0)), Text(Watts(x.predicted_w)),
                    Text(Fixed(x.run_time_s, 3)), Text(Fixed(x.energy_j, 1)),
                    Text(Fixed(x.time_change_pct, 1)), Text(Fixed(x.energy_change_pct, 1)),
                    Text(x.time_model.empty() ? kDash : x.time_model),
                    Text(x.flags.empty() ? kDash : x.flags)});
  }
  doc->Table(
      {"Workload", "setting", "f_core_mhz", "measured_f_core_mhz", "predicted_w", "run_time_s",
       "energy_j", "time_change_pct", "energy_change_pct", "time_model", "flags"},
      {false, false, true, true, true, true, true, true, true, false, false}, rows);
  AddFigures(doc, r, o, "what_if");
}

}  // namespace

void SummarySection(Document* doc, const RunReport& r) {
  if (!r.has_apps) return;
  doc->Heading(2, "Summary", "summary");
  std::vector<Inline> items;
  if (r.primary_model >= 0) {
    const ReportModel& m = r.models[static_cast<size_t>(r.primary_model)];
    std::string s = fmt::format("Model: {}, {} training rows", m.label, m.model.fit.train_rows);
    if (!m.model.gpu.empty()) s += " of " + m.model.gpu;
    if (m.model.power_limit_w) s += fmt::format(", board limit {:.0f} W", *m.model.power_limit_w);
    if (const ReportValidation* cv = CrossValidation(r)) {
      s += fmt::format("; cross-validated MAPE {}% (below the applications)",
                       Fixed(Number(cv->metrics, "mape_pct"), 2));
    }
    items.push_back(Text(Sentence(s)));
  }
  const ReportApps& a = r.apps;
  std::string s = fmt::format("Applications: {} predicted from their counters", a.rows.size());
  if (a.measured() > 0) {
    s += fmt::format("; {} measured: power MAPE {:.2f}%", a.measured(), a.mape_pct());
    if (std::isfinite(a.energy_mape_pct()))
      s += fmt::format(", energy MAPE {:.2f}% (the run's energy over its windows)",
                       a.energy_mape_pct());
    if (a.with_interval() > 0) {
      s += fmt::format(", {} of {} measured powers inside their 95% interval", a.inside_interval(),
                       a.with_interval());
    }
  } else {
    s += " (none measured: no power log)";
  }
  items.push_back(Text(Sentence(s)));
  const std::string capped = CappedClocks(a);
  if (!capped.empty()) items.push_back(Text(Sentence("Held by the board limit: " + capped)));
  int extrapolating = 0;
  for (const ReportApp& app : a.rows) {
    extrapolating += app.flags.find("extrapolates:") != std::string::npos ||
                             app.flags.find("beyond_training") != std::string::npos
                         ? 1
                         : 0;
  }
  if (extrapolating > 0) {
    items.push_back(Text(fmt::format(
        "{} of the applications {} on a component beyond what the model was trained on (the "
        "flags say which): read {} power as an extrapolation.",
        extrapolating, extrapolating == 1 ? "rests" : "rest",
        extrapolating == 1 ? "its" : "their")));
  }
  doc->List(items);
}

void AppsSection(Document* doc, const RunReport& r, const ReportOptions& o, const Linker& link) {
  if (!r.has_apps) return;
  const ReportApps& a = r.apps;
  doc->Heading(2, "Applications", "apps");
  Inline intro = {
      {fmt::format("{} application workload{} predicted from their counters alone "
                   "(wattcal-predict --capture, ",
                   a.rows.size(), a.rows.size() == 1 ? "" : "s"),
       "", false},
      link.File(a.path),
      {"): power at the clock each runs at (the board limit's where it caps), energy over the "
       "run's windows, and, where the capture had a power log, the measured power and energy. ",
       "", false}};
  intro.push_back({AppsMeasuredSentence(a), "", false});
  doc->Paragraph(intro);
  const AppsTable table = AppsTableOf(a);
  std::vector<std::vector<Inline>> rows;
  for (const std::vector<std::string>& cells : table.rows) {
    rows.emplace_back();
    for (const std::string& cell : cells) rows.back().push_back(Text(cell));
  }
  doc->Table(table.header, table.numeric, rows);
  doc->Paragraph(
      Text("Flags: capped = the model's power exceeds the board limit: the prediction is the "
           "limit, at the clock where the model meets it; extrapolates:<component> = a component "
           "that carries more than a tenth of the power is used beyond what training covered, or "
           "its coefficient's interval holds zero; util_beyond_training:<component> = the workload "
           "uses that component more than any training window did; measured: power_cap/"
           "clock_moved = the GPU throttled during the measurement."));
  AddFigures(doc, r, o, "apps");
  WhatIfSection(doc, r, o, link);
}

}  // namespace index_internal
}  // namespace wattcal
