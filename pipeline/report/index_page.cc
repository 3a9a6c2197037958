// index.html and index.md of a run report (report/run_report.h): one document model, two
// renderers, so that the two pages always say the same.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "model/component_trust.h"
#include "report/comparison_findings.h"
#include "report/document.h"
#include "report/internal/index_sections.h"
#include "report/run_report.h"
#include "util/output.h"
#include "validate/metrics.h"
#include "validate/workload_errors.h"

namespace fs = std::filesystem;

namespace wattcal {
namespace {

using namespace index_internal;  // NOLINT: the index's own helpers

// ---- Building the document
// -----------------------------------------------------------------------

// Each validation's per-workload error: its bar chart and the table of the same numbers
// (validate/workload_errors.h), worst first.
void WorkloadErrorSection(Document* doc, const RunReport& r, const ReportOptions& o) {
  doc->Heading(3, "Error per workload", "workload_errors");
  doc->Paragraph(
      Text("Each held-out workload's measured and predicted power (W, the mean over its "
           "points), its signed error ((predicted − measured) / measured, %; > 0 "
           "over-predicts; the mean over its points) and the absolute value of that error, "
           "sorted by it, largest first; with several points per workload (V-F pairs) also "
           "the workload's MAPE and largest absolute error over its points."));
  for (size_t i = 0; i < r.validations.size(); ++i) {
    const ReportValidation& v = r.validations[i];
    const std::vector<WorkloadError> errors = ComputeWorkloadErrors(v.rows);
    doc->Heading(4, v.label + ": " + std::to_string(errors.size()) + " workloads");
    if (o.figures) {
      for (const ReportFigure& f : r.figures) {
        if (f.kind != FigureKind::kWorkloadErrors || f.index != static_cast<int>(i)) continue;
        doc->Figure("figures/" + f.stem + ".png", "figures/" + f.stem + ".svg", f.title,
                    Text(f.caption));
      }
    }
    const bool several = std::any_of(errors.begin(), errors.end(),
                                     [](const WorkloadError& e) { return e.points > 1; });
    std::vector<std::string> header = {"Workload",      "Points",    "Measured (W)",
                                       "Predicted (W)", "Error (%)", "|Error| (%)"};
    if (several) {
      header.push_back("MAPE (%)");
      header.push_back("Max |error| (%)");
    }
    std::vector<bool> numeric(header.size(), true);
    numeric.front() = false;
    std::vector<std::vector<Inline>> rows;
    for (const WorkloadError& e : errors) {
      std::vector<Inline> row = {Text(e.workload),
                                 Text(std::to_string(e.points)),
                                 Text(Fixed(e.measured_w, 2)),
                                 Text(Fixed(e.predicted_w, 2)),
                                 Text(fmt::format("{:+.2f}", e.error_pct)),
                                 Text(Fixed(e.abs_error_pct, 2))};
      if (several) {
        row.push_back(Text(Fixed(e.mape_pct, 2)));
        row.push_back(Text(Fixed(e.max_abs_error_pct, 2)));
      }
      rows.push_back(std::move(row));
    }
    doc->Table(header, numeric, rows);
  }
}

void ValidationSection(Document* doc, const RunReport& r, const ReportOptions& o,
                       const Linker& link) {
  doc->Heading(2, "Validation", "validation");
  if (r.validations.empty()) {
    doc->Paragraph(
        Text("No validation in this run (its provenance/ records no wattcal-validate run)."));
    return;
  }
  std::vector<double> within = {1.0, 5.0, 10.0};
  const nlohmann::json& first = r.validations.front().metrics;
  if (first.is_object() && first.contains("within_pct") && first["within_pct"].is_array()) {
    within.clear();
    for (const auto& w : first["within_pct"]) {
      if (w.is_number()) within.push_back(w.get<double>());
    }
  }
  std::vector<std::string> header = {"Validation",  "Points",   "MAPE (%)", "CI (%)",
                                     "Max APE (%)", "Bias (%)", "RMSE (W)", "Pearson r"};
  for (double w : within) header.push_back(fmt::format("Within {:g}%", w));
  header.push_back("Files");
  std::vector<bool> numeric(header.size(), true);
  numeric.front() = false;
  numeric.back() = false;
  std::vector<std::vector<Inline>> rows;
  for (const ReportValidation& v : r.validations) {
    const nlohmann::json& m = v.metrics;
    double level = Number(m, "confidence_level");
    if (!std::isfinite(level)) level = 0.95;
    const std::string ci = PercentKeyLabel(100.0 * level);
    std::vector<Inline> row = {
        Text(v.label),
        Text(Significant(Number(m, "points"))),
        Text(Fixed(Number(m, "mape_pct"), 2)),
        Text(fmt::format("{}–{} ({:g}%)", Fixed(Number(m, "mape_ci" + ci + "_low_pct"), 2),
                         Fixed(Number(m, "mape_ci" + ci + "_high_pct"), 2), 100.0 * level)),
        Text(Fixed(Number(m, "max_ape_pct"), 2)),
        Text(Fixed(Number(m, "mean_error_pct"), 2)),
        Text(Fixed(Number(m, "rmse_w"), 2)),
        Text(Fixed(Number(m, "pearson_r"), 4)),
    };
    for (double w : within) {
      const double frac = Number(m, "within_" + PercentKeyLabel(w) + "_pct_frac");
      row.push_back(Text(std::isfinite(frac) ? Fixed(100.0 * frac, 1) + "%" : kDash));
    }
    Inline files = {link.Link("predictions", v.predictions_path)};
    if (!v.metrics_path.empty()) files.push_back(link.Link("metrics", v.metrics_path));
    if (!v.summary_path.empty()) files.push_back(link.Link("summary", v.summary_path));
    Inline joined;
    for (size_t i = 0; i < files.size(); ++i) {
      if (i > 0) joined.push_back({", ", "", false});
      joined.push_back(files[i]);
    }
    row.push_back(joined);
    rows.push_back(std::move(row));
  }
  doc->Paragraph(
      Text("Held-out predictions against measurements: MAPE with its confidence "
           "interval, the largest absolute percentage error, the mean signed error "
           "(bias; > 0 over-predicts), RMSE, Pearson r and the share of points within "
           "each error bound (AccelWattch §6, TPDS'19 §4)."));
  doc->Table(header, numeric, rows);
  std::vector<Inline> sources;
  for (const ReportValidation& v : r.validations) {
    Inline item = Text(v.label + ": ");
    if (!v.title.empty()) item.push_back({v.title + "; ", "", false});
    if (v.cross_validated) {
      item.push_back({"cross-validated on ", "", false});
    } else if (!v.model_path.empty()) {
      item.push_back({"model ", "", false});
      item.push_back(link.File(v.model_path));
      item.push_back({" on ", "", false});
    } else {
      item.push_back({"measurements ", "", false});
    }
    const std::string measured =
        v.measurements_path.empty()
            ? (v.metrics.is_object() && v.metrics.contains("measurements") &&
                       v.metrics["measurements"].is_string()
                   ? v.metrics["measurements"].get<std::string>()
                   : std::string("(not named)"))
            : v.measurements_path;
    item.push_back(link.File(measured));
    sources.push_back(std::move(item));
  }
  doc->List(sources);
  AddFigures(doc, r, o, "validation");
  WorkloadErrorSection(doc, r, o);
}

void BenchmarkSection(Document* doc, const RunReport& r, const ReportOptions& o) {
  if (r.vf_benchmarks.empty()) return;
  doc->Heading(2, "Benchmarks over the V-F pairs", "benchmarks");
  std::string names;
  for (const std::string& b : r.vf_benchmarks) names += (names.empty() ? "" : ", ") + b;
  doc->Paragraph(Text(fmt::format(
      "{} across every V-F pair it was measured at: the model predicts how power scales with "
      "the voltage and frequency of both domains; the scaling-factor mode (TPDS'19 Eq. 10) "
      "anchors the curve at the measured power at the default pair.",
      names)));
  AddFigures(doc, r, o, "benchmarks");
}

// How far to trust each model's components (model/component_trust.h): one table per model.
void ComponentTrustTables(Document* doc, const RunReport& r) {
  for (const ReportModel& m : r.models) {
    const std::vector<ComponentTrust> trust = ComponentTrustTable(m.model);
    std::vector<std::vector<Inline>> rows;
    for (const ComponentTrust& t : trust) {
      std::string flags;
      for (const std::string& f : t.flags) flags += (flags.empty() ? "" : ", ") + f;
      rows.push_back(
          {Text(t.component), Text(t.domain), Text(fmt::format("{:.1f}", t.full_use_w)),
           Text(t.has_ci ? fmt::format("[{:.1f}, {:.1f}]", t.ci_low_w, t.ci_high_w) : kDash),
           Text(std::isfinite(t.trained_up_to) ? fmt::format("{:.3f}", t.trained_up_to) : kDash),
           Text(flags.empty() ? kDash : flags)});
    }
    doc->Paragraph(
        Text(fmt::format("{}: how far to trust each component. full_use_w is its power at full use "
                         "at the default V-F "
                         "pair; trained_up_to the largest utilisation among the training rows "
                         "(above it, a prediction "
                         "extrapolates); flags: trained below half use, a 95% interval that holds "
                         "zero, full use above "
                         "the board limit.",
                         m.label)));
    doc->Table({"Component", "domain", "full_use_w", "full_use_w_ci95", "trained_up_to", "flags"},
               {false, false, true, true, true, false}, rows);
    const std::vector<std::string> warnings = ComponentTrustWarnings(trust);
    if (!warnings.empty()) {
      std::vector<Inline> items;
      for (const std::string& w : warnings) items.push_back(Text(w));
      doc->List(items);
    }
  }
}

// What each fit reported about itself (from the model files): one column per model under
// `header`.
void FitSummaryTable(Document* doc, const RunReport& r, const Linker& link,
                     const std::vector<std::string>& header, const std::vector<bool>& numeric) {
  std::vector<std::vector<Inline>> fit_rows;
  auto fit_row = [&](const std::string& field, auto value) {
    std::vector<Inline> row = {Text(field)};
    for (const ReportModel& m : r.models) row.push_back(value(m));
    fit_rows.push_back(std::move(row));
  };
  fit_row("file", [&](const ReportModel& m) { return Inline{link.File(m.path)}; });
  fit_row("method", [](const ReportModel& m) { return Text(FitMethodName(m.model.method)); });
  fit_row("solver", [](const ReportModel& m) {
    return Text(m.model.fit.solver ? ModelSolverName(*m.model.fit.solver) : kDash);
  });
  fit_row("loss, residual", [](const ReportModel& m) {
    return Text(m.model.fit.loss ? FitLossName(*m.model.fit.loss) + (", " + m.model.fit.residual)
                                 : kDash);
  });
  // A model that was not fitted (a truth model, a published one: no training rows, no
  // iterations) has no solver status or training statistics: a dash, never a stale "NO".
  auto fitted = [](const ReportModel& m) {
    return m.model.fit.solver && *m.model.fit.solver != ModelSolver::kTruth &&
           (m.model.fit.train_rows > 0 || m.model.fit.iterations > 0 || m.model.fit.converged);
  };
  // A ported or node-scaled model carries its base model's fit: its training figures are said
  // to be the base fit's, never shown as the derived model's own.
  auto base_fit = [](const std::string& value, const ReportModel& m) {
    return m.model.Derived() ? value + " (the base model's fit)" : value;
  };
  fit_row("converged", [&](const ReportModel& m) {
    return Text(!fitted(m) ? kDash : m.model.fit.converged ? "yes" : "NO");
  });
  fit_row("iterations", [&](const ReportModel& m) {
    return Text(!fitted(m) ? kDash : fmt::format("{}", m.model.fit.iterations));
  });
  fit_row("train_rows", [&](const ReportModel& m) {
    return Text(!fitted(m) ? kDash : base_fit(fmt::format("{}", m.model.fit.train_rows), m));
  });
  fit_row("train_mape_pct", [&](const ReportModel& m) {
    return Text(!fitted(m) ? kDash : base_fit(Fixed(m.model.fit.train_mape_pct, 2), m));
  });
  fit_row("train_rmse_w", [&](const ReportModel& m) {
    return Text(!fitted(m) ? kDash : base_fit(Fixed(m.model.fit.train_rmse_w, 2), m));
  });
  fit_row("train_r2", [&](const ReportModel& m) {
    return Text(!fitted(m) ? kDash : base_fit(Fixed(m.model.fit.train_r2, 4), m));
  });
  fit_row("trained_on",
          [&](const ReportModel& m) { return Inline{link.File(m.model.trained_on)}; });
  doc->Paragraph(Text("What each fit reported about itself (from the model files):"));
  doc->Table(header, numeric, fit_rows);
}

// The frequency domains and the components of all the models, in first-seen order.
void DomainsAndComponents(const RunReport& r, std::vector<std::string>* domains,
                          std::vector<std::string>* components) {
  for (const ReportModel& m : r.models) {
    for (const FrequencyDomain& d : m.model.layout.domains) {
      if (std::find(domains->begin(), domains->end(), d.name) == domains->end())
        domains->push_back(d.name);
    }
    for (const std::string& c : m.model.layout.ComponentNames()) {
      if (std::find(components->begin(), components->end(), c) == components->end())
        components->push_back(c);
    }
  }
}

// The coefficients by name (the JSON keys, units in the names), with their bootstrap intervals
// when a model has them: one column per model under `header`.
void CoefficientTable(Document* doc, const RunReport& r, const std::vector<std::string>& header,
                      const std::vector<bool>& numeric, const std::vector<std::string>& domains,
                      const std::vector<std::string>& components) {
  // "0.1234 [0.1100, 0.1400]" when the model has bootstrap intervals (--bootstrap N).
  bool any_ci = false;
  for (const ReportModel& m : r.models) any_ci = any_ci || m.model.coefficient_ci95.known();
  auto with_ci = [](const ReportModel& m, double value,
                    const std::vector<std::pair<double, double>>& ci, size_t k) {
    std::string s = Significant(value);
    if (m.model.coefficient_ci95.known() && k < ci.size()) {
      s += " [" + Significant(ci[k].first) + ", " + Significant(ci[k].second) + "]";
    }
    return s;
  };
  auto domain_value = [&](const ReportModel& m, const std::string& domain,
                          const std::vector<double>& values,
                          const std::vector<std::pair<double, double>>& ci) {
    for (size_t d = 0; d < m.model.layout.domains.size() && d < values.size(); ++d) {
      if (m.model.layout.domains[d].name == domain) return Text(with_ci(m, values[d], ci, d));
    }
    return Text(kDash);
  };
  std::vector<std::vector<Inline>> coefficient_rows;
  for (const std::string& d : domains) {
    std::vector<Inline> row = {Text("static_w[" + d + "]")};
    for (const ReportModel& m : r.models)
      row.push_back(domain_value(m, d, m.model.static_w, m.model.coefficient_ci95.static_w));
    coefficient_rows.push_back(std::move(row));
  }
  for (const std::string& d : domains) {
    std::vector<Inline> row = {Text("idle_dyn_w_per_mhz[" + d + "]")};
    for (const ReportModel& m : r.models)
      row.push_back(domain_value(m, d, m.model.idle_dyn_w_per_mhz,
                                 m.model.coefficient_ci95.idle_dyn_w_per_mhz));
    coefficient_rows.push_back(std::move(row));
  }
  for (const std::string& c : components) {
    std::vector<Inline> row = {Text("component_w_per_mhz[" + c + "]")};
    for (const ReportModel& m : r.models) {
      const std::vector<std::string> names = m.model.layout.ComponentNames();
      const auto it = std::find(names.begin(), names.end(), c);
      row.push_back(
          it == names.end() ||
                  static_cast<size_t>(it - names.begin()) >= m.model.component_w_per_mhz.size()
              ? Text(kDash)
              : Text(with_ci(m,
                             m.model.component_w_per_mhz[static_cast<size_t>(it - names.begin())],
                             m.model.coefficient_ci95.component_w_per_mhz,
                             static_cast<size_t>(it - names.begin()))));
    }
    coefficient_rows.push_back(std::move(row));
  }
  std::vector<std::string> coefficient_header = header;
  coefficient_header.front() = "Coefficient";
  doc->Paragraph(
      Text("Coefficients (TPDS'19 Eqs. 4-6: static power alpha0 per domain in W, "
           "component-independent dynamic power alpha1 and component weights gamma_i "
           "in W per MHz at the default voltage; a fixed-frequency model stores Eq. 9 "
           "in the same form)" +
           std::string(any_ci ? "; [lo, hi]: the bootstrap 95% confidence interval (2.5% and "
                                "97.5% percentiles of the coefficient refitted on resamples of "
                                "the training benchmarks, wattcal-calibrate --bootstrap N)"
                              : "") +
           ":"));
  doc->Table(coefficient_header, numeric, coefficient_rows);
}

// The estimated voltage of each domain (voltage_rel) per frequency level, one column per model
// with two levels or more there.
void VoltageTables(Document* doc, const RunReport& r, const std::vector<std::string>& domains) {
  for (const std::string& d : domains) {
    std::vector<const ReportModel*> with_levels;
    std::set<double> levels;
    for (const ReportModel& m : r.models) {
      for (size_t k = 0; k < m.model.layout.domains.size(); ++k) {
        if (m.model.layout.domains[k].name != d || m.model.freq_levels_mhz[k].size() < 2) continue;
        with_levels.push_back(&m);
        levels.insert(m.model.freq_levels_mhz[k].begin(), m.model.freq_levels_mhz[k].end());
      }
    }
    if (with_levels.empty()) continue;
    std::vector<std::string> vheader = {"f_" + d + "_mhz"};
    for (const ReportModel* m : with_levels) vheader.push_back(m->label);
    std::vector<std::vector<Inline>> vrows;
    for (double f : levels) {
      std::vector<Inline> row = {Text(fmt::format("{:g}", f))};
      for (const ReportModel* m : with_levels) {
        std::string cell = kDash;
        for (size_t k = 0; k < m->model.layout.domains.size(); ++k) {
          if (m->model.layout.domains[k].name != d) continue;
          const auto& fl = m->model.freq_levels_mhz[k];
          for (size_t i = 0; i < fl.size() && i < m->model.voltage_rel[k].size(); ++i) {
            if (fl[i] == f) cell = Fixed(m->model.voltage_rel[k][i], 4);
          }
        }
        row.push_back(Text(cell));
      }
      vrows.push_back(std::move(row));
    }
    doc->Paragraph(Text(fmt::format(
        "Estimated voltage of the {} domain, relative to its voltage at the default frequency "
        "(voltage_rel):",
        d)));
    doc->Table(vheader, std::vector<bool>(vheader.size(), true), vrows);
  }
}

void ModelSection(Document* doc, const RunReport& r, const ReportOptions& o, const Linker& link) {
  doc->Heading(2, "Models", "models");
  if (r.models.empty()) {
    doc->Paragraph(
        Text(r.accelwattch_models.empty()
                 ? "No wattcal power model in this run (cross-validation fits one per fold "
                   "and keeps none)."
                 : "No wattcal power model in this run; its AccelWattch model is shown below."));
    return;
  }
  std::vector<std::string> header = {"Field"};
  for (const ReportModel& m : r.models) header.push_back(m.label);
  std::vector<bool> numeric(header.size(), true);
  numeric.front() = false;
  FitSummaryTable(doc, r, link, header, numeric);
  std::vector<std::string> domains, components;
  DomainsAndComponents(r, &domains, &components);
  CoefficientTable(doc, r, header, numeric, domains, components);
  ComponentTrustTables(doc, r);
  VoltageTables(doc, r, domains);
  AddFigures(doc, r, o, "models");
}

void BreakdownSection(Document* doc, const RunReport& r, const ReportOptions& o,
                      const Linker& link) {
  if (!r.has_breakdown) return;
  doc->Heading(2, "Power breakdown", "breakdown");
  const ReportModel& m = r.models[static_cast<size_t>(r.breakdown_model)];
  doc->Paragraph({{"Predicted power at the default pair (" + r.breakdown.pair_label + ") of the " +
                       std::to_string(r.breakdown.bars.size()) + " benchmarks of ",
                   "", false},
                  link.File(r.breakdown_activity),
                  {", by term of the model ", "", false},
                  link.File(m.path),
                  {" (PowerModel::Predict with a PowerBreakdown): which components the power goes "
                   "to, as opposed to how busy they are (TPDS'19 §4.5).",
                   "", false}});
  const std::vector<double> average = AverageBreakdown(r.breakdown);
  double total = 0.0;
  for (double w : average) total += w;
  std::vector<std::vector<Inline>> rows;
  for (size_t t = 0; t < r.breakdown.terms.size(); ++t) {
    rows.push_back({Text(r.breakdown.terms[t]), Text(Fixed(average[t], 2)),
                    Text(total > 0.0 ? Fixed(100.0 * average[t] / total, 1) : kDash)});
  }
  rows.push_back(
      {Text("total predicted"), Text(Fixed(total, 2)), Text(total > 0.0 ? "100.0" : kDash)});
  double measured = 0.0;
  bool all_measured = true;
  for (const BreakdownBar& bar : r.breakdown.bars) {
    all_measured = all_measured && std::isfinite(bar.measured_w);
    if (std::isfinite(bar.measured_w)) measured += bar.measured_w;
  }
  if (all_measured) {
    rows.push_back({Text("measured"),
                    Text(Fixed(measured / static_cast<double>(r.breakdown.bars.size()), 2)),
                    Text(kDash)});
  }
  doc->Table({"Term (average over the benchmarks)", "power_w", "share_pct"}, {false, true, true},
             rows);
  AddFigures(doc, r, o, "breakdown");
}

void CollinearitySection(Document* doc, const RunReport& r, const ReportOptions& o,
                         const Linker& link) {
  if (r.corpora.empty()) return;
  doc->Heading(2, "Training utilisations and multicollinearity", "collinearity");
  doc->Paragraph(Text(fmt::format(
      "The model is a regression on the components' utilisations. When two components' "
      "utilisations move together across the training benchmarks, the fit cannot tell their "
      "coefficients apart and shares the power between them arbitrarily; TPDS'19 §5.1 found LDST "
      "and shared memory at r ~ 0.99 and dropped LDST and texture for that reason. Flagged here: "
      "pairs with |r| >= {:g}, and a condition number of the standardised utilisation matrix "
      "(one row per benchmark, columns centred and scaled) above {:g} (Belsley, Kuh & Welsch), "
      "which also catches dependencies among more than two components.",
      o.collinearity.pair_threshold_abs_r, o.collinearity.condition_number_threshold)));
  for (const ReportCorpus& c : r.corpora) {
    const CollinearityReport& k = c.collinearity;
    doc->Heading(3, fs::path(c.path).filename().string());
    doc->Paragraph({{"Corpus ", "", false}, link.File(c.path), {".", "", false}});
    if (!c.measurement_note.empty()) doc->Paragraph(Text(c.measurement_note));
    const size_t varying = k.components.size() - k.constant_components.size();
    doc->Table(
        {"Benchmarks", "Components (varying)", "Condition number", "Median |r| between benchmarks",
         fmt::format("Pairs with |r| >= {:g}", o.collinearity.pair_threshold_abs_r)},
        {true, true, true, true, true},
        {{Text(std::to_string(k.benchmarks.size())),
          Text(fmt::format("{} ({})", k.components.size(), varying)),
          Text(std::isinf(k.condition_number) ? "infinite" : Fixed(k.condition_number, 1)),
          Text(Fixed(k.median_abs_benchmark_r, 2)), Text(std::to_string(k.pairs.size()))}});
    if (k.warnings.empty()) {
      doc->Paragraph(Text("No multicollinearity warning for this corpus."));
    } else {
      std::vector<Inline> items;
      for (const std::string& w : k.warnings) items.push_back(Text("Warning: " + Sentence(w)));
      doc->List(items);
    }
    if (!k.pairs.empty()) {
      std::vector<std::vector<Inline>> rows;
      for (const CorrelatedPair& p : k.pairs) {
        rows.push_back({Text(p.first), Text(p.second), Text(Fixed(p.r, 3))});
      }
      doc->Table({"Component", "Component", "Pearson r"}, {false, false, true}, rows);
    }
    if (o.figures) {
      for (const ReportFigure& f : r.figures) {
        if (f.section == "collinearity" && f.index >= 0 &&
            r.corpora[static_cast<size_t>(f.index)].path == c.path) {
          doc->Figure("figures/" + f.stem + ".png", "figures/" + f.stem + ".svg", f.title,
                      Text(f.caption));
        }
      }
    }
  }
}

void ConstantSection(Document* doc, const RunReport& r, const ReportOptions& o,
                     const Linker& link) {
  if (!r.has_constant) return;
  doc->Heading(2, "Constant power", "constant");
  const ConstantFitChart& c = r.constant;
  doc->Paragraph(
      {{"From ", "", false},
       link.File(r.constant_path),
       {fmt::format(": P_const = {} W, {:g}% interval {}–{} W, over {} curves.",
                    Fixed(c.p_const_w, 2), 100.0 * c.confidence_level, Fixed(c.p_const_ci_low_w, 2),
                    Fixed(c.p_const_ci_high_w, 2), c.curves.size()),
        "", false}});
  AddFigures(doc, r, o, "constant");
}

void CompareSection(Document* doc, const RunReport& r, const ReportOptions& o, const Linker& link) {
  if (r.comparisons.empty()) return;
  doc->Heading(2, "Relative architectures", "compare");
  doc->Paragraph(
      Text("AccelWattch (§7.1) judges a model across architectures by how well its "
           "average relative power tracks the measured average, and by how often each "
           "workload's estimate points the same way as the measurement."));
  for (size_t i = 0; i < r.comparisons.size(); ++i) {
    const RelativePowerChart& c = r.comparisons[i];
    doc->Heading(3, c.gpu_b + " relative to " + c.gpu_a);
    // Every number here is computed from the comparison and the models given with their GPU's name.
    auto model_of = [&](const std::string& gpu) -> const PowerModel* {
      for (const ReportModel& m : r.models) {
        if (m.label == gpu) return &m.model;
      }
      return nullptr;
    };
    for (const std::string& finding : ComparisonFindings(c, model_of(c.gpu_a), model_of(c.gpu_b))) {
      doc->Paragraph(Text(finding));
    }
    double estimated = 0.0, measured = 0.0;
    std::vector<std::vector<Inline>> rows;
    for (const RelativePowerBar& b : c.bars) {
      estimated += b.estimated_pct;
      measured += b.measured_pct;
      rows.push_back({Text(b.workload), Text(Fixed(b.estimated_pct, 1)),
                      Text(Fixed(b.measured_pct, 1)),
                      Text(Fixed(b.estimated_pct - b.measured_pct, 1))});
    }
    const double n = static_cast<double>(c.bars.size());
    rows.push_back({Text("average"), Text(Fixed(estimated / n, 1)), Text(Fixed(measured / n, 1)),
                    Text(Fixed((estimated - measured) / n, 1))});
    Inline from{{"(P_B - P_A) / P_A per workload, from ", "", false},
                link.File(r.compare_paths[i])};
    if (!c.estimated_a_source.empty()) {
      from.push_back({"; the estimates are " + c.gpu_a + "'s from ", "", false});
      from.push_back(link.File(c.estimated_a_source));
      from.push_back({" and " + c.gpu_b + "'s from ", "", false});
      from.push_back(link.File(c.estimated_b_source));
    }
    from.push_back({":", "", false});
    doc->Paragraph(from);
    doc->Table({"Workload", "estimated_rel_pct", "measured_rel_pct", "difference_pp"},
               {false, true, true, true}, rows);
    if (o.figures) {
      for (const ReportFigure& f : r.figures) {
        if (f.kind == FigureKind::kRelative && f.index == static_cast<int>(i)) {
          doc->Figure("figures/" + f.stem + ".png", "figures/" + f.stem + ".svg", f.title,
                      Text(f.caption));
        }
      }
    }
  }
}

void ProvenanceSection(Document* doc, const RunReport& r, const Linker& link) {
  doc->Heading(2, "Provenance", "provenance");
  doc->Paragraph(
      Text(fmt::format("Written by wattcal-report {} (source {}). Each stage run that made a file "
                       "of a run folder left one "
                       "record in that folder's provenance/: its command line, source revision, "
                       "options, and every input and "
                       "output with its SHA-256 (wattcal-check verifies them); this report found "
                       "the run's files through "
                       "those records. The inputs' own records, linked below, say which data and "
                       "settings produced them.",
                       WattcalVersion(), SourceRevision())));
  std::vector<std::vector<Inline>> rows;
  for (const std::string& input : r.inputs) {
    std::error_code ec;
    const auto bytes = fs::file_size(input, ec);
    const std::string provenance = FindProvenanceOf(input);
    rows.push_back({Inline{link.File(input)}, Text(ec ? kDash : std::to_string(bytes)),
                    Inline{{Sha256OfFile(input), "", true}},
                    Inline{provenance.empty() || link.Href(provenance).empty()
                               ? Span{kDash, "", false}
                               : link.Link("provenance", provenance)}});
  }
  doc->Table({"Input", "Bytes", "SHA-256", "Made by"}, {false, true, false, false}, rows);
  doc->Paragraph(Text("Options:"));
  doc->Code(r.options.dump(2));
}

Document BuildDocument(const RunReport& r, const ReportOptions& o) {
  const Linker link(o.EffectiveOutDir());
  Document doc;
  doc.Heading(1, r.title);
  Inline intro = Text(fmt::format("Report of wattcal-report {} ", WattcalVersion()));
  if (!o.run_dir.empty()) {
    intro.push_back({"on the run folder ", "", false});
    intro.push_back({o.run_dir, "", true});
  }
  intro.push_back(
      {fmt::format(": {} model(s), {}{} validation(s), {} training corpus(es), {} "
                   "figure(s).",
                   r.models.size(),
                   r.accelwattch_models.empty()
                       ? ""
                       : fmt::format("{} AccelWattch model(s), ", r.accelwattch_models.size()),
                   r.validations.size(), r.corpora.size(), o.figures ? r.figures.size() : 0),
       "", false});
  doc.Paragraph(intro);
  for (const std::string& note : o.notes) doc.Paragraph(Text(note));
  bool warned = false;
  for (const ReportCorpus& c : r.corpora) warned = warned || c.collinearity.flagged();
  if (warned) {
    doc.Paragraph(
        Text("Warning: the training utilisations do not separate every component "
             "(collinear or constant utilisations; see \"Training utilisations and "
             "multicollinearity\")."));
  }
  // The answer first: with applications, a summary and their table come before the
  // cross-validation.
  SummarySection(&doc, r);
  AppsSection(&doc, r, o, link);
  ValidationSection(&doc, r, o, link);
  BenchmarkSection(&doc, r, o);
  ModelSection(&doc, r, o, link);
  BreakdownSection(&doc, r, o, link);
  AccelWattchModelSection(&doc, r, link);
  AccelWattchBreakdownSection(&doc, r, o, link);
  CollinearitySection(&doc, r, o, link);
  ConstantSection(&doc, r, o, link);
  CompareSection(&doc, r, o, link);
  std::vector<std::string> notes = r.notes;
  if (!o.figures) notes.push_back("figures were not drawn (--no-figures)");
  if (!notes.empty()) {
    doc.Heading(2, "Notes", "notes");
    std::vector<Inline> items;
    for (const std::string& n : notes) items.push_back(Text(Sentence(n)));
    doc.List(items);
  }
  ProvenanceSection(&doc, r, link);
  return doc;
}

}  // namespace

std::string RunReportHtml(const RunReport& report, const ReportOptions& options) {
  return RenderHtml(BuildDocument(report, options), report.title);
}

std::string RunReportMarkdown(const RunReport& report, const ReportOptions& options) {
  return RenderMarkdown(BuildDocument(report, options));
}

}  // namespace wattcal