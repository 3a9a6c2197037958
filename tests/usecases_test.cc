// The use cases' library entry points (pipeline/usecases/, issue 37 item 1) give exactly what
// their commands write: RunCalibration on a Corpus in memory returns the model wattcal-calibrate
// writes, byte for byte, its notes included (auto method, left-out rows, indistinguishable rows).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "io/corpus_io.h"
#include "model/model_io.h"
#include "test_support.h"
#include "usecases/calibration.h"

namespace wattcal {
namespace {

using testing::CommandResult;
using testing::ReadFile;
using testing::RunStage;
using testing::ScratchDir;
using testing::SeedFromTestName;
using testing::WriteFile;

// The truth the rows are drawn from: 40 W constant, 30 / 50 / 20 W per unit utilisation of A, B, M.
double TruthW(double a, double b, double m) { return 40.0 + 30.0 * a + 50.0 * b + 20.0 * m; }

std::string Row(const std::string& name, double power_w, double f_core_mhz, double a, double b,
                double m, const std::string& flags) {
  return fmt::format("{},{},{},3000,{},{},{},{}\n", name, power_w, f_core_mhz, flags, a, b, m);
}

// A one-pair training corpus (1000 MHz core, 3000 MHz memory; --method auto picks fixed): 14 noisy
// mixes, two rows with identical utilisations 40% apart in power (indistinguishable), two under
// the power cap at 900 MHz and one whose clock moved (both left out of training).
std::string TrainingCsv(unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> util(0.0, 0.5);
  std::normal_distribution<double> noise(0.0, 0.3);
  std::string s =
      "# wattcal-tidy default_f_core_mhz=1000 default_f_mem_mhz=3000 power_limit_w=160\n"
      "benchmark,power_w,f_core_mhz,f_mem_mhz,flags,core:A,core:B,mem:M\n";
  for (int k = 1; k <= 14; ++k) {
    const double a = util(rng), b = 2 * util(rng), m = 2 * util(rng);
    s += Row(fmt::format("mix{:03d}", k), TruthW(a, b, m) + noise(rng), 1000, a, b, m, "");
  }
  s += Row("twin001", TruthW(0.3, 0.3, 0.3), 1000, 0.3, 0.3, 0.3, "");
  s += Row("twin002", 1.4 * TruthW(0.3, 0.3, 0.3), 1000, 0.3, 0.3, 0.3, "");
  s += Row("cap001", 160, 900, 0.5, 0.9, 0.9, "power_cap");
  s += Row("cap002", 160, 900, 0.45, 0.95, 0.8, "power_cap;clock_moved");
  s += Row("moved001", 120, 1000, 0.2, 0.3, 0.1, "clock_moved");
  return s;
}

// RunCalibration's model, serialised, and the file wattcal-calibrate writes for the same request.
void ExpectLibraryWritesWhatTheCommandWrites(const std::string& dir, const std::string& train,
                                             const std::vector<std::string>& flags,
                                             const CalibrationRequest& request,
                                             CalibrationResult* result) {
  const std::string out = dir + "/model.json";
  std::vector<std::string> args = {"--train", train, "--out", out, "-q"};
  args.insert(args.end(), flags.begin(), flags.end());
  const CommandResult command = RunStage("wattcal-calibrate", args);
  ASSERT_EQ(command.exit_code, 0) << command.output;
  *result = RunCalibration(ReadCorpus(train), request);
  EXPECT_EQ(ModelToJson(result->model), ReadFile(out));
}

TEST(CalibrationUseCase, AutoGivesTheModelTheCommandWritesWithEveryNote) {
  const std::string dir = ScratchDir();
  const std::string train = WriteFile(dir + "/train.csv", TrainingCsv(SeedFromTestName()));
  CalibrationRequest request;
  request.auto_method = true;
  request.options.bootstrap_replicates = 20;
  CalibrationResult result;
  ExpectLibraryWritesWhatTheCommandWrites(dir, train, {"--method", "auto", "--bootstrap", "20"},
                                          request, &result);
  EXPECT_EQ(result.options.method, FitMethod::kFixed);
  EXPECT_EQ(result.options.bootstrap_replicates, 20);
  EXPECT_EQ(result.left_out_benchmarks, (std::vector<std::string>{"cap001", "cap002", "moved001"}));
  const std::vector<std::string>& notes = result.model.training_notes;
  const auto mentions = [&](const std::string& word) {
    return std::any_of(notes.begin(), notes.end(),
                       [&](const std::string& n) { return n.find(word) != std::string::npos; });
  };
  EXPECT_TRUE(mentions("twin001") && mentions("twin002")) << "no indistinguishable-rows note";
  EXPECT_TRUE(mentions("cap001")) << "no left-out-rows note";
  EXPECT_EQ(result.model.coefficient_ci95.bootstrap_replicates, 20);
}

TEST(CalibrationUseCase, AutoOnSeveralPairsGivesTheDvfsModelTheCommandWrites) {
  WATTCAL_REQUIRE_DATASETS();
  const std::string train =
      testing::Dataset("gpmtool_tpds2019/gtx_titan_x/train_micro_dvfs_7comp.csv");
  CalibrationRequest request;
  request.auto_method = true;
  request.options.bootstrap_replicates = 20;  // dropped: the bootstrap is the fixed method's
  CalibrationResult result;
  ExpectLibraryWritesWhatTheCommandWrites(
      ScratchDir(), train, {"--method", "auto", "--bootstrap", "20"}, request, &result);
  EXPECT_EQ(result.options.method, FitMethod::kDvfs);
  EXPECT_EQ(result.options.bootstrap_replicates, 0);
}

}  // namespace
}  // namespace wattcal
