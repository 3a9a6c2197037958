// H100 against H200 on the real captures (issue 15): the comparison's relative powers
// recomputed by hand for two benchmarks, and the port's scaling factors from the two
// descriptions. Stage level, as a user runs them; skips without ../shared/datasets.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "test_support.h"

namespace wattcal {
namespace {

using testing::Dataset;

std::string Gpu(const std::string& name) {
  return std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/gpus/" + name + ".json";
}

// benchmark -> (measured_w, predicted_w) of a validate predictions CSV.
std::map<std::string, std::pair<double, double>> Predictions(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  std::map<std::string, std::pair<double, double>> out;
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::vector<std::string> f;
    std::string cell;
    while (std::getline(ss, cell, ',')) f.push_back(cell);
    out[f[0]] = {std::stod(f[3]), std::stod(f[4])};
  }
  return out;
}

void RunOk(const std::string& stage, const std::vector<std::string>& args) {
  const testing::CommandResult r = testing::RunStage(stage, args);
  ASSERT_EQ(r.exit_code, 0) << stage << ": " << r.output;
}

TEST(H100H200, ComparisonByHandAndPortFactorsFromTheDescriptions) {
  WATTCAL_REQUIRE_DATASETS();
  const std::string d = testing::ScratchDir();
  for (const std::string gpu : {"h100", "h200"}) {
    RunOk("wattcal-ingest", {"--capture", Dataset(gpu + "_capture/ubench_random"), "--gpu",
                             Gpu(gpu + "_sxm"), "--tidy", d + "/" + gpu + ".csv"});
    RunOk("wattcal-calibrate", {"--train", d + "/" + gpu + ".csv", "--method", "fixed", "--out",
                                d + "/" + gpu + "_model.json"});
    RunOk("wattcal-validate",
          {"--model", d + "/" + gpu + "_model.json", "--heldout", d + "/" + gpu + ".csv", "--mode",
           "fixed", "--predictions", d + "/" + gpu + "_pred.csv", "--metrics",
           d + "/" + gpu + "_m.json"});
  }
  RunOk("wattcal-compare", {"--measured-a",
                            d + "/h100_pred.csv",
                            "--measured-b",
                            d + "/h200_pred.csv",
                            "--measured-column",
                            "measured_w",
                            "--estimated-a",
                            d + "/h100_pred.csv",
                            "--estimated-b",
                            d + "/h200_pred.csv",
                            "--estimated-column",
                            "predicted_w",
                            "--arch-a",
                            "h100",
                            "--arch-b",
                            "h200",
                            "--out",
                            d + "/cmp.json",
                            "--table",
                            d + "/cmp.csv"});
  // By hand: rel = (P_H200 - P_H100) / P_H100, measured and estimated, for two benchmarks.
  const auto a = Predictions(d + "/h100_pred.csv");
  const auto b = Predictions(d + "/h200_pred.csv");
  std::map<std::string, std::vector<std::string>> table;
  {
    std::ifstream in(d + "/cmp.csv");
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      std::stringstream ss(line);
      std::vector<std::string> f;
      std::string cell;
      while (std::getline(ss, cell, ',')) f.push_back(cell);
      table[f[0]] = f;
    }
  }
  for (const std::string name : {"int_add", "dram_ld"}) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(table.count(name));
    const double meas = 100.0 * (b.at(name).first - a.at(name).first) / a.at(name).first;
    const double est = 100.0 * (b.at(name).second - a.at(name).second) / a.at(name).second;
    EXPECT_NEAR(std::stod(table[name][5]), meas, 1e-6);
    EXPECT_NEAR(std::stod(table[name][6]), est, 1e-6);
  }
  // dram_ld: the H200's HBM3e draws more than the H100's HBM3 at its higher bandwidth.
  EXPECT_GT(b.at("dram_ld").first, a.at("dram_ld").first);

  // The port: the same GH100 (every core factor 1), the memory bus 5120 -> 6144 bits (1.2), and
  // the fixed model moved to the H200's 3201 MHz memory clock.
  RunOk("wattcal-port",
        {"gpu", "--model", d + "/h100_model.json", "--base-gpu", Gpu("h100_sxm"), "--target-gpu",
         Gpu("h200_sxm"), "--out", d + "/ported.json", "--report", d + "/port.json"});
  const nlohmann::json report = nlohmann::json::parse(testing::ReadFile(d + "/port.json"));
  int checked = 0;
  for (const nlohmann::json& c : report.at("components_w_per_mhz")) {
    const std::string name = c.at("name");
    const double factor = c.at("factor");
    if (name == "DRAM READ" || name == "DRAM WRITE") {
      EXPECT_DOUBLE_EQ(factor, 6144.0 / 5120.0) << name;
    } else {
      EXPECT_DOUBLE_EQ(factor, 1.0) << name;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 14);  // 12 + ACTIVE SM + TENSOR INT (DMMA: not in the capture, left out)
  EXPECT_NE(testing::ReadFile(d + "/ported.json").find("3201"), std::string::npos);
  // The ported model predicts the whole H200 capture.
  RunOk("wattcal-validate",
        {"--model", d + "/ported.json", "--heldout", d + "/h200.csv", "--mode", "fixed",
         "--predictions", d + "/ported_pred.csv", "--metrics", d + "/ported_m.json"});
  const nlohmann::json m = nlohmann::json::parse(testing::ReadFile(d + "/ported_m.json"));
  EXPECT_LT(m.at("mape_pct").get<double>(), 15.0);
}

}  // namespace
}  // namespace wattcal
