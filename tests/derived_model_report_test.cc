// A model carried to another GPU (wattcal-port gpu) or node keeps its base fit's FitReport: the
// report says its training figures are the base model's, never shows them as its own (issue 24:
// the port report showed the H100 fit's training MAPE as the ported model's).
#include <gtest/gtest.h>

#include <string>

#include "model/model_io.h"
#include "model/power_model.h"
#include "test_support.h"

namespace wattcal {
namespace {

PowerModel Fitted(const std::string& trained_on) {
  PowerModel m;
  m.method = FitMethod::kFixed;
  m.layout.domains = {{"core", 1000.0, {"A", "B"}}};
  m.freq_levels_mhz = {{1000.0}};
  m.voltage_rel = {{1.0}};
  m.static_w = {50.0};
  m.idle_dyn_w_per_mhz = {0.0};
  m.component_w_per_mhz = {0.1, 0.2};
  m.fit.solver = ModelSolver::kNnls;
  m.fit.converged = true;
  m.fit.train_rows = 130;
  m.fit.train_mape_pct = 4.16;
  m.trained_on = trained_on;
  return m;
}

TEST(DerivedModelReport, APortedModelsTrainingFiguresAreTheBaseFits) {
  EXPECT_FALSE(Fitted("h100.csv").Derived());
  EXPECT_TRUE(
      Fitted(std::string("h100.csv") + PowerModel::kPortedMarker + "H100 to H200, TPDS §4.6)")
          .Derived());
  EXPECT_TRUE(
      Fitted(std::string("h100.csv") + PowerModel::kScaledMarker + ": dynamic x0.5)").Derived());

  const std::string dir = testing::ScratchDir();
  testing::WriteFile(dir + "/own.json", ModelToJson(Fitted("h100.csv")));
  testing::WriteFile(
      dir + "/ported.json",
      ModelToJson(Fitted(std::string("h100.csv") + PowerModel::kPortedMarker + "H100 to H200)")));
  const testing::CommandResult r =
      testing::RunStage("wattcal-report", {"--model", "own=" + dir + "/own.json", "--model",
                                           "ported=" + dir + "/ported.json", "--out-dir",
                                           dir + "/report", "--no-figures"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string md = testing::ReadFile(dir + "/report/index.md");
  EXPECT_NE(md.find("| train\\_mape\\_pct | 4.16 | 4.16 (the base model's fit) |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| train\\_rows | 130 | 130 (the base model's fit) |"), std::string::npos)
      << md;
}

}  // namespace
}  // namespace wattcal
