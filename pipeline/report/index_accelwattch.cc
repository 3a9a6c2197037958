// The AccelWattch sections of a run report's index: the AccelWattch Eq. 12 model with its scaling
// factors and notes, and its per-component power split.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "report/internal/index_sections.h"

namespace fs = std::filesystem;

namespace wattcal {
namespace index_internal {
namespace {

// Notes of a scaling factor as FormatAccelWattchModelSummary writes them: at a bound, tied to
// the component an ordering binds it to.
std::string FactorNote(const AccelWattchModel& m, size_t i) {
  std::vector<std::string> notes;
  if (m.x[i] <= m.lower_bound[i]) {
    notes.push_back("at lower bound");
  } else if (m.x[i] >= m.upper_bound[i]) {
    notes.push_back("at upper bound");
  }
  for (const Ordering& o : m.orderings) {
    const int a = m.FindComponent(o.lower), b = m.FindComponent(o.upper);
    if (a < 0 || b < 0) continue;
    if ((a == static_cast<int>(i) || b == static_cast<int>(i)) &&
        m.x[static_cast<size_t>(a)] == m.x[static_cast<size_t>(b)]) {
      notes.push_back("tied: " + o.Text());
    }
  }
  std::string out;
  for (const std::string& n : notes) out += (out.empty() ? "" : "; ") + n;
  return out;
}

// The model's heading and the paragraph naming its file and training corpus (model k of
// `num_models`).
void ModelIntro(Document* doc, const ReportAccelWattchModel& rm, size_t k, size_t num_models,
                const Linker& link) {
  const AccelWattchModel& m = rm.model;
  const AccelWattchFitReport& f = m.fit;
  doc->Heading(2, num_models == 1 ? "AccelWattch model" : "AccelWattch model: " + rm.label,
               k == 0 ? "accelwattch_model" : fmt::format("accelwattch_model_{}", k + 1));
  Inline intro = {{"Scaling factors x_i of AccelWattch's dynamic power (MICRO'21 Eqs. 12-14) "
                   "from ",
                   "", false},
                  link.File(rm.path)};
  if (!m.trained_on.empty()) {
    intro.push_back({fmt::format(", fitted on {} kernels of ", f.train_kernels), "", false});
    intro.push_back(link.File(rm.trained_on_path.empty() ? m.trained_on : rm.trained_on_path));
  }
  intro.push_back({m.has_terms
                       ? ". A whole Eq. 12 model: it carries the energy estimates the factors "
                         "scale and the terms kept at x = 1 (constant, static and idle-SM power)."
                       : ". It scales the columns of per-kernel component tables (no energies or "
                         "fixed terms).",
                   "", false});
  doc->Paragraph(intro);
}

// The scaling factors x_i with their bounds and notes, and the truth when the run has one.
void ScalingFactorTable(Document* doc, const ReportAccelWattchModel& rm, const Linker& link) {
  const AccelWattchModel& m = rm.model;
  const bool truth = !rm.true_x.empty();
  std::vector<std::string> header = {"Component", "x", "Lower bound", "Upper bound", "Prior x"};
  if (truth) header.insert(header.end(), {"True x", "Error (%)"});
  header.push_back("Note");
  std::vector<bool> numeric(header.size(), true);
  numeric.front() = false;
  numeric.back() = false;
  std::vector<std::vector<Inline>> rows;
  double sum_abs_error = 0.0, max_abs_error = 0.0;
  int compared = 0;
  for (size_t i = 0; i < m.components.size(); ++i) {
    std::vector<Inline> row = {
        Text(m.components[i]), Text(Fixed(m.x[i], 4)), Text(Significant(m.lower_bound[i])),
        Text(Significant(m.upper_bound[i])), Text(Significant(m.prior_x[i]))};
    if (truth) {
      const auto it = rm.true_x.find(m.components[i]);
      if (it == rm.true_x.end() || !(it->second != 0.0)) {
        row.insert(row.end(), {Text(kDash), Text(kDash)});
      } else {
        const double error = 100.0 * (m.x[i] - it->second) / it->second;
        sum_abs_error += std::abs(error);
        max_abs_error = std::max(max_abs_error, std::abs(error));
        ++compared;
        row.insert(row.end(), {Text(Fixed(it->second, 4)), Text(Fixed(error, 2))});
      }
    }
    const std::string note = FactorNote(m, i);
    row.push_back(Text(note.empty() ? kDash : note));
    rows.push_back(std::move(row));
  }
  doc->Table(header, numeric, rows);
  if (truth) {
    doc->Paragraph(
        {{"True x: the factors the virtual GPU was built to need (expected_scaling_factors of ", "",
          false},
         link.File(rm.truth_path),
         {fmt::format("); error = (x - true x) / true x. Over the {} components compared: "
                      "mean |error| {} %, largest {} %.",
                      compared,
                      compared > 0 ? Fixed(sum_abs_error / compared, 2) : std::string(kDash),
                      compared > 0 ? Fixed(max_abs_error, 2) : std::string(kDash)),
          "", false}});
  }
}

// The ordering constraints between the factors (AccelWattch Eq. 14), enforced and dropped.
void OrderingList(Document* doc, const AccelWattchModel& m) {
  std::vector<Inline> orderings;
  for (const Ordering& o : m.orderings) {
    orderings.push_back(Text(fmt::format("enforced: {} ({})", o.Text(), o.Source())));
  }
  for (const DroppedOrdering& d : m.dropped_orderings) {
    orderings.push_back(Text(fmt::format("dropped: {} ({}): {}", d.ordering.Text(),
                                         d.ordering.Source(), Sentence(d.reason))));
  }
  if (orderings.empty()) {
    doc->Paragraph(Text("No ordering constraint between the factors."));
  } else {
    doc->Paragraph(Text(
        fmt::format("Ordering constraints between the factors (Eq. 14): {} enforced, {} dropped.",
                    m.orderings.size(), m.dropped_orderings.size())));
    doc->List(orderings);
  }
}

// The fit: each start's outcome and cost, and the kept start's training errors.
void FitTables(Document* doc, const AccelWattchFitReport& f) {
  std::vector<std::vector<Inline>> start_rows;
  for (const AccelWattchStartReport& s : f.starts) {
    const bool kept = s.name == f.kept_start;
    start_rows.push_back({Text(s.name + (kept ? " (kept)" : "")),
                          Text(!s.run        ? "not run"
                               : s.converged ? "converged"
                                             : "NOT converged"),
                          Text(s.run ? std::to_string(s.iterations) : kDash),
                          Text(s.run ? Significant(s.initial_cost) : kDash),
                          Text(s.run ? Significant(s.final_cost) : kDash),
                          Text(s.run ? Fixed(s.train_mape_pct, 3) : kDash), Text(s.termination)});
  }
  doc->Paragraph(Text(fmt::format(
      "The fit ({} residual per kernel, prior {} with weight {:g}): each start's Ceres cost "
      "(half the sum of squared residuals) and training MAPE; the start with the lower final "
      "cost is kept.",
      f.residual, f.prior_source, f.prior_weight)));
  doc->Table({"Start", "Outcome", "Iterations", "Initial cost", "Final cost", "Train MAPE (%)",
              "Termination"},
             {false, false, true, true, true, true, false}, start_rows);
  doc->Table({"Kept start", "Converged", "Train kernels", "Train MAPE (%)", "Train max APE (%)",
              "Train RMSE (W)", "Train Pearson r", "Largest constraint violation"},
             {false, false, true, true, true, true, true, true},
             {{Text(f.kept_start), Text(f.converged ? "yes" : "NO"),
               Text(std::to_string(f.train_kernels)), Text(Fixed(f.train_mape_pct, 3)),
               Text(Fixed(f.train_max_ape_pct, 2)), Text(Fixed(f.train_rmse_w, 3)),
               Text(Fixed(f.train_pearson_r, 5)), Text(Significant(f.max_constraint_violation))}});
}

// The energy estimates per event and the energies the fit gives (a whole AccelWattch Eq. 12
// model only).
void EnergyTable(Document* doc, const AccelWattchModel& m, const Linker& link) {
  const AccelWattchEnergies& e = m.energies;
  std::vector<std::vector<Inline>> energy_rows;
  for (const EnergyComponent& c : e.components) {
    std::string events;
    for (const std::string& event : c.events) events += (events.empty() ? "" : ", ") + event;
    const int i = m.FindComponent(c.component);
    energy_rows.push_back(
        {Text(c.component), Inline{{events, "", true}}, Text(Significant(c.energy_per_event_pj)),
         Text(i < 0 ? kDash : Significant(m.x[static_cast<size_t>(i)] * c.energy_per_event_pj)),
         Text(c.clock), Text(c.voltage_scaled ? "yes" : "no")});
  }
  doc->Paragraph({{fmt::format("Energy estimates E-hat_i per event at {:g} MHz (from ",
                               e.reference_f_core_mhz),
                   "", false},
                  link.File(e.source),
                  {"), and the energy the fit gives, x_i E-hat_i; an event rate follows the "
                   "core or the memory clock, and a voltage-scaled energy the core voltage "
                   "squared.",
                   "", false}});
  doc->Table(
      {"Component", "Events (summed)", "E-hat (pJ)", "x E-hat (pJ)", "Clock", "Voltage-scaled"},
      {false, false, true, true, false, false}, energy_rows);
}

// The terms kept at x = 1: constant, static (per category) and idle-SM power, and the voltage
// model (a whole AccelWattch Eq. 12 model only).
void FixedTermTables(Document* doc, const ReportAccelWattchModel& rm, const Linker& link) {
  const AccelWattchModel& m = rm.model;
  const AccelWattchFixedTerms& t = m.fixed;
  std::vector<std::vector<Inline>> static_rows;
  for (const CategoryStaticTerm& c : t.categories) {
    static_rows.push_back(
        {Text(c.category + (c.category == t.default_category ? " (default)" : "")),
         Text(c.model == "half_warp" ? "half_warp (Eq. 5)"
              : c.model == "linear"  ? "linear (Eq. 4)"
                                     : c.model),
         Text(Fixed(c.p_static_first_lane_w, 3)), Text(Fixed(c.p_static_add_lane_w, 4)),
         Text(Watts(AccelWattchFixedTerms::StaticAllSmsW(c, t.warp_size, t.half_warp_lanes)))});
  }
  doc->Paragraph({{fmt::format("Terms kept at x = 1. Constant power P_const = {} W (Eq. 3, "
                               "from ",
                               Fixed(t.p_const_w, 3)),
                   "", false},
                  link.File(t.constant_source),
                  {fmt::format("). Static power of all {} SMs per category at {:g} MHz (Eqs. "
                               "4-5, 9; warp of {} lanes, half warp {}; from ",
                               t.num_sms, t.static_f_core_mhz, t.warp_size, t.half_warp_lanes),
                   "", false},
                  link.File(t.static_source),
                  {"); a kernel's static power scales with its share of active SMs:", "", false}});
  doc->Table({"Category", "Model", "P_first (W)", "P_add (W)",
              fmt::format("All SMs, {} lanes (W)", t.warp_size)},
             {false, false, true, true, true}, static_rows);
  doc->Paragraph({{fmt::format("One idle SM draws {} W at {:g} MHz (Eqs. 6-8, from ",
                               Fixed(t.p_idle_sm_w, 4), t.idle_f_core_mhz),
                   "", false},
                  link.File(t.idle_source),
                  {"). Voltage model: " +
                       (rm.voltage_model.empty() ? "V proportional to f_core" : rm.voltage_model) +
                       ". Between core clocks static and idle power scale with f and a "
                       "voltage-scaled event's energy with f^2.",
                   "", false}});
}

}  // namespace

void AccelWattchModelSection(Document* doc, const RunReport& r, const Linker& link) {
  for (size_t k = 0; k < r.accelwattch_models.size(); ++k) {
    const ReportAccelWattchModel& rm = r.accelwattch_models[k];
    ModelIntro(doc, rm, k, r.accelwattch_models.size(), link);
    ScalingFactorTable(doc, rm, link);
    OrderingList(doc, rm.model);
    FitTables(doc, rm.model.fit);
    if (!rm.model.has_terms) continue;
    EnergyTable(doc, rm.model, link);
    FixedTermTables(doc, rm, link);
  }
}

void AccelWattchBreakdownSection(Document* doc, const RunReport& r, const ReportOptions& o,
                                 const Linker& link) {
  for (size_t k = 0; k < r.accelwattch_breakdowns.size(); ++k) {
    const ReportAccelWattchBreakdown& b = r.accelwattch_breakdowns[k];
    doc->Heading(2,
                 r.accelwattch_breakdowns.size() == 1
                     ? "AccelWattch power breakdown"
                     : "AccelWattch power breakdown: " + fs::path(b.path).filename().string(),
                 k == 0 ? "accelwattch_breakdown" : fmt::format("accelwattch_breakdown_{}", k + 1));
    doc->Paragraph(
        {{"Eq. 12's terms as wattcal-predict --breakdown evaluated them (", "", false},
         link.File(b.path),
         {"), averaged over the kernels at each core clock; measured kernels are those evaluated "
          "at the pair they were measured at.",
          "", false}});
    std::vector<std::vector<Inline>> rows;
    for (const ClockSplit& s : b.clocks) {
      rows.push_back(
          {Text(fmt::format("{:g}", s.f_core_mhz)), Text(std::to_string(s.kernels)),
           Text(Watts(s.const_w)), Text(Watts(s.static_w)), Text(Watts(s.idle_w)),
           Text(Watts(s.dynamic_w)), Text(Watts(s.predicted_w)),
           Text(s.predicted_w > 0.0 ? Fixed(100.0 * s.dynamic_w / s.predicted_w, 1) : kDash),
           Text(std::to_string(s.measured_kernels)), Text(Fixed(s.mape_pct, 2))});
    }
    doc->Table({"f_core_mhz", "Kernels", "const_w", "static_w", "idle_w", "dynamic_w",
                "predicted_w", "Dynamic share (%)", "Measured kernels", "MAPE (%)"},
               std::vector<bool>(10, true), rows);
    if (o.figures) {
      for (const ReportFigure& f : r.figures) {
        if (f.section == "accelwattch_breakdown" && f.index == static_cast<int>(k)) {
          doc->Figure("figures/" + f.stem + ".png", "figures/" + f.stem + ".svg", f.title,
                      Text(f.caption));
        }
      }
    }
  }
}

}  // namespace index_internal
}  // namespace wattcal
