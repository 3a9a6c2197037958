// The component trust table (model/component_trust.h) on a model whose every flag is known by
// construction, and its place in the model file (derived, written, never read back).
#include "model/component_trust.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/model_io.h"
#include "test_support.h"

namespace wattcal {
namespace {

// Core at 1000 MHz with A, B, C; memory at 2000 MHz with D.
PowerModel FourComponents() {
  PowerModel m;
  m.method = FitMethod::kFixed;
  m.layout.domains = {{"core", 1000.0, {"A", "B", "C"}}, {"mem", 2000.0, {"D"}}};
  m.freq_levels_mhz = {{1000.0}, {2000.0}};
  m.voltage_rel = {{1.0}, {1.0}};
  m.static_w = {50.0, 10.0};
  m.idle_dyn_w_per_mhz = {0.0, 0.0};
  m.component_w_per_mhz = {0.1, 0.05, 0.8, 0.01};
  m.power_limit_w = 700.0;
  m.training_range.max_util_frac = {0.9, 0.3, 0.95, 0.6};
  m.training_range.max_power_w = 650.0;
  return m;
}

TEST(ComponentTrust, FullUseWattsIntervalsAndFlags) {
  PowerModel m = FourComponents();
  m.coefficient_ci95.bootstrap_replicates = 100;
  m.coefficient_ci95.static_w = {{45.0, 55.0}, {8.0, 12.0}};
  m.coefficient_ci95.idle_dyn_w_per_mhz = {{0.0, 0.0}, {0.0, 0.0}};
  m.coefficient_ci95.component_w_per_mhz = {{0.09, 0.11}, {0.0, 0.2}, {0.7, 0.9}, {0.005, 0.02}};
  const std::vector<ComponentTrust> t = ComponentTrustTable(m);
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0].component, "A");
  EXPECT_DOUBLE_EQ(t[0].full_use_w, 100.0);  // 0.1 W/MHz x 1000 MHz
  EXPECT_DOUBLE_EQ(t[0].ci_low_w, 90.0);
  EXPECT_TRUE(t[0].flags.empty());
  EXPECT_EQ(t[1].flags, (std::vector<std::string>{kTrustBelowHalfUse, kTrustIntervalHoldsZero}));
  EXPECT_EQ(t[2].flags, (std::vector<std::string>{kTrustAboveBoardLimit}));  // 800 W > 700 W
  EXPECT_EQ(t[3].domain, "mem");
  EXPECT_DOUBLE_EQ(t[3].full_use_w, 20.0);  // at the memory domain's 2000 MHz
  EXPECT_TRUE(t[3].flags.empty());

  const std::vector<std::string> w = ComponentTrustWarnings(t);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(
      w[0],
      "B: trained only up to 0.300 of full use, so 50 W at full use is an extrapolation; its 95% "
      "interval [0.0, 200.0] W at full use holds zero");
  EXPECT_EQ(w[1], "C: 800 W at full use is above the board limit");
  const std::string text = ComponentTrustText(t);
  EXPECT_NE(text.find("full_use_w_ci95"), std::string::npos) << text;
  EXPECT_NE(text.find("trained_below_half_use,interval_holds_zero"), std::string::npos) << text;
}

TEST(ComponentTrust, UnknownRangeAndNoIntervalRaiseNoFlag) {
  PowerModel m = FourComponents();
  m.training_range = TrainingRange();  // a model written before the range was recorded
  m.power_limit_w = std::nullopt;
  for (const ComponentTrust& t : ComponentTrustTable(m)) {
    EXPECT_TRUE(std::isnan(t.trained_up_to)) << t.component;
    EXPECT_FALSE(t.has_ci);
    EXPECT_TRUE(t.flags.empty()) << t.component;
  }
  EXPECT_TRUE(ComponentTrustWarnings(ComponentTrustTable(m)).empty());
}

TEST(ComponentTrust, TheModelFileCarriesTheTableAndReadsBackWithoutIt) {
  const PowerModel m = FourComponents();
  const std::string json = ModelToJson(m);
  const nlohmann::json j = nlohmann::json::parse(json);
  ASSERT_EQ(j["component_trust"].size(), 4u);
  EXPECT_EQ(j["component_trust"][1]["component"], "B");
  EXPECT_DOUBLE_EQ(j["component_trust"][1]["full_use_w"].get<double>(), 50.0);
  EXPECT_TRUE(j["component_trust"][1]["full_use_w_ci95"].is_null());
  EXPECT_DOUBLE_EQ(j["component_trust"][1]["trained_up_to_frac"].get<double>(), 0.3);
  EXPECT_EQ(j["component_trust"][1]["flags"], nlohmann::json::array({"trained_below_half_use"}));
  // Derived: reading the file back and writing it again gives the same bytes.
  const std::string path = testing::WriteFile(testing::ScratchDir() + "/m.json", json);
  EXPECT_EQ(ModelToJson(ReadModel(path)), json);
}

// extrapolates:<component>: more than 10% of the uncapped power from a component used beyond
// trained_up_to, or whose bootstrap interval holds zero; not for a small share of the power.
TEST(ComponentTrust, ExtrapolatesFlagsNameTheComponentsAPredictionRestsOn) {
  PowerModel m = FourComponents();
  m.coefficient_ci95.bootstrap_replicates = 100;
  m.coefficient_ci95.static_w = {{45.0, 55.0}, {8.0, 12.0}};
  m.coefficient_ci95.idle_dyn_w_per_mhz = {{0.0, 0.0}, {0.0, 0.0}};
  // B's interval holds zero; A, C and D are pinned.
  m.coefficient_ci95.component_w_per_mhz = {{0.09, 0.11}, {0.0, 0.2}, {0.7, 0.9}, {0.005, 0.02}};
  const std::vector<ComponentTrust> t = ComponentTrustTable(m);
  const std::vector<double> freq = {1000.0, 2000.0};
  auto flags = [&](const std::vector<double>& u) {
    PowerBreakdown b;
    const double w = m.Predict(u.data(), freq.data(), &b);
    return ExtrapolatesFlags(t, u.data(), b.component_w, w);
  };
  // Within training, B unused: nothing. 60 + 90 + 0 + 760 + 12 = 922 W.
  EXPECT_TRUE(flags({0.9, 0.0, 0.95, 0.6}).empty());
  // B at 0.25 (within its 0.3) carries 12.5 W of 934.5 W: its interval holds zero, but it is
  // under 10% of the power.
  EXPECT_TRUE(flags({0.9, 0.25, 0.95, 0.6}).empty());
  // B at full use on a quiet workload: 50 W of 60 + 50 + 0.4 W, well over 10%.
  EXPECT_EQ(flags({0.0, 1.0, 0.0, 0.02}), (std::vector<std::string>{"extrapolates:B"}));
  // A and C a little above their 0.9 and 0.95 (pinned intervals): within the margin of
  // util_beyond_training (1.25 x trained_up_to + 0.05), no flag.
  EXPECT_TRUE(flags({1.0, 0.0, 1.0, 0.0}).empty());
  // Trained only up to 0.5 and 0.6, A and C at full use are beyond it: 100 and 800 of 960 W.
  m.training_range.max_util_frac = {0.5, 0.3, 0.6, 0.6};
  const std::vector<ComponentTrust> lower = ComponentTrustTable(m);
  const std::vector<double> full = {1.0, 0.0, 1.0, 0.0};
  PowerBreakdown bd;
  const double total = m.Predict(full.data(), freq.data(), &bd);
  EXPECT_EQ(ExtrapolatesFlags(lower, full.data(), bd.component_w, total),
            (std::vector<std::string>{"extrapolates:A", "extrapolates:C"}));
  // Without a training range or interval nothing can be said: no flag.
  m.training_range = TrainingRange();
  m.coefficient_ci95 = CoefficientCi();
  const std::vector<ComponentTrust> bare = ComponentTrustTable(m);
  const std::vector<double> u = {1.0, 1.0, 1.0, 1.0};
  PowerBreakdown b;
  const double w = m.Predict(u.data(), freq.data(), &b);
  EXPECT_TRUE(ExtrapolatesFlags(bare, u.data(), b.component_w, w).empty());
}

}  // namespace
}  // namespace wattcal
