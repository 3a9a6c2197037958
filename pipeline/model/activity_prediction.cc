#include "model/activity_prediction.h"

#include <fmt/format.h>

#include <cmath>

#include "model/component_trust.h"
#include "model/model_summary.h"
#include "model/prediction_interval.h"
#include "model/power_limit.h"
#include "util/csv_field.h"
#include "util/errors.h"

namespace wattcal {

std::vector<ActivityPrediction> PredictActivity(const PowerModel& model, const Corpus& activity,
                                                bool fixed, std::optional<double> power_limit_w) {
  const std::string mismatch = model.layout.Mismatch(activity.layout);
  // Activity files without frequencies do not know the default pair: compare the rest.
  if (!mismatch.empty()) {
    Layout relaxed = activity.layout;
    for (int d = 0; d < relaxed.num_domains() && d < model.layout.num_domains(); ++d) {
      if (relaxed.domains[d].default_freq_mhz == 0.0) {
        relaxed.domains[d].default_freq_mhz = model.layout.domains[d].default_freq_mhz;
      }
    }
    const std::string still = model.layout.Mismatch(relaxed);
    if (!still.empty()) {
      throw InputError(activity.path, activity.components_line, "component names",
                       model.LayoutMismatchMessage(still));
    }
  }
  const int nd = model.layout.num_domains();
  std::vector<double> reference = model.DefaultFrequencies();
  if (model.method == FitMethod::kFixed) {
    for (int d = 0; d < nd; ++d) reference[d] = model.freq_levels_mhz[d].front();
  }
  // The V-F pairs to predict at when the activity carries no frequencies.
  std::vector<std::vector<double>> all_pairs;
  if (!fixed && !activity.has_freq()) {
    if (nd == 1) {
      for (auto f = model.freq_levels_mhz[0].rbegin(); f != model.freq_levels_mhz[0].rend(); ++f) {
        all_pairs.push_back({*f});
      }
    } else {
      for (auto fm = model.freq_levels_mhz[1].rbegin(); fm != model.freq_levels_mhz[1].rend();
           ++fm) {
        for (auto fc = model.freq_levels_mhz[0].rbegin(); fc != model.freq_levels_mhz[0].rend();
             ++fc) {
          all_pairs.push_back({*fc, *fm});
        }
      }
    }
  }
  const std::vector<ComponentTrust> trust = ComponentTrustTable(model);
  std::vector<ActivityPrediction> out;
  for (int r = 0; r < activity.rows(); ++r) {
    const Eigen::VectorXd u = activity.util_frac.row(r).transpose();
    std::vector<std::vector<double>> pairs;
    if (fixed) {
      pairs = {reference};
    } else if (activity.has_freq()) {
      std::vector<double> f(nd);
      for (int d = 0; d < nd; ++d) {
        f[d] = activity.freq_mhz(r, d);
        if (!model.Covers(d, f[d])) {
          throw InputError(
              activity.path, activity.line[r],
              fmt::format("f_{}_mhz", model.layout.domains[d].name),
              fmt::format("{} MHz lies outside the model's estimated {} levels ({} to {} MHz)",
                          f[d], model.layout.domains[d].name, model.freq_levels_mhz[d].front(),
                          model.freq_levels_mhz[d].back()));
        }
      }
      pairs = {f};
    } else {
      pairs = all_pairs;
    }
    // At the reference pair, a row whose own clock the model's levels do not cover is flagged.
    std::vector<std::string> clock_flags;
    for (int d = 0; fixed && activity.has_freq() && d < nd; ++d) {
      if (!model.Covers(d, activity.freq_mhz(r, d))) {
        clock_flags.push_back(std::string(kPredictionFlagClockBeyondModel) + ":" +
                              model.layout.domains[d].name);
      }
    }
    for (const std::vector<double>& f : pairs) {
      ActivityPrediction p;
      p.benchmark = activity.benchmark[r];
      p.freq_mhz = f;
      p.uncapped_w = model.Predict(u.data(), f.data(), &p.breakdown);
      // The board's limit: P = min(P_model, P_limit) (model/power_limit.h).
      const CappedPower capped = ApplyPowerLimit(model, u.data(), f.data(), power_limit_w);
      p.predicted_w = capped.predicted_w;
      p.capped = capped.capped;
      p.capped_f_core_mhz = capped.f_core_mhz;
      // The interval holds at the pair the replicates were fitted at (a fixed model's one).
      if (f == reference) {
        const PowerInterval interval =
            PredictionInterval95(model, u.data(), f.data(), power_limit_w, p.predicted_w);
        p.predicted_w_lo = interval.lo_w;
        p.predicted_w_hi = interval.hi_w;
      }
      std::vector<std::string> flags = ExtrapolationFlags(model, u.data(), p.uncapped_w);
      const std::vector<std::string> extrapolates =
          ExtrapolatesFlags(trust, u.data(), p.breakdown.component_w, p.uncapped_w);
      flags.insert(flags.end(), extrapolates.begin(), extrapolates.end());
      flags.insert(flags.begin(), clock_flags.begin(), clock_flags.end());
      if (p.capped && model.vf_curve.known() && p.capped_f_core_mhz < model.vf_curve.lowest_mhz()) {
        flags.insert(flags.begin(), fmt::format("{}:{:.0f}MHz", kPredictionFlagBelowCurve,
                                                model.vf_curve.lowest_mhz()));
      }
      if (p.capped) flags.insert(flags.begin(), kPredictionFlagCapped);
      p.flags = JoinFlags(flags);
      p.extrapolation_note = ExtrapolationMessage(model, p.benchmark, u.data(), p.uncapped_w);
      out.push_back(std::move(p));
    }
  }
  return out;
}

std::string ActivityPredictionsToCsv(const PowerModel& model,
                                     const std::vector<ActivityPrediction>& rows, bool breakdown) {
  const int nd = model.layout.num_domains();
  // The capping columns always: without a limit nothing was capped (capped = 0), and
  // a reader finds the same columns either way.
  bool with_flags = false, with_interval = false;
  for (const ActivityPrediction& p : rows) {
    with_flags = with_flags || !p.flags.empty();
    with_interval = with_interval || std::isfinite(p.predicted_w_lo);
  }
  std::string s = "benchmark,f_core_mhz";
  if (nd > 1) s += ",f_mem_mhz";
  s += ",predicted_w";
  if (with_interval) s += ",predicted_w_lo,predicted_w_hi";
  s += ",uncapped_w,capped,capped_f_core_mhz";
  if (with_flags) s += ",flags";
  if (breakdown) {
    for (const FrequencyDomain& d : model.layout.domains) s += ",static_" + d.name + "_w";
    for (const FrequencyDomain& d : model.layout.domains) s += ",idle_dyn_" + d.name + "_w";
    for (const std::string& c : model.layout.ComponentNames()) s += "," + ColumnSafeName(c) + "_w";
  }
  s += "\n";
  for (const ActivityPrediction& p : rows) {
    s += CsvField(p.benchmark);
    for (int d = 0; d < nd; ++d) s += fmt::format(",{}", p.freq_mhz[d]);
    s += fmt::format(",{:.6f}", p.predicted_w);
    if (with_interval)
      s += "," + CsvFixed(p.predicted_w_lo, 6) + "," + CsvFixed(p.predicted_w_hi, 6);
    s += fmt::format(",{:.6f},{},", p.uncapped_w, p.capped ? 1 : 0);
    if (std::isfinite(p.capped_f_core_mhz)) s += fmt::format("{:.6g}", p.capped_f_core_mhz);
    if (with_flags) s += "," + CsvField(p.flags);
    if (breakdown) {
      for (double v : p.breakdown.static_w) s += fmt::format(",{:.6f}", v);
      for (double v : p.breakdown.idle_dyn_w) s += fmt::format(",{:.6f}", v);
      for (double v : p.breakdown.component_w) s += fmt::format(",{:.6f}", v);
    }
    s += "\n";
  }
  return s;
}

std::string ActivityExtrapolationWarning(const std::vector<ActivityPrediction>& rows) {
  std::vector<std::string> notes;
  for (const ActivityPrediction& p : rows) notes.push_back(p.extrapolation_note);
  return ExtrapolationWarningFromNotes(notes);
}

}  // namespace wattcal
