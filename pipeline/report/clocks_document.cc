#include "report/clocks_document.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include <fmt/format.h>

namespace wattcal {
namespace {

std::string F(double v, int digits) {
  return std::isfinite(v) ? fmt::format("{:.{}f}", v, digits) : "–";
}

void AddFigure(Document* doc, const std::vector<ClocksFigure>& figures, const std::string& stem,
               const std::string& caption) {
  for (const ClocksFigure& f : figures) {
    if (f.stem == stem)
      doc->Figure("figures/" + stem + ".png", "figures/" + stem + ".svg", f.title, Text(caption));
  }
}

void DataSection(Document* doc, const ClocksReportInput& in, const Linker& link) {
  const ClockRunTable& t = *in.table;
  int held = 0;
  for (const ClockRun& r : t.runs) held += r.HeldBelowRequest() ? 1 : 0;
  const std::vector<double> clocks = t.RequestedClocks();
  Inline p = {Span{"Data: ", "", false}};
  std::vector<std::string> paths;
  for (const ClockRun& r : t.runs) {
    if (std::find(paths.begin(), paths.end(), r.path) == paths.end()) paths.push_back(r.path);
  }
  for (size_t i = 0; i < paths.size(); ++i) {
    if (i > 0) p.push_back(Span{" and ", "", false});
    p.push_back(link.File(paths[i]));
  }
  p.push_back(Span{
      fmt::format(" ({} format): {} workloads at {} requested core clocks ({:g} .. {:g} MHz), "
                  "{} runs{}; {} ran below the requested clock (the power limit held it) and "
                  "enter at the clock they ran at. No per-unit counters: each workload's "
                  "activity is one unknown.",
                  t.format, t.Workloads().size(), clocks.size(), clocks.front(), clocks.back(),
                  t.runs.size(),
                  t.merged_repeats > 0 ? fmt::format(" ({} repeats merged)", t.merged_repeats) : "",
                  held),
      "", false});
  doc->Paragraph(p);
  doc->Paragraph(
      Text("Model (TPDS'19 Eq. 4 with one activity per workload and one memory clock): "
           "P(w, f) = a0·v(f) + c + v(f)²·f·g_w, the voltage v non-decreasing and 1 at the "
           "reference clock, every coefficient ≥ 0, fitted jointly with Ceres on " +
           std::string(in.fit->residuals == VfResiduals::kAbsolute
                           ? "absolute errors in W (plain least squares)."
                           : "relative errors (each run's error over its power).")));
}

void VoltageSection(Document* doc, const ClocksReportInput& in,
                    const std::vector<ClocksFigure>& figures) {
  const VfFitResult& fit = *in.fit;
  const VfModel& m = fit.model;
  doc->Heading(2, "The voltage-frequency curve", "voltages");
  doc->Paragraph(Text(fmt::format(
      "Fitted on every workload: training MAPE {:.2f}% over {} runs ({} Ceres iterations, {}); "
      "static "
      "power a0 = {:.2f} W at v = 1, constant power c = {:.2f} W. The voltage is relative to {:g} "
      "MHz; "
      "it is flat where the GPU holds its lowest voltage.",
      fit.mape_pct, fit.fitted_w.size(), fit.iterations,
      fit.converged ? "converged" : "NOT converged", m.static_w, m.constant_w, m.reference_mhz)));
  AddFigure(
      doc, figures, "vf_curve",
      "The estimated voltage at each calibrated clock (blue), each cross-validation fold's curve "
      "(grey: how much it moves when a fifth of the workloads is left out)" +
          std::string(in.measured_voltages != nullptr
                          ? ", and the measured supply voltage relative to the reading nearest the "
                            "reference clock."
                          : "."));
  // The measured supply voltage, relative to the reading nearest the reference clock.
  const std::vector<VoltageReading>* measured = in.measured_voltages;
  double ref_mv = 0.0;
  if (measured != nullptr && !measured->empty()) {
    const VoltageReading* ref = &measured->front();
    for (const VoltageReading& r : *measured) {
      if (std::abs(r.f_core_mhz - m.reference_mhz) < std::abs(ref->f_core_mhz - m.reference_mhz))
        ref = &r;
    }
    ref_mv = ref->voltage_mv;
    doc->Paragraph(Text(
        fmt::format("The measured supply voltage ({} readings from {}) is shown relative to its "
                    "reading at {:g} MHz ({:.1f} mV).",
                    measured->size(), in.measured_voltage_path, ref->f_core_mhz, ref_mv)));
  }
  auto measured_at = [&](double f) {
    if (ref_mv <= 0.0) return std::string("–");
    for (const VoltageReading& r : *measured) {
      if (std::abs(r.f_core_mhz - f) < 1.0) return F(r.voltage_mv / ref_mv, 4);
    }
    return std::string("–");
  };
  std::vector<std::vector<Inline>> rows;
  for (size_t i = 0; i < m.clocks_mhz.size(); ++i) {
    double lo = m.v_rel[i], hi = m.v_rel[i];
    for (const VfModel& f : in.cv->fold_models) {
      lo = std::min(lo, f.v_rel[i]);
      hi = std::max(hi, f.v_rel[i]);
    }
    rows.push_back({Text(fmt::format("{:g}", m.clocks_mhz[i])), Text(F(m.v_rel[i], 4)),
                    Text(F(lo, 4) + " .. " + F(hi, 4))});
    if (ref_mv > 0.0) rows.back().push_back(Text(measured_at(m.clocks_mhz[i])));
  }
  std::vector<std::string> header = {"f_core (MHz)", "v_rel", "range over CV folds"};
  if (ref_mv > 0.0) header.push_back("measured (relative)");
  if (rows.size() <= 40) doc->Table(header, std::vector<bool>(header.size(), true), rows);
  if (!fit.warnings.empty()) {
    std::vector<Inline> items;
    for (const std::string& w : fit.warnings) items.push_back(Text(w));
    doc->Paragraph(Text(fmt::format("{} warning(s) of the data:", fit.warnings.size())));
    doc->List(items);
  }
}

void PowerSection(Document* doc, const ClocksReportInput& in,
                  const std::vector<ClockWorkloadError>& errors,
                  const std::vector<ClocksFigure>& figures) {
  const ClockCvResult& cv = *in.cv;
  doc->Heading(2, "Power at every clock from one clock", "power");
  doc->Paragraph(Text(fmt::format(
      "{}-fold cross-validation by workload: the model is fitted without the held-out workloads, "
      "each of "
      "them is measured at the anchor clock {:g} MHz only, and predicted at every other clock it "
      "ran at "
      "({} points). Mean absolute error {:.2f}%, against {:.2f}% for P ∝ f from the same anchor.",
      cv.fold_workloads.size(), cv.anchor_mhz, cv.points.size(), cv.mape_pct,
      cv.proportional_mape_pct)));
  AddFigure(
      doc, figures, "power_vs_clock",
      "Measured power (black), the model's prediction from the anchor (blue) and P ∝ f (dashed), "
      "for up to nine workloads from the best predicted to the worst, each at the clock it ran at; "
      "the "
      "dotted red line is the power limit when one is given.");
  AddFigure(doc, figures, "cv_error_by_clock",
            "The error at each requested clock; the dotted line is the anchor.");
  std::vector<std::vector<Inline>> rows;
  for (auto it = errors.rbegin(); it != errors.rend(); ++it) {
    rows.push_back({Text(it->workload), Text(std::to_string(it->fold + 1)),
                    Text(std::to_string(it->points)), Text(F(it->mape_pct, 2)),
                    Text(F(it->proportional_pct, 2))});
  }
  doc->Table({"workload (worst first)", "fold", "points", "model MAPE (%)", "P ∝ f MAPE (%)"},
             {false, true, true, true, true}, rows);
  std::vector<std::vector<Inline>> limited;
  for (const ClockCvPoint& p : cv.points) {
    if (!p.measured_held_below && !(p.predicted_held_mhz < p.f_requested_mhz - 1e-6)) continue;
    limited.push_back({Text(p.workload), Text(fmt::format("{:g}", p.f_requested_mhz)),
                       Text(F(p.f_core_mhz, 0)), Text(F(p.predicted_held_mhz, 0)),
                       Text(F(p.measured_w, 1)), Text(F(p.predicted_held_w, 1))});
  }
  if (!limited.empty() && in.fit->model.power_limit_w) {
    doc->Paragraph(
        Text(fmt::format("Runs the power limit ({:g} W) held below the requested clock, measured "
                         "or predicted: the clock "
                         "the model says the limit holds, beside the one measured.",
                         *in.fit->model.power_limit_w)));
    doc->Table({"workload", "requested (MHz)", "ran at (MHz)", "predicted hold (MHz)",
                "measured (W)", "predicted (W)"},
               {false, true, true, true, true, true}, limited);
  }
  if (!cv.notes.empty()) {
    std::vector<Inline> items;
    for (const std::string& n : cv.notes) items.push_back(Text(n));
    doc->List(items);
  }
}

void EnergySection(Document* doc, const ClocksReportInput& in,
                   const std::vector<ClocksFigure>& figures) {
  const ClockCvResult& cv = *in.cv;
  if (cv.choices.empty()) return;
  doc->Heading(2, "The energy-optimal clock", "energy");
  doc->Paragraph(
      Text(fmt::format("For each held-out workload: its power from the anchor clock (above), its "
                       "run time T(f) = t_mem + c/f "
                       "through its run times at two clocks, its energy P·T at every requested "
                       "clock (at the clock the power "
                       "limit holds where P exceeds it), and the clock of least energy. Scored "
                       "against the measured energies: "
                       "the energy lost against the workload's true optimum, {} workloads.",
                       cv.choices.size())));
  doc->Table(
      {"choice", "mean energy lost (%)"}, {false, true},
      {{Text("the model's clock of least energy"), Text(F(cv.mean_energy_loss_pct, 2))},
       {Text("the same, between the two timed clocks only (T interpolated, not extrapolated)"),
        Text(F(cv.mean_within_loss_pct, 2))},
       {Text("always the highest clock"), Text(F(cv.mean_highest_loss_pct, 2))},
       {Text("one clock, best on average over the training workloads"),
        Text(F(cv.mean_best_fixed_loss_pct, 2))},
       {Text("the model's clock of least energy x delay (EDP lost)"),
        Text(F(cv.mean_edp_loss_pct, 2))}});
  AddFigure(doc, figures, "energy_vs_clock",
            "Measured energy per run (black) and the prediction (blue; dashed: the run time from "
            "the anchor alone); the chosen clock (triangle) and the measured optimum (circle).");
  std::vector<std::vector<Inline>> rows;
  for (const ClockChoice& c : cv.choices) {
    rows.push_back({Text(c.workload), Text(fmt::format("{:g}", c.chosen_mhz)),
                    Text(fmt::format("{:g}", c.optimum_mhz)), Text(F(c.energy_loss_pct, 2)),
                    Text(F(c.highest_loss_pct, 2)), Text(fmt::format("{:g}", c.best_fixed_mhz)),
                    Text(F(c.best_fixed_loss_pct, 2))});
  }
  doc->Table({"workload", "chosen (MHz)", "optimum (MHz)", "lost (%)", "highest clock: lost (%)",
              "best fixed (MHz)", "best fixed: lost (%)"},
             {false, true, true, true, true, true, true}, rows);
}

void EnergyAtClocksSection(Document* doc, const ClocksReportInput& in,
                           const std::vector<ClocksFigure>& figures) {
  const ClockCvResult& cv = *in.cv;
  if (cv.energy_by_clock.empty()) return;
  const EnergyAtClock& all = cv.energy_overall;
  doc->Heading(2, "Energy at every clock from one clock", "energy-at-clocks");
  doc->Paragraph(Text(fmt::format(
      "Each held-out workload's energy per run at every requested clock, predicted from its run "
      "at {:g} MHz: power from the anchor (above) times the run time, against the measured "
      "energy ({} points, the anchor left out). Energy MAPE {:.2f}% with T(f) = t_mem + c/f "
      "through the run times at the two timed clocks, {:.2f}% with the anchor's run time alone "
      "(T(f) = T(anchor)·f_anchor/f: the whole run scales with the core clock). At a timed clock "
      "the first has nearly the measured run time (at the clock the model says the run holds), "
      "so its error there is mostly the power's.",
      cv.anchor_mhz, all.points, all.energy_mape_pct, all.energy_anchor_time_mape_pct)));
  AddFigure(doc, figures, "energy_error_by_clock",
            "The energy error at each requested clock, run time through the two timed clocks "
            "(solid) and from the anchor alone (dashed), beside the power's CV error; the dotted "
            "line is the anchor.");
  std::vector<std::vector<Inline>> rows;
  for (const EnergyAtClock& e : cv.energy_by_clock) {
    rows.push_back({Text(fmt::format("{:g}", e.f_requested_mhz)), Text(std::to_string(e.points)),
                    Text(F(e.energy_mape_pct, 2)), Text(F(e.energy_anchor_time_mape_pct, 2)),
                    Text(F(e.time_mape_pct, 2)), Text(F(e.time_anchor_mape_pct, 2))});
  }
  rows.push_back({Text("all"), Text(std::to_string(all.points)), Text(F(all.energy_mape_pct, 2)),
                  Text(F(all.energy_anchor_time_mape_pct, 2)), Text(F(all.time_mape_pct, 2)),
                  Text(F(all.time_anchor_mape_pct, 2))});
  doc->Table({"requested (MHz)", "points", "energy MAPE (%), T timed", "energy MAPE (%), T anchor",
              "run-time MAPE (%), timed", "run-time MAPE (%), anchor"},
             {true, true, true, true, true, true}, rows);
}

void IdleSection(Document* doc, const ClocksReportInput& in,
                 const std::vector<ClocksFigure>& figures, const Linker& link) {
  if (in.idle == nullptr) return;
  const IdleConstantFit& f = *in.idle;
  doc->Heading(2, "Constant power from the idle curve", "constant");
  doc->Paragraph(
      {Span{"Idle power at locked clocks (", "", false}, link.File(in.idle_curve->path),
       Span{fmt::format(
                "), {} points within the calibrated clocks ({:g} .. {:g} MHz; {} outside left "
                "out), fitted two ways (AccelWattch Fig. 2's question: what is left at f → 0).",
                f.points, f.f_min_mhz, f.f_max_mhz, f.points_outside),
            "", false}});
  doc->Table({"fit", "P_const (W)", "RMSE (W)"}, {false, true, true},
             {{Text("s·v(f) + d·v(f)²·f + P_const, with the estimated voltages"),
               Text(F(f.p_const_w, 2)), Text(F(f.rmse_w, 3))},
              {Text("β·f³ + τ·f + P_const (AccelWattch Eq. 3, V ∝ f)"),
               Text(F(f.cubic.p_const_w, 2)), Text(F(f.cubic.rmse_w, 3))}});
  if (f.v_max < 1.25 * f.v_min) {
    doc->Paragraph(Text(fmt::format(
        "Read P_const with care: over these clocks the estimated voltage varies only from {:.3f} "
        "to {:.3f}, so "
        "the static power s·v and the constant P_const are nearly collinear (s = {:.1f} W); the "
        "cubic's τ = {:.4f} "
        "W/MHz{}.",
        f.v_min, f.v_max, f.static_w, f.cubic.tau_w_per_mhz,
        f.cubic.tau_w_per_mhz < 0 ? " is negative, which no static power can be" : "")));
  }
  AddFigure(doc, figures, "idle_constant",
            "The measured idle power and both fits over the calibrated clocks.");
}

}  // namespace

std::vector<ClockWorkloadError> ClockErrorsByWorkload(const ClockCvResult& cv) {
  std::vector<ClockWorkloadError> out;
  std::map<std::string, size_t> at;
  for (const ClockCvPoint& p : cv.points) {
    auto it = at.find(p.workload);
    if (it == at.end()) {
      it = at.emplace(p.workload, out.size()).first;
      out.push_back({p.workload, p.fold, 0, 0.0, 0.0});
    }
    ClockWorkloadError& e = out[it->second];
    ++e.points;
    e.mape_pct += 100.0 * std::abs(p.predicted_w - p.measured_w) / p.measured_w;
    e.proportional_pct += 100.0 * std::abs(p.proportional_w - p.measured_w) / p.measured_w;
  }
  for (ClockWorkloadError& e : out) {
    e.mape_pct /= e.points;
    e.proportional_pct /= e.points;
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const ClockWorkloadError& a, const ClockWorkloadError& b) {
                     return a.mape_pct < b.mape_pct;
                   });
  return out;
}

Document ClocksDocument(const ClocksReportInput& in, const std::vector<ClockWorkloadError>& errors,
                        const std::vector<ClocksFigure>& figures) {
  Document doc;
  const Linker link(in.out_dir);
  doc.Heading(1, in.title);
  DataSection(&doc, in, link);
  VoltageSection(&doc, in, figures);
  PowerSection(&doc, in, errors, figures);
  EnergyAtClocksSection(&doc, in, figures);
  EnergySection(&doc, in, figures);
  IdleSection(&doc, in, figures, link);
  doc.Heading(2, "Files", "files");
  std::vector<Inline> items;
  // The run's own outputs are linked by their relative path (they are committed with this page).
  const std::filesystem::path base = std::filesystem::absolute(in.out_dir).lexically_normal();
  for (const auto& [what, path] : in.files) {
    const std::string rel = std::filesystem::absolute(path)
                                .lexically_normal()
                                .lexically_relative(base)
                                .generic_string();
    items.push_back({Span{rel, rel, true}, Span{": " + what, "", false}});
  }
  doc.List(items);
  return doc;
}

}  // namespace wattcal
