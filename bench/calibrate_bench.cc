// Training speed on the GTX Titan X microbenchmarks (6528 rows, 16 coefficients, 18 voltage
// parameters). The *Reference benchmarks run the former formulation
// (SolverSwitches::reference_solver: one Ceres block per row, Ceres's own bounds handling
// with its line search, a Ceres fit per voltage level, NNLS on every row) beside the default in
// the same run; *WithoutRounds is the default's compressed problem on Ceres's own bounds path
// (SolverSwitches::joint_active_set off: the former default's path and optimum);
// *Uncompressed returns every row of a V-F pair block instead of the default's one compressed
// block (SolverSwitches::joint_compressed_pairs off). bench/speed_calibrate.sh puts these
// beside a scipy least_squares fit of the same model (bench/scipy_calibrate.py).
//
//   build/bin/calibrate_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Reads ../shared/datasets (or $WATTCAL_DATASETS); skips with a message when absent.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <boost/filesystem.hpp>

#include "fit/calibrate.h"
#include "io/corpus_io.h"
#include "crossval/cross_validation.h"

using namespace wattcal;

namespace {

std::string TitanXTrain() {
  const char* env = std::getenv("WATTCAL_DATASETS");
  const std::string root = env ? env : std::string(WATTCAL_SOURCE_DIR) + "/../shared/datasets";
  return root + "/gpmtool_tpds2019/gtx_titan_x/train_micro_dvfs_11comp.csv";
}

void Run(benchmark::State& state, CalibrationOptions options, int threads = 1) {
  const std::string path = TitanXTrain();
  if (!boost::filesystem::exists(path)) {
    state.SkipWithError(("dataset not found: " + path).c_str());
    return;
  }
  const Corpus train = ReadCorpus(path);
  options.threads = threads;
  int iterations = 0;
  for (auto _ : state) {
    const PowerModel model = Calibrate(train, options);
    iterations = model.fit.iterations;
    benchmark::DoNotOptimize(model.static_w.data());
  }
  state.counters["solver_iterations"] = iterations;
  state.counters["rows"] = train.rows();
}

void BM_CalibrateDefault(benchmark::State& state) { Run(state, CalibrationOptions()); }

// --threads 2: the two starts side by side (the same model).
void BM_CalibrateDefaultTwoThreads(benchmark::State& state) { Run(state, CalibrationOptions(), 2); }

void BM_CalibrateDefaultReference(benchmark::State& state) {
  CalibrationOptions o;
  o.internal.reference_solver = true;
  Run(state, o);
}

void BM_CalibrateDefaultUncompressed(benchmark::State& state) {
  CalibrationOptions o;
  o.internal.joint_compressed_pairs = false;
  Run(state, o);
}

void BM_CalibrateDefaultWithoutRounds(benchmark::State& state) {
  CalibrationOptions o;
  o.internal.joint_active_set = false;
  Run(state, o);
}

void BM_CalibrateJointL2(benchmark::State& state) {
  CalibrationOptions o;
  o.loss = FitLoss::kL2;
  Run(state, o);
}

void BM_CalibrateJointColdStartOnly(benchmark::State& state) {
  CalibrationOptions o;
  o.start_from_alternating = false;
  Run(state, o);
}

void BM_CalibrateAlternating(benchmark::State& state) {
  CalibrationOptions o;
  o.solver = FitSolver::kAlternating;
  o.loss = FitLoss::kL2;
  o.residual = FitResidual::kAbsolute;
  Run(state, o);
}

void BM_CalibrateAlternatingReference(benchmark::State& state) {
  CalibrationOptions o;
  o.solver = FitSolver::kAlternating;
  o.loss = FitLoss::kL2;
  o.residual = FitResidual::kAbsolute;
  o.internal.reference_solver = true;
  Run(state, o);
}

void BM_CalibrateFixed(benchmark::State& state) {
  CalibrationOptions o;
  o.method = FitMethod::kFixed;
  o.loss = FitLoss::kL2;
  Run(state, o);
}

void BM_ReadTitanX(benchmark::State& state) {
  const std::string path = TitanXTrain();
  if (!boost::filesystem::exists(path)) {
    state.SkipWithError(("dataset not found: " + path).c_str());
    return;
  }
  for (auto _ : state) {
    const Corpus c = ReadCorpus(path);
    benchmark::DoNotOptimize(c.power_w.data());
  }
  state.SetBytesProcessed(state.iterations() * boost::filesystem::file_size(path));
}

}  // namespace

BENCHMARK(BM_CalibrateDefault)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CalibrateDefaultTwoThreads)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CalibrateDefaultReference)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CalibrateDefaultUncompressed)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CalibrateDefaultWithoutRounds)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CalibrateJointL2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CalibrateJointColdStartOnly)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CalibrateAlternating)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CalibrateAlternatingReference)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CalibrateFixed)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ReadTitanX)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_MAIN();
