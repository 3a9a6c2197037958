// The run report's index (report/index_page.cc) as sections built by more than one file: the
// formatting helpers they share and the sections that live apart (index_accelwattch.cc).
// Internal to report/.
#pragma once

#include <cmath>
#include <limits>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/document.h"
#include "report/run_report.h"

namespace wattcal {
namespace index_internal {

inline constexpr const char* kDash = "–";  // an empty cell

inline std::string Fixed(double value, int digits) {
  return std::isfinite(value) ? fmt::format("{:.{}f}", value, digits) : kDash;
}

inline std::string Significant(double value) {
  return std::isfinite(value) ? fmt::format("{:.5g}", value) : kDash;
}

inline double Number(const nlohmann::json& j, const std::string& key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return j[key].get<double>();
}

inline std::string Sentence(const std::string& text) {
  if (text.empty()) return text;
  const char last = text.back();
  return last == '.' || last == ')' ? text : text + ".";
}

// Watts in a table cell.
inline std::string Watts(double w) { return Fixed(w, 2); }

// The run's figures of `section`, each with its caption (none with --no-figures).
inline void AddFigures(Document* doc, const RunReport& r, const ReportOptions& o,
                       const std::string& section) {
  if (!o.figures) return;
  for (const ReportFigure& f : r.figures) {
    if (f.section != section) continue;
    doc->Figure("figures/" + f.stem + ".png", "figures/" + f.stem + ".svg", f.title,
                Text(f.caption));
  }
}

// AccelWattch's Eq. 12 model with its scaling factors, and its power split (index_accelwattch.cc).
void AccelWattchModelSection(Document* doc, const RunReport& r, const Linker& link);
void AccelWattchBreakdownSection(Document* doc, const RunReport& r, const ReportOptions& o,
                                 const Linker& link);

// With applications: a short summary of the run (model, cross-validation, the applications'
// power and energy errors, intervals, capped clocks), then their table and breakdown
// (index_apps.cc). Nothing without applications.
void SummarySection(Document* doc, const RunReport& r);
void AppsSection(Document* doc, const RunReport& r, const ReportOptions& o, const Linker& link);

}  // namespace index_internal
}  // namespace wattcal
