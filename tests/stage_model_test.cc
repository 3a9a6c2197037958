// The stage layer of calibrate, validate, predict, port and compare (pipeline/usecases/, issue 12
// step 1) driven in-process, and the one loss default (issue 12 step 3):
//
//   StageLoss*      DefaultLoss is the default of the library and of --loss; --loss takes
//                   exactly the names FitLossName gives; a bad --loss names the flag.
//   StageCheck*     each <Stage>StageOptions::Check() refuses what the main used to refuse,
//                   with an OptionError naming the flag(s); --mode/--method of validate.
//   StageInProcess* Run<Stage>Stage on the real datasets writes byte for byte what the
//                   executable writes for the same command line (outputs and manifests).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "fit/calibrate.h"
#include "usecases/calibrate_stage.h"
#include "usecases/calibration_flags.h"
#include "usecases/compare_stage.h"
#include "usecases/port_stage.h"
#include "usecases/predict_stage.h"
#include "usecases/validate_stage.h"
#include "stage_common.h"
#include "test_support.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"

namespace wattcal {
namespace {

using ::wattcal::testing::CommandResult;
using ::wattcal::testing::Dataset;
using ::wattcal::testing::FileExists;
using ::wattcal::testing::ReadFile;
using ::wattcal::testing::RunExecutable;
using ::wattcal::testing::ScratchDir;

// Expects `body` to throw OptionError whose message holds every one of `parts`.
void ExpectOptionError(const std::function<void()>& body, const std::vector<std::string>& parts) {
  try {
    body();
    ADD_FAILURE() << "no OptionError; expected one naming " << parts.front();
  } catch (const OptionError& e) {
    const std::string message = e.what();
    for (const std::string& part : parts) {
      EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
    }
  }
}

TEST(StageLoss, DefaultLossIsTheDefaultOfTheLibraryAndOfTheCommandLine) {
  EXPECT_EQ(DefaultLoss(FitMethod::kDvfs, FitSolver::kJoint), FitLoss::kHuber);
  EXPECT_EQ(DefaultLoss(FitMethod::kDvfs, FitSolver::kAlternating), FitLoss::kL2);
  EXPECT_EQ(DefaultLoss(FitMethod::kFixed, FitSolver::kJoint), FitLoss::kL2);
  EXPECT_EQ(DefaultLoss(FitMethod::kFixed, FitSolver::kAlternating), FitLoss::kL2);
  const CalibrationOptions library;
  EXPECT_EQ(library.loss, DefaultLoss(library.method, library.solver));
  for (CalibrationMethod method : {CalibrationMethod::kDvfs, CalibrationMethod::kFixed}) {
    for (FitSolver solver : {FitSolver::kJoint, FitSolver::kAlternating}) {
      CalibrationFlags flags;
      flags.method = method;
      flags.options.solver = solver;
      const CalibrationOptions o = ToCalibrationOptions(flags);
      EXPECT_EQ(o.loss, DefaultLoss(o.method, o.solver))
          << CalibrationMethodName(method) << " " << FitSolverName(solver);
    }
  }
}

TEST(StageLoss, FlagAndNameAreInverses) {
  for (FitLoss v : {FitLoss::kL2, FitLoss::kHuber, FitLoss::kCauchy}) {
    CalibrationFlags parsed;
    CLI::App app;
    AddCalibrationOptions(&app, &parsed);
    testing::ParseCommandLine(&app, {"--loss", FitLossName(v)});
    ASSERT_TRUE(parsed.loss.has_value()) << FitLossName(v);
    EXPECT_EQ(*parsed.loss, v);
  }
  for (const char* other : {"L2", ""}) {
    CalibrationFlags untouched;
    CLI::App app;
    AddCalibrationOptions(&app, &untouched);
    EXPECT_THROW(testing::ParseCommandLine(&app, {"--loss", other}), CLI::ParseError) << other;
    EXPECT_FALSE(untouched.loss.has_value()) << other;
  }
  CalibrationFlags flags;
  flags.loss = FitLoss::kCauchy;
  flags.options.loss_scale = 2.5;
  const CalibrationOptions o = ToCalibrationOptions(flags);
  EXPECT_EQ(o.loss, FitLoss::kCauchy);
  EXPECT_EQ(o.loss_scale, 2.5);
  EXPECT_EQ(nlohmann::json(o)["loss_scale"], 2.5);
}

TEST(StageCheck, CalibrateNamesTheFlags) {
  CalibrateStageOptions o;
  o.out_path = "m.json";
  ExpectOptionError([&] { o.Check(); }, {"--train"});
  o.train_path = "train.csv";
  o.Check();  // the defaults with --train and --out pass
  o.bootstrap = 10;
  ExpectOptionError([&] { o.Check(); }, {"--bootstrap", "--method fixed", "dvfs"});
  o.calibration.method = CalibrationMethod::kFixed;
  o.Check();
  o.bootstrap = 0;
  o.accelwattch.prior_weight = 0.5;
  ExpectOptionError([&] { o.Check(); }, {"--prior-weight", "--method accelwattch"});
  o.accelwattch.prior_weight = 0.0;
  o.calibration.options.voltage_min = 3.0;
  ExpectOptionError([&] { o.Check(); }, {"voltage_min", "3"});
  o.calibration.options.voltage_min = 0.5;
  o.calibration.method = CalibrationMethod::kAccelWattch;
  ExpectOptionError([&] { o.Check(); }, {"--method accelwattch", "not --train"});
  o.train_path.clear();
  ExpectOptionError([&] { o.Check(); }, {"--components", "--activity"});
  o.activity_path = "activity.csv";
  ExpectOptionError([&] { o.Check(); }, {"--activity needs", "--energies", "--idle"});
  o.energies_path = "e.json";
  o.constant_path = "c.json";
  o.static_path = "s.json";
  o.idle_path = "i.json";
  o.Check();
  o.components_path = "table.csv";
  ExpectOptionError([&] { o.Check(); }, {"either --components"});
  o.out_path.clear();
  ExpectOptionError([&] { o.Check(); }, {"--out"});
}

ValidateStageOptions HeldoutValidation() {
  ValidateStageOptions o;
  o.model_path = "m.json";
  o.heldout_path = "heldout.csv";
  o.predictions_path = "p.csv";
  o.metrics_path = "metrics.json";
  return o;
}

TEST(StageCheck, ValidateModeAndMethod) {
  ValidateStageOptions o = HeldoutValidation();
  o.Check();
  // --method is the folds' calibration method: without --cv-folds it has nothing to pick.
  o.calibration.method = CalibrationMethod::kFixed;
  o.method_given = true;
  ExpectOptionError([&] { o.Check(); }, {"--method fixed", "--cv-folds"});
  // With --cv-folds, --method follows --mode unless given.
  ValidateStageOptions cv = HeldoutValidation();
  cv.model_path.clear();
  cv.heldout_path.clear();
  cv.train_path = "train.csv";
  cv.cv_folds = 5;
  cv.mode = ValidateMode::kFixed;
  EXPECT_EQ(cv.FoldCalibration().method, CalibrationMethod::kFixed);
  cv.Check();
  cv.mode = ValidateMode::kScaling;
  EXPECT_EQ(cv.FoldCalibration().method, CalibrationMethod::kDvfs);
  cv.Check();
  // A fixed model cannot predict other V-F pairs: refused before any fold is fitted.
  cv.calibration.method = CalibrationMethod::kFixed;
  cv.method_given = true;
  ExpectOptionError([&] { cv.Check(); }, {"--method fixed", "--mode scaling"});
  cv.mode = ValidateMode::kDvfs;
  ExpectOptionError([&] { cv.Check(); }, {"--method fixed", "--mode dvfs"});
  cv.mode = ValidateMode::kFixed;
  cv.Check();
  cv.calibration.method = CalibrationMethod::kDvfs;
  cv.Check();  // a DVFS model predicting at the default pair is a real comparison
  cv.calibration.method = CalibrationMethod::kAccelWattch;
  ExpectOptionError([&] { cv.Check(); }, {"--method accelwattch", "--mode accelwattch"});
  // --mode accelwattch takes no --method.
  ValidateStageOptions aw;
  aw.mode = ValidateMode::kAccelWattch;
  aw.components_path = "table.csv";
  aw.predictions_path = "p.csv";
  aw.metrics_path = "metrics.json";
  aw.Check();
  aw.method_given = true;
  ExpectOptionError([&] { aw.Check(); }, {"--method", "--mode accelwattch"});
}

TEST(StageCheck, ValidateNamesTheFlags) {
  ValidateStageOptions o = HeldoutValidation();
  o.plot_path = "scatter.svg";
  ExpectOptionError([&] { o.Check(); }, {"--plot", ".png"});
  o.plot_path.clear();
  o.calibration.options.keep_flagged = true;
  ExpectOptionError([&] { o.Check(); }, {"--keep-flagged", "--cv-folds"});
  o.calibration.options.keep_flagged = false;
  o.train_path = "train.csv";
  ExpectOptionError([&] { o.Check(); }, {"--train", "--cv-folds"});
  o.train_path.clear();
  o.components_path = "table.csv";
  ExpectOptionError([&] { o.Check(); }, {"--components", "--mode accelwattch"});
  o.components_path.clear();
  o.accelwattch.prior_weight = 0.1;
  ExpectOptionError([&] { o.Check(); }, {"accelwattch fit options"});
  o.mode = ValidateMode::kAccelWattch;
  ExpectOptionError([&] { o.Check(); }, {"--prior-weight", "--cv loko"});
  o.metrics_path.clear();
  ExpectOptionError([&] { o.Check(); }, {"--metrics"});
}

TEST(StageCheck, PredictCompareAndPortNameTheFlags) {
  PredictStageOptions p;
  p.model_path = "m.json";
  p.activity_path = "a.csv";
  p.out_path = "p.csv";
  p.Check();
  p.power_limit_w = 20000.0;
  ExpectOptionError([&] { p.Check(); }, {"--power-limit-w", "20000"});
  p.power_limit_w = 0.0;  // no board is limited to 0 W: a limit is given or unset
  ExpectOptionError([&] { p.Check(); }, {"--power-limit-w", "(0, 10000]"});
  p.power_limit_w = std::nullopt;
  p.mode = PredictMode::kScaling;
  ExpectOptionError([&] { p.Check(); }, {"--mode", "scaling"});

  CompareStageOptions c;
  c.arch_a = "volta_qv100";
  c.arch_b = "pascal_titanx";
  c.estimated_a_path = "a.csv";
  c.estimated_b_path = "b.csv";
  c.out_path = "c.json";
  ExpectOptionError([&] { c.Check(); }, {"--measured"});
  c.measured_a_path = "ma.csv";
  ExpectOptionError([&] { c.Check(); }, {"--measured-b"});
  c.measured_path = "m.csv";
  c.Check();
  EXPECT_EQ(c.MeasuredAPath(), "ma.csv");
  EXPECT_EQ(c.MeasuredBPath(), "m.csv");
  c.max_diff_pp = -1.0;
  ExpectOptionError([&] { c.Check(); }, {"--max-diff-pp", "-1"});
  c.max_diff_pp = 0.0;
  c.direction_deadband_pct = -3.0;
  ExpectOptionError([&] { c.Check(); }, {"--direction-deadband-pct", "-3"});

  PortStageOptions port;
  ExpectOptionError([&] { port.Check(); }, {"gpu, project or node"});
  port.subcommand = "gpu";
  port.gpu.model_path = "m.json";
  port.gpu.base_gpu_path = "base.json";
  port.gpu.target_gpu_path = "target.json";
  port.gpu.out_path = "o.json";
  port.Check();
  port.gpu.base_idle_w = 4.0;
  ExpectOptionError([&] { port.Check(); },
                    {"--base/target-idle-w", "--constant-scaling idle-power"});
  port.gpu.constant_scaling = ConstantScaling::kIdlePower;
  ExpectOptionError([&] { port.Check(); }, {"--target-idle-w", "--target-idle-from"});
  port.gpu.base_idle_from = "corpus.csv";
  port.gpu.target_idle_w = 65.0;
  ExpectOptionError([&] { port.Check(); }, {"--base-idle-w or --base-idle-from, not both"});
  port.subcommand = "node";
  port.node.out_path = "o.csv";
  ExpectOptionError([&] { port.Check(); }, {"--estimates", "--model"});
  port.node.model_path = "m.json";
  port.node.totals_out_path = "t.csv";
  ExpectOptionError([&] { port.Check(); }, {"--totals-out", "--estimates"});
  port.node.totals_out_path.clear();
  ExpectOptionError([&] { port.Check(); }, {"--node-table"});
  port.node.scaling.dynamic_factor = 0.9;
  port.node.scaling.static_factor = 0.8;
  port.Check();
  port.subcommand = "project";
  ExpectOptionError([&] { port.Check(); }, {"project", "--corpus"});
}

// Runs `program` with `args` writing `outputs` (paths relative to nothing: absolute), keeps
// their bytes and those of their provenance, removes them, then runs `in_process` writing the
// same paths and expects the same bytes and exit code, and its StageSummary to list exactly
// `outputs` as written. The provenance's command line is the one thing that differs (an
// in-process run has no argv of its own): it is compared without it.
void ExpectSameAsExecutable(const std::string& program, const std::vector<std::string>& args,
                            const std::vector<std::string>& outputs,
                            const std::function<StageSummary()>& in_process) {
  const CommandResult executable = RunExecutable(program, args);
  auto without_argv = [](const std::string& text) {
    nlohmann::json j = nlohmann::json::parse(text);
    j.erase("argv");
    return j.dump(2);
  };
  std::vector<std::string> files = outputs;
  for (const std::string& path : outputs) {
    const std::string provenance = testing::ProvenancePath(path);
    ASSERT_FALSE(provenance.empty()) << program << " wrote no provenance for " << path << ":\n"
                                     << executable.output;
    if (std::find(files.begin(), files.end(), provenance) == files.end())
      files.push_back(provenance);
  }
  std::vector<std::string> expected;
  for (const std::string& file : files) {
    ASSERT_TRUE(FileExists(file)) << program << " did not write " << file << ":\n"
                                  << executable.output;
    const std::string bytes = ReadFile(file);
    expected.push_back(file.find("/provenance/") != std::string::npos ? without_argv(bytes)
                                                                      : bytes);
    std::remove(file.c_str());
  }
  const StageSummary summary = in_process();
  EXPECT_EQ(summary.exit_code, executable.exit_code) << executable.output;
  std::vector<std::string> written = summary.written, wanted = outputs;
  std::sort(written.begin(), written.end());
  std::sort(wanted.begin(), wanted.end());
  EXPECT_EQ(written, wanted) << program << ": StageSummary::written";
  for (size_t i = 0; i < files.size(); ++i) {
    ASSERT_TRUE(FileExists(files[i])) << "in-process " << program << " did not write " << files[i];
    const std::string bytes = ReadFile(files[i]);
    EXPECT_EQ(files[i].find("/provenance/") != std::string::npos ? without_argv(bytes) : bytes,
              expected[i])
        << files[i];
  }
}

// testing::RunStage runs a stage's command in this process: it answers as the executable does
// (exit status and output, for --help, a refusal and a run), and a run leaves nothing behind for
// the next one (log level, command line).
TEST(StageInProcess, RunStageAnswersAsTheExecutableAndLeavesNothingBehind) {
  const std::string dir = ScratchDir();
  const std::string train = testing::FixturePath("gpmtool/train_sp_int_dram.csv");
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--help"},
           {"--train", train, "--out", dir + "/refused.json", "--loss", "tukey"},
           {"--train", dir + "/missing.csv", "--out", dir + "/refused.json"},
           {"--train", train, "--method", "fixed", "--out", train}}) {
    const CommandResult in_process = testing::RunStage("wattcal-calibrate", args);
    const CommandResult executable = RunExecutable("wattcal-calibrate", args);
    EXPECT_EQ(in_process.exit_code, executable.exit_code) << args.back();
    EXPECT_EQ(in_process.output, executable.output) << args.back();
    EXPECT_NE(in_process.output, "") << args.back();
  }
  EXPECT_FALSE(FileExists(dir + "/refused.json"));

  const LogLevel level = GetLogLevel();
  const CommandResult quiet = testing::RunStage(
      "wattcal-calibrate", {"--train", train, "--method", "fixed", "--out", dir + "/a.json", "-q"});
  ASSERT_EQ(quiet.exit_code, 0) << quiet.output;
  EXPECT_EQ(quiet.output, "");
  EXPECT_EQ(GetLogLevel(), level) << "-q outlived its run";
  const CommandResult loud = testing::RunStage(
      "wattcal-calibrate", {"--train", train, "--method", "fixed", "--out", dir + "/b.json"});
  ASSERT_EQ(loud.exit_code, 0) << loud.output;
  EXPECT_NE(loud.output.find("wrote " + dir + "/b.json"), std::string::npos) << loud.output;
  EXPECT_EQ(ReadFile(dir + "/a.json"), ReadFile(dir + "/b.json"));
  const CommandResult executable = RunExecutable(
      "wattcal-calibrate", {"--train", train, "--method", "fixed", "--out", dir + "/c.json"});
  ASSERT_EQ(executable.exit_code, 0) << executable.output;
  EXPECT_EQ(ReadFile(dir + "/a.json"), ReadFile(dir + "/c.json"));
  EXPECT_TRUE(CommandLine().empty()) << "a run's command line outlived it";
}

TEST(StageInProcess, CalibrateValidatePredictWriteWhatTheExecutablesWrite) {
  WATTCAL_REQUIRE_DATASETS();
  const std::string dir = ScratchDir();
  const std::string train = Dataset("gpmtool_tpds2019/gtx_titan_x/train_micro_fixed_11comp.csv");
  const std::string heldout =
      Dataset("gpmtool_tpds2019/gtx_titan_x/DERIVED_real_power_allF_11comp.csv");
  const std::string model = dir + "/model_fixed.json";
  CalibrateStageOptions calibrate;
  calibrate.train_path = train;
  calibrate.out_path = model;
  calibrate.export_gpmtool_path = dir + "/model_fixed.csv";
  calibrate.calibration.method = CalibrationMethod::kFixed;
  ExpectSameAsExecutable(
      "wattcal-calibrate",
      {"--train", train, "--method", "fixed", "--out", model, "--export-gpmtool",
       calibrate.export_gpmtool_path, "-q"},
      {model, calibrate.export_gpmtool_path}, [&] {
        const CalibrateStageReport r = RunCalibrateStage(calibrate);
        EXPECT_TRUE(r.converged);
        EXPECT_EQ(r.written, (std::vector<std::string>{model, calibrate.export_gpmtool_path}));
        EXPECT_EQ(r.summary, "");  // the stage logs to stderr; stdout stays empty
        return r;
      });

  ValidateStageOptions validate;
  validate.model_path = model;
  validate.heldout_path = heldout;
  validate.mode = ValidateMode::kFixed;
  validate.title = "Titan X, fixed";
  validate.predictions_path = dir + "/predictions.csv";
  validate.metrics_path = dir + "/metrics.json";
  validate.apps_predictions_path = dir + "/apps.csv";
  validate.summary_md_path = dir + "/summary.md";
  validate.max_mape_pct = 1.0;  // the fixed model's MAPE is larger: exit 3, outputs written
  ExpectSameAsExecutable(
      "wattcal-validate",
      {"--model", model, "--heldout", heldout, "--mode", "fixed", "--title", validate.title,
       "--predictions", validate.predictions_path, "--metrics", validate.metrics_path,
       "--apps-predictions", validate.apps_predictions_path, "--summary-md",
       validate.summary_md_path, "--max-mape-pct", "1", "-q"},
      {validate.predictions_path, validate.metrics_path, validate.apps_predictions_path,
       validate.summary_md_path},
      [&] {
        const ValidateStageReport r = RunValidateStage(validate);
        EXPECT_EQ(r.exit_code, static_cast<int>(kExitFit));
        EXPECT_GT(r.mape_pct, 1.0);
        EXPECT_EQ(r.written.size(), 4u);
        return r;
      });

  PredictStageOptions predict;
  predict.model_path = model;
  predict.activity_path = heldout;
  predict.out_path = dir + "/power.csv";
  predict.mode = PredictMode::kFixed;
  predict.mode_given = true;
  predict.breakdown = true;
  ExpectSameAsExecutable("wattcal-predict",
                         {"--model", model, "--activity", heldout, "--out", predict.out_path,
                          "--mode", "fixed", "--breakdown", "-q"},
                         {predict.out_path}, [&] {
                           const PredictStageReport r = RunPredictStage(predict);
                           EXPECT_GT(r.rows, 0u);
                           return r;
                         });
}

TEST(StageInProcess, CompareAndPortWriteWhatTheExecutablesWrite) {
  WATTCAL_REQUIRE_DATASETS();
  const std::string dir = ScratchDir();
  const std::string measured = Dataset("accelwattch/common/measured_power_by_arch.csv");
  const std::string volta = Dataset("accelwattch/volta_qv100/per_kernel_sass_sim.csv");
  const std::string pascal = Dataset("accelwattch/pascal_titanx/per_kernel_sass_sim_scaled.csv");
  const std::string pascal_raw =
      Dataset("accelwattch/pascal_titanx/per_kernel_sass_sim_unscaled.csv");
  CompareStageOptions compare;
  compare.measured_path = measured;
  compare.arch_a = "volta_qv100";
  compare.arch_b = "pascal_titanx";
  compare.estimated_a_path = volta;
  compare.estimated_b_path = pascal;
  compare.out_path = dir + "/compare.json";
  compare.table_path = dir + "/compare.csv";
  ExpectSameAsExecutable("wattcal-compare",
                         {"--measured", measured, "--arch-a", "volta_qv100", "--arch-b",
                          "pascal_titanx", "--estimated-a", volta, "--estimated-b", pascal, "--out",
                          compare.out_path, "--table", compare.table_path, "-q"},
                         {compare.out_path, compare.table_path},
                         [&] { return RunCompareStage(compare); });

  PortStageOptions port;
  port.subcommand = "node";
  port.node.estimates_path = pascal_raw;
  port.node.reference_path = pascal;
  port.node.node_table_path =
      std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/technology_nodes.csv";
  port.node.scaling.from_node = "12nm";
  port.node.scaling.to_node = "16nm";
  port.node.out_path = dir + "/scaled.csv";
  port.node.report_path = dir + "/node.json";
  port.node.totals_out_path = dir + "/totals.csv";
  ExpectSameAsExecutable("wattcal-port",
                         {"node", "--estimates", pascal_raw, "--reference", pascal, "--node-table",
                          port.node.node_table_path, "--from-node", "12nm", "--to-node", "16nm",
                          "--out", port.node.out_path, "--report", port.node.report_path,
                          "--totals-out", port.node.totals_out_path, "-q"},
                         {port.node.out_path, port.node.report_path, port.node.totals_out_path},
                         [&] {
                           const PortStageReport r = RunPortStage(port);
                           EXPECT_EQ(r.written.size(), 3u);
                           return r;
                         });
}

}  // namespace
}  // namespace wattcal
