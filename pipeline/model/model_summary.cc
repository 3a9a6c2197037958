#include "model/model_summary.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <sstream>

#include "model/component_trust.h"

namespace wattcal {

std::string ColumnSafeName(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
}

std::string FormatModelSummary(const PowerModel& m) {
  const FitReport& f = m.fit;
  std::string s = fmt::format(
      "model: method {}, solver {}, residual {}, loss {}{}\n"
      "  solver: {} after {} iterations ({:.3f} s): {}\n"
      "  training fit: {} rows, {} benchmarks, MAPE {:.3f}%, max {:.2f}%, RMSE {:.3f} W, R^2 "
      "{:.5f}\n",
      FitMethodName(m.method), f.solver ? ModelSolverName(*f.solver) : "", f.residual,
      f.loss ? FitLossName(*f.loss) : "",
      f.loss_scale > 0.0 ? fmt::format(" (scale {})", f.loss_scale) : std::string(),
      f.converged ? "converged" : "NOT converged", f.iterations, f.time_s, f.termination,
      f.train_rows, f.train_benchmarks, f.train_mape_pct, f.train_max_ape_pct, f.train_rmse_w,
      f.train_r2);
  for (int d = 0; d < m.layout.num_domains(); ++d) {
    const FrequencyDomain& dom = m.layout.domains[d];
    const CoefficientCi& ci = m.coefficient_ci95;
    // " [lo, hi]" (the bootstrap 95% interval) when the model has one, else "".
    auto interval = [&](const std::vector<std::pair<double, double>>& v, size_t k, int decimals,
                        double scale) {
      if (!ci.known() || k >= v.size()) return std::string();
      return fmt::format(" [{:.{}f}, {:.{}f}]", v[k].first * scale, decimals, v[k].second * scale,
                         decimals);
    };
    s += fmt::format(
        "  {} domain (default {} MHz): static {:.4f}{} W, idle dynamic {:.6f}{} W/MHz\n", dom.name,
        dom.default_freq_mhz, m.static_w[d], interval(ci.static_w, d, 4, 1.0),
        m.idle_dyn_w_per_mhz[d], interval(ci.idle_dyn_w_per_mhz, d, 6, 1.0));
    s += "    voltage:";
    for (size_t j = 0; j < m.freq_levels_mhz[d].size(); ++j) {
      s += fmt::format(" {}:{:.4f}", m.freq_levels_mhz[d][j], m.voltage_rel[d][j]);
    }
    s += "\n";
  }
  if (m.power_limit_w) {
    s += fmt::format("  board power limit: {} W (predictions above it are capped)\n",
                     *m.power_limit_w);
  }
  if (m.training_range.known()) {
    s += fmt::format("  training range: max power {:.2f} W\n", m.training_range.max_power_w);
  }
  // The components: W at full use at the default pair, its interval, how far training reached.
  const std::vector<ComponentTrust> trust = ComponentTrustTable(m);
  s += "  components (full use at the default V-F):\n";
  std::istringstream table(ComponentTrustText(trust));
  for (std::string line; std::getline(table, line);) s += "    " + line + "\n";
  for (const std::string& w : ComponentTrustWarnings(trust)) s += "  trust: " + w + "\n";
  if (m.coefficient_ci95.known()) {
    s += fmt::format(
        "  [lo, hi]: bootstrap 95% intervals ({} resamples of the training benchmarks, "
        "seed {})\n",
        m.coefficient_ci95.bootstrap_replicates, m.coefficient_ci95.seed);
  }
  if (m.prediction_interval.known()) {
    const std::vector<double>& q = m.prediction_interval.oob_ratio_quantiles;
    // Quantiles k = 4 and 194 are at 2.5% and 97.5% (probability (k + 1) / 200).
    s += fmt::format(
        "  prediction interval: {} replicates; out of bag, measured / predicted lies in [{:.3f}, "
        "{:.3f}] 95 times in 100 ({} predictions of benchmarks a replicate did not see)\n",
        m.prediction_interval.replicate_coefficients.size(), q[4], q[194],
        m.prediction_interval.oob_predictions);
  }
  for (const std::string& note : m.training_notes) s += "  note: " + note + "\n";
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

}  // namespace wattcal
