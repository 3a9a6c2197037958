// Which residual and loss predict best on real data? Trains the DVFS model on the GTX
// Titan X microbenchmarks with every (solver, residual, loss) combination and prints the
// held-out MAPE of the DVFS and scaling-factor predictions on the real benchmarks, plus a
// leave-benchmarks-out cross-validated MAPE on the training set itself (which does not look
// at the held-out set). This is how wattcal's default was chosen (README "Choosing the loss").
//
//   build/bin/loss_study [DATASETS_DIR]     (default ../shared/datasets)
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fit/calibrate.h"
#include "io/corpus_io.h"
#include "crossval/cross_validation.h"
#include "validate/prediction.h"

using namespace wattcal;

namespace {
double Mape(const std::vector<PredictionRow>& rows) {
  double s = 0.0;
  for (const PredictionRow& r : rows) s += std::abs(r.error_pct());
  return s / rows.size();
}
}  // namespace

int main(int argc, char** argv) {
  const std::string root =
      argc > 1 ? argv[1] : std::string(WATTCAL_SOURCE_DIR) + "/../shared/datasets";
  struct Pair {
    std::string name, train, heldout;
  };
  const std::vector<Pair> pairs = {
      {"titanx-11comp", root + "/gpmtool_tpds2019/gtx_titan_x/train_micro_dvfs_11comp.csv",
       root + "/gpmtool_tpds2019/gtx_titan_x/DERIVED_real_power_allF_11comp.csv"},
      {"titanx-7comp", root + "/gpmtool_tpds2019/gtx_titan_x/train_micro_dvfs_7comp.csv",
       root + "/gpmtool_tpds2019/gtx_titan_x/real_power_allF_7comp.csv"},
  };
  struct Variant {
    FitSolver solver;
    FitResidual residual;
    FitLoss loss;
    double scale;
    bool from_alt = false;
  };
  std::vector<Variant> variants = {
      {FitSolver::kAlternating, FitResidual::kAbsolute, FitLoss::kL2, 0}};
  for (FitResidual res : {FitResidual::kAbsolute, FitResidual::kRelative}) {
    for (FitLoss loss : {FitLoss::kL2, FitLoss::kHuber, FitLoss::kCauchy}) {
      variants.push_back({FitSolver::kJoint, res, loss, 0});
    }
  }
  // Sensitivity of the Huber scale (W for absolute residuals).
  for (double scale : {2.0, 3.0, 8.0, 12.0}) {
    variants.push_back({FitSolver::kJoint, FitResidual::kAbsolute, FitLoss::kHuber, scale});
  }
  // Also starting from the alternating solution, keeping the better optimum.
  for (double scale : {2.0, 3.0, 5.0}) {
    variants.push_back({FitSolver::kJoint, FitResidual::kAbsolute, FitLoss::kHuber, scale, true});
  }
  variants.push_back({FitSolver::kJoint, FitResidual::kAbsolute, FitLoss::kL2, 0, true});
  variants.push_back({FitSolver::kJoint, FitResidual::kRelative, FitLoss::kL2, 0, true});
  std::printf("%-14s %-11s %-9s %-7s %5s %6s %9s %9s %9s %9s %12s\n", "corpus", "solver",
              "residual", "loss", "scale", "time_s", "train_pct", "cv5_pct", "dvfs_pct", "scal_pct",
              "l2cost_w2");
  for (const Pair& p : pairs) {
    const Corpus train = ReadCorpus(p.train);
    const Corpus heldout = ReadCorpus(p.heldout);
    for (const Variant& v : variants) {
      CalibrationOptions o;
      o.solver = v.solver;
      o.residual = v.residual;
      o.loss = v.loss;
      o.loss_scale = v.scale;
      o.start_from_alternating = v.from_alt;
      const auto t0 = std::chrono::steady_clock::now();
      const PowerModel m = Calibrate(train, o);
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      CrossValidationOptions cv;
      cv.folds = 5;
      cv.threads = 2;
      const double cv_mape = Mape(CrossValidate(train, o, PredictMode::kDvfs, cv).rows);
      double l2 = 0.0;
      for (int r = 0; r < train.rows(); ++r) {
        const Eigen::VectorXd u = train.util_frac.row(r).transpose();
        const Eigen::VectorXd f = train.freq_mhz.row(r).transpose();
        const double e = m.Predict(u.data(), f.data()) - train.power_w(r);
        l2 += 0.5 * e * e;
      }
      std::printf("%-14s %-11s %-9s %-7s %5.1f %6.3f %9.3f %9.3f %9.3f %9.3f %12.3f\n",
                  p.name.c_str(), v.from_alt ? "joint+alt" : FitSolverName(v.solver),
                  FitResidualName(v.residual), FitLossName(v.loss), o.EffectiveLossScale(), t,
                  m.fit.train_mape_pct, cv_mape,
                  Mape(PredictHeldout(m, heldout, PredictMode::kDvfs)),
                  Mape(PredictHeldout(m, heldout, PredictMode::kScaling)), l2);
      std::fflush(stdout);
    }
  }
  // The fixed-frequency model (TPDS Eq. 9), trained on the default-pair microbenchmarks.
  const Corpus fixed_train =
      ReadCorpus(root + "/gpmtool_tpds2019/gtx_titan_x/train_micro_fixed_11comp.csv");
  const Corpus fixed_heldout = ReadCorpus(pairs[0].heldout);
  for (FitResidual res : {FitResidual::kAbsolute, FitResidual::kRelative}) {
    for (FitLoss loss : {FitLoss::kL2, FitLoss::kHuber, FitLoss::kCauchy}) {
      CalibrationOptions o;
      o.method = FitMethod::kFixed;
      o.residual = res;
      o.loss = loss;
      const PowerModel m = Calibrate(fixed_train, o);
      std::printf("%-14s %-11s %-9s %-7s %5.1f fixed_pct %9.3f\n", "titanx-fixed", "nnls",
                  FitResidualName(res), FitLossName(loss), o.EffectiveLossScale(),
                  Mape(PredictHeldout(m, fixed_heldout, PredictMode::kFixed)));
    }
  }
  return 0;
}
