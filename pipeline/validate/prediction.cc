#include "validate/prediction.h"

#include <fmt/format.h>

#include <map>

#include "util/errors.h"

namespace wattcal {

const char* PredictModeName(PredictMode mode) {
  switch (mode) {
    case PredictMode::kDvfs: return "dvfs";
    case PredictMode::kFixed: return "fixed";
    case PredictMode::kScaling: return "scaling";
  }
  return "?";
}

bool ParsePredictMode(const std::string& text, PredictMode* mode) {
  if (text == "dvfs") {
    *mode = PredictMode::kDvfs;
  } else if (text == "fixed") {
    *mode = PredictMode::kFixed;
  } else if (text == "scaling") {
    *mode = PredictMode::kScaling;
  } else {
    return false;
  }
  return true;
}

namespace {

bool AtPair(const Corpus& c, int r, const std::vector<double>& pair) {
  for (int d = 0; d < c.layout.num_domains(); ++d) {
    if (c.freq_mhz(r, d) != pair[d]) return false;
  }
  return true;
}

}  // namespace

std::vector<PredictionRow> PredictHeldout(const PowerModel& model, const Corpus& heldout,
                                          PredictMode mode) {
  const std::string mismatch = model.layout.Mismatch(heldout.layout);
  if (!mismatch.empty()) {
    throw InputError(heldout.path, heldout.components_line, "component names",
                     model.LayoutMismatchMessage(mismatch));
  }
  if (!heldout.has_power()) {
    throw InputError(heldout.path, 0, "power_w", "held-out file has no measured power");
  }
  if (!heldout.has_freq()) {
    throw InputError(heldout.path, 0, "f_core_mhz", "held-out file has no frequencies");
  }
  const int nd = model.layout.num_domains();
  const std::vector<double> defaults = model.DefaultFrequencies();
  // The fixed model predicts at the pair it was calibrated at (its single level).
  std::vector<double> fixed_pair = defaults;
  if (model.method == "fixed") {
    for (int d = 0; d < nd; ++d) fixed_pair[d] = model.freq_levels_mhz[d].front();
  }

  // Scaling (TPDS Eq. 10) needs each benchmark's measured power at the default pair.
  std::map<std::string, int> anchor_row;
  if (mode == PredictMode::kScaling) {
    for (int r = 0; r < heldout.rows(); ++r) {
      if (AtPair(heldout, r, defaults)) anchor_row.emplace(heldout.benchmark[r], r);
    }
  }

  std::vector<PredictionRow> out;
  for (int r = 0; r < heldout.rows(); ++r) {
    if (mode == PredictMode::kFixed && !AtPair(heldout, r, fixed_pair)) continue;
    const Eigen::VectorXd u = heldout.util_frac.row(r).transpose();
    const Eigen::VectorXd f = heldout.freq_mhz.row(r).transpose();
    if (mode != PredictMode::kFixed) {
      for (int d = 0; d < nd; ++d) {
        if (!model.Covers(d, f(d))) {
          throw InputError(
              heldout.path, heldout.line[r], fmt::format("f_{}_mhz", model.layout.domains[d].name),
              fmt::format("{} MHz lies outside the model's estimated {} levels ({} to {} MHz)",
                          f(d), model.layout.domains[d].name, model.freq_levels_mhz[d].front(),
                          model.freq_levels_mhz[d].back()));
        }
      }
    }
    PredictionRow row;
    row.benchmark = heldout.benchmark[r];
    row.f_core_mhz = f(0);
    row.f_mem_mhz = nd > 1 ? f(1) : 0.0;
    row.measured_w = heldout.power_w(r);
    row.line = heldout.line[r];
    switch (mode) {
      case PredictMode::kFixed:
        row.predicted_w = model.Predict(u.data(), fixed_pair.data());
        break;
      case PredictMode::kDvfs:
        row.predicted_w = model.Predict(u.data(), f.data());
        break;
      case PredictMode::kScaling: {
        const auto it = anchor_row.find(row.benchmark);
        if (it == anchor_row.end()) {
          std::string pair;
          for (double v : defaults) pair += (pair.empty() ? "" : "/") + fmt::format("{}", v);
          throw InputError(heldout.path, heldout.line[r], "benchmark",
                           fmt::format("scaling mode needs '{}' measured at the default pair {} "
                                       "MHz, and the file has no such row",
                                       row.benchmark, pair));
        }
        const int a = it->second;
        const Eigen::VectorXd ua = heldout.util_frac.row(a).transpose();
        // TPDS Eq. 10: P(f2) = P_model(f2) / P_model(f1) * P_meas(f1).
        row.predicted_w = model.Predict(u.data(), f.data()) / model.PredictAtDefault(ua.data()) *
                          heldout.power_w(a);
        break;
      }
    }
    out.push_back(row);
  }
  if (out.empty()) {
    throw InputError(heldout.path, 0, "f_core_mhz",
                     fmt::format("no held-out rows to predict in {} mode", PredictModeName(mode)));
  }
  return out;
}

}  // namespace wattcal
