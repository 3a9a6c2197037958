#include "fleet/fleet_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "fleet/fleet_figures.h"
#include "fleet/fleet_table.h"
#include "fleet/fleet_terms.h"
#include "report/document.h"
#include "report/gnuplot_figure.h"
#include "util/stats.h"

namespace wattcal {

namespace {

std::string W(double v) { return std::isfinite(v) ? fmt::format("{:.2f}", v) : std::string("–"); }

std::string WithInterval(const TermEstimate& e) {
  if (!std::isfinite(e.w)) return "–";
  if (!std::isfinite(e.lo_w)) return W(e.w);
  return fmt::format("{:.2f} [{:.2f}, {:.2f}]", e.w, e.lo_w, e.hi_w);
}

std::string Short(const std::string& uuid) {
  return uuid.size() > 12 ? uuid.substr(0, 12) + "…" : uuid;
}

// The figures of one model, staged; each added to `doc` with its caption.
struct FigureSink {
  std::string out_dir;
  OutputSet* outputs;
  std::vector<std::string>* written;
  template <typename Draw>
  void Add(Document* doc, const std::string& stem, const std::string& caption, Draw draw) {
    const std::string png = out_dir + "/figures/" + stem + ".png";
    const std::string svg = out_dir + "/figures/" + stem + ".svg";
    draw(outputs->Stage(png), outputs->Stage(svg));
    written->push_back(png);
    written->push_back(svg);
    doc->Figure("figures/" + stem + ".png", "figures/" + stem + ".svg", caption, Text(caption));
  }
};

void GpuTable(const FleetResult& fleet, const FleetModel& m, Document* doc) {
  std::vector<std::vector<Inline>> rows;
  for (int i : m.gpus) {
    const FleetGpu& g = fleet.gpus[i];
    rows.push_back(
        {Text(FleetMemberName(g.member)), Text(fmt::format("{}", g.member.captures.size())),
         Text(g.fit.counters_from == FleetMemberName(g.member) ? "own"
                                                               : Short(g.fit.counters_from)),
         Text(fmt::format("{}", g.member.windows)), Text(W(g.fit.idle_w)),
         Text(WithInterval(g.fit.static_w)), Text(W(g.fit.cv_mape_pct)),
         Text(W(g.pooled_mape_pct))});
  }
  doc->Table({"uuid", "captures", "counters", "windows", "idle_w", "static_w [95% CI]",
              "cv_mape_pct", "pooled_mape_pct"},
             {false, true, false, true, true, true, true, true}, rows);
}

void TermsTable(const std::vector<FleetTerm>& terms, const FleetResult& fleet, const FleetModel& m,
                Document* doc) {
  const bool each = m.gpus.size() <= 4;
  std::vector<std::string> header = {"term",    "median (W)", "min (W)",
                                     "max (W)", "spread (W)", "outliers"};
  if (each)
    for (int i : m.gpus)
      header.push_back(Short(FleetMemberName(fleet.gpus[i].member)) + " (W [95% CI])");
  if (m.gpus.size() == 2) header.push_back("second − first (W)");
  std::vector<std::vector<Inline>> rows;
  for (const FleetTerm& t : terms) {
    std::vector<Inline> row = {
        Text(t.name),
        Text(W(t.median_w)),
        Text(W(t.min_w)),
        Text(W(t.max_w)),
        Text(W(t.spread_w())),
        Text(fmt::format("{}", std::count(t.outlier.begin(), t.outlier.end(), true)))};
    if (each)
      for (const TermEstimate& e : t.values) row.push_back(Text(WithInterval(e)));
    if (m.gpus.size() == 2) row.push_back(Text(W(t.values[1].w - t.values[0].w)));
    rows.push_back(row);
  }
  doc->Table(header, std::vector<bool>(header.size(), true), rows);
}

void OutlierList(const std::vector<FleetTerm>& terms, const FleetResult& fleet, const FleetModel& m,
                 Document* doc) {
  std::vector<Inline> items;
  for (const FleetTerm& t : terms) {
    for (size_t k = 0; k < t.values.size(); ++k) {
      if (!t.outlier[k]) continue;
      items.push_back(Text(fmt::format("{}: {} {} W against the fleet median {:.2f} W",
                                       FleetMemberName(fleet.gpus[m.gpus[k]].member), t.name,
                                       WithInterval(t.values[k]), t.median_w)));
    }
  }
  if (items.empty()) {
    doc->Paragraph(
        Text("No outliers: no GPU's interval excludes a term's fleet median with a "
             "robust z-score above 3.5."));
  } else {
    doc->List(items);
  }
}

void CrossSection(const FleetResult& fleet, const FleetModel& m, const std::string& model,
                  FigureSink* figures, Document* doc) {
  const CrossPrediction& x = m.cross;
  doc->Heading(3, "Cross-prediction", model + "-cross");
  doc->Paragraph(Text(
      "Row: the GPU whose model predicts; column: the GPU whose unflagged windows of the "
      "benchmarks both ran it predicts (MAPE %, TPDS Eq. 9 at the reference clocks). The "
      "diagonal is each GPU's own 5-fold CV MAPE." +
      (x.gpus.size() < m.gpus.size()
           ? fmt::format(" {} of the {} GPUs, evenly spaced in UUID order (--max-matrix-gpus).",
                         x.gpus.size(), m.gpus.size())
           : std::string())));
  if (x.gpus.size() <= kFleetTableGpus) {
    std::vector<std::string> header = {"model of \\ predicts"};
    for (int a : x.gpus) header.push_back(Short(FleetMemberName(fleet.gpus[m.gpus[a]].member)));
    std::vector<std::vector<Inline>> rows;
    for (size_t a = 0; a < x.gpus.size(); ++a) {
      std::vector<Inline> row = {
          Text(Short(FleetMemberName(fleet.gpus[m.gpus[x.gpus[a]]].member)))};
      for (size_t b = 0; b < x.gpus.size(); ++b)
        row.push_back(Text(
            fmt::format("{} ({} benchmarks)", W(x.mape_pct(a, b)), x.common_benchmarks(a, b))));
      rows.push_back(row);
    }
    doc->Table(header, std::vector<bool>(header.size(), true), rows);
  }
  if (x.gpus.size() >= 2 && figures != nullptr) {
    figures->Add(doc, model + "_cross", model + ": each GPU's model predicting each GPU (MAPE %)",
                 [&](const std::string& png, const std::string& svg) {
                   WriteCrossPredictionFigure(x.mape_pct, model + ": cross-prediction MAPE (%)",
                                              png, svg);
                 });
  }
}

void PooledSection(const FleetResult& fleet, const FleetModel& m, const std::string& model,
                   FigureSink* figures, Document* doc) {
  doc->Heading(3, "One model per GPU model against one per GPU", model + "-pooled");
  if (!m.pooled_error.empty()) {
    doc->Paragraph(Text("The pooled fit failed: " + m.pooled_error));
    return;
  }
  std::vector<double> own, pooled;
  for (int i : m.gpus) {
    own.push_back(fleet.gpus[i].fit.cv_mape_pct);
    pooled.push_back(fleet.gpus[i].pooled_mape_pct);
  }
  doc->Paragraph(Text(fmt::format(
      "The pooled model (TPDS Eq. 9 fitted to the windows of all {} GPUs together, 5-fold CV by "
      "benchmark across the fleet) scores {:.2f}% MAPE overall; per GPU its median is {:.2f}% "
      "against a median of {:.2f}% for each GPU's own model (5-fold CV). The difference is the "
      "cost of one model per SKU.{}",
      m.gpus.size(), m.pooled.overall_mape_pct, Median(pooled), Median(own),
      m.pooled.note.empty() ? std::string() : " " + m.pooled.note + ".")));
  if (figures != nullptr) {
    figures->Add(doc, model + "_pooled", model + ": pooled model against each GPU's own",
                 [&](const std::string& png, const std::string& svg) {
                   WritePooledFigure(own, pooled, model + ": pooled against own model", png, svg);
                 });
  }
}

void ModelSection(const FleetResult& fleet, const FleetModel& m, FigureSink* figures,
                  Document* doc) {
  const FleetDescription& d = fleet.descriptions[m.model];
  const std::string model = FleetModelName(d);
  doc->Heading(2, fmt::format("{} ({} GPUs)", model, m.gpus.size()), model);
  if (!m.counters_uuid.empty()) {
    doc->Paragraph(Text(fmt::format(
        "Counters: the GPUs without counters of their own use those of {} (matched by benchmark "
        "name; the suite's kernels do the same work on every GPU of a model).",
        m.counters_uuid)));
  }
  if (m.gpus.size() <= kFleetTableGpus) GpuTable(fleet, m, doc);
  const std::vector<FleetTerm> terms = ModelTerms(fleet, m);
  doc->Heading(3, "Terms across GPUs", model + "-terms");
  doc->Paragraph(Text(
      "Idle: the measured mean power of the idle windows; static: b0 of TPDS Eq. 9; each "
      "component: its W at full use (omega_i = gamma_i f). Intervals: bootstrap 95%. Outlier: the "
      "interval excludes the fleet median and the robust z-score exceeds 3.5 (docs/fleet.md)."));
  TermsTable(terms, fleet, m, doc);
  if (figures != nullptr) {
    figures->Add(doc, model + "_terms", model + ": each term across the GPUs",
                 [&](const std::string& png, const std::string& svg) {
                   WriteTermSpreadFigure(terms, model + ": each term across the GPUs, sorted", png,
                                         svg);
                 });
  }
  OutlierList(terms, fleet, m, doc);
  CrossSection(fleet, m, model, figures, doc);
  PooledSection(fleet, m, model, figures, doc);
}

void NotReduced(const FleetResult& fleet, Document* doc) {
  doc->Heading(2, "Captures not reduced", "not-reduced");
  std::vector<std::vector<Inline>> rows;
  for (const FleetGpu& g : fleet.gpus) {
    if (g.member.status == FleetStatus::kOk) continue;
    rows.push_back({Text(FleetStatusName(g.member.status)), Text(FleetMemberName(g.member)),
                    Text(g.member.message)});
  }
  if (rows.empty()) {
    doc->Paragraph(Text("None: every capture given was reduced."));
  } else {
    doc->Table({"status", "GPU or capture", "message"}, {false, false, false}, rows);
  }
}

}  // namespace

std::vector<std::string> StageFleetReport(const FleetResult& fleet, const std::string& out_dir,
                                          const std::string& settings, OutputSet* outputs) {
  std::vector<std::string> written;
  Document doc;
  int reduced = 0;
  for (const FleetGpu& g : fleet.gpus) reduced += g.member.status == FleetStatus::kOk ? 1 : 0;
  doc.Paragraph(
      Text(fmt::format("{} GPUs reduced, {} not ({}). {}", reduced, fleet.failed(),
                       fleet.failed() ? "listed under Captures not reduced" : "none", settings)));
  const bool draw = GnuplotAvailable();
  if (!draw) doc.Paragraph(Text("No figures: gnuplot is not available to this build."));
  FigureSink sink{out_dir, outputs, &written};
  for (const FleetModel& m : fleet.models) ModelSection(fleet, m, draw ? &sink : nullptr, &doc);
  NotReduced(fleet, &doc);
  outputs->StageText(out_dir + "/index.html", RenderHtml(doc, "Fleet report"));
  outputs->StageText(out_dir + "/index.md", RenderMarkdown(doc));
  written.push_back(out_dir + "/index.html");
  written.push_back(out_dir + "/index.md");
  return written;
}

}  // namespace wattcal
