// The AccelWattch paths of the stage executables, end to end as a user runs them:
// wattcal-calibrate --method accelwattch and wattcal-validate --mode accelwattch (published
// model, fitted model, leave-one-kernel-out). Contracts: manifests, byte-identical reruns,
// errors exit 2 naming FILE:LINE and the field, bad options exit 1 naming the flag, nothing
// written on failure, the options listed in --help.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <boost/filesystem.hpp>
#include <nlohmann/json.hpp>

#include "accelwattch/component_table.h"
#include "util/rng.h"
#include "test_support.h"

namespace wattcal {
namespace {

using testing::CommandResult;
using testing::Dataset;
using testing::ReadFile;
using testing::RunStage;
using testing::ScratchDir;
using testing::WriteFile;

// A tidy table of `kernels` rows from factors near 1 with 1% noise (seeded by the test name).
std::string SyntheticTidyTable(int kernels) {
  Rng rng(testing::SeedFromTestName());
  ComponentTable t;
  t.components = {"IBP", "INTP", "FPUP", "DPUP", "INT_MULP", "FP_MULP", "TEXP", "L2CP", "DRAMP"};
  const std::vector<double> truth = {1.1, 0.7, 0.9, 1.3, 1.0, 0.6, 1.5, 0.8, 1.2};
  for (int k = 0; k < kernels; ++k) {
    std::vector<double> p(t.components.size(), 0.0);
    p[0] = rng.Uniform(3, 10);
    for (int j = 0; j < 2; ++j) p[1 + rng.Index(8)] += rng.Uniform(5, 50);
    double total = 32.3 + 30 + 1;
    for (size_t i = 0; i < p.size(); ++i) total += truth[i] * p[i];
    t.kernels.push_back(fmt::format("kernel_{:02d}", k));
    t.dynamic_w.push_back(p);
    t.const_w.push_back(32.3);
    t.static_w.push_back(30);
    t.idle_w.push_back(1);
    t.measured_w.push_back(total * (1 + 0.01 * rng.Normal()));
  }
  return ComponentTableToTidyCsv(t);
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : boost::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

void ExpectExit(const CommandResult& r, int code, const std::vector<std::string>& mentions) {
  EXPECT_EQ(r.exit_code, code) << r.output;
  for (const std::string& m : mentions) {
    EXPECT_NE(r.output.find(m), std::string::npos) << "expected '" << m << "' in\n" << r.output;
  }
}

TEST(AccelWattchStage, HelpListsTheOptions) {
  const CommandResult c = RunStage("wattcal-calibrate", {"--help"});
  ExpectExit(c, 0,
             {"accelwattch", "--components", "--bounds", "--orderings", "--no-paper-orderings",
              "--prior", "--prior-weight", "--no-prior-start"});
  const CommandResult v = RunStage("wattcal-validate", {"--help"});
  ExpectExit(v, 0,
             {"accelwattch", "--components", "--cv", "loko", "--mape-ci", "normal-population-sd",
              "--prior-weight"});
}

// calibrate -> validate on a held-out table, and leave-one-kernel-out, with manifests and
// byte-identical reruns.
TEST(AccelWattchStage, CalibrateValidateAndRerunsAreByteIdentical) {
  const std::string dir = ScratchDir();
  const std::string train = WriteFile(dir + "/train.csv", SyntheticTidyTable(40));
  const std::string orderings = WriteFile(dir + "/orderings.txt", "# extra\nIBP <= L2CP\n");
  const std::string out = dir + "/out";
  const std::vector<std::string> calibrate = {
      "--method",    "accelwattch", "--components", train,      "--out",    out + "/model.json",
      "--orderings", orderings,     "--bounds",     "0.01:100", "--bounds", "DRAMP=0.5:2"};
  const std::vector<std::string> validate = {
      "--model",     out + "/model.json", "--heldout",       train,       "--mode",
      "accelwattch", "--predictions",     out + "/pred.csv", "--metrics", out + "/metrics.json"};
  const std::vector<std::string> loko = {"--components",   train,
                                         "--mode",         "accelwattch",
                                         "--cv",           "loko",
                                         "--prior-weight", "0.1",
                                         "--predictions",  out + "/loko.csv",
                                         "--metrics",      out + "/loko.json",
                                         "--mape-ci",      "normal-population-sd"};
  std::map<std::string, std::string> first;
  for (int run = 0; run < 2; ++run) {
    ExpectExit(RunStage("wattcal-calibrate", calibrate), 0, {"scaling factors", "wrote"});
    ExpectExit(RunStage("wattcal-validate", validate), 0, {"MAPE"});
    ExpectExit(RunStage("wattcal-validate", loko), 0, {"leave-one-kernel-out"});
    std::vector<std::string> files = ListDir(out);
    EXPECT_EQ(files, (std::vector<std::string>{"loko.csv", "loko.json", "metrics.json",
                                               "model.json", "pred.csv", "provenance"}));
    // One provenance file per stage run, rewritten byte for byte by the rerun.
    EXPECT_EQ(ListDir(out + "/provenance"),
              (std::vector<std::string>{"calibrate-model.json.json", "validate-loko.csv.json",
                                        "validate-pred.csv.json"}));
    files.pop_back();
    for (const std::string& f : ListDir(out + "/provenance")) files.push_back("provenance/" + f);
    for (const std::string& f : files) {
      if (run == 0) {
        first[f] = ReadFile(out + "/" + f);
      } else {
        EXPECT_EQ(ReadFile(out + "/" + f), first[f]) << f << " differs between reruns";
      }
    }
  }
  const nlohmann::json model = nlohmann::json::parse(first["model.json"]);
  EXPECT_EQ(model["format"], "wattcal-accelwattch-model");
  // The paper's constraints among these columns (5 of 11) and the file's IBP <= L2CP.
  EXPECT_EQ(model["orderings"].size(), 6u);
  EXPECT_EQ(model["dropped_orderings"].size(), 6u);
  EXPECT_EQ(model["orderings"][5]["source"], orderings + ":2");
  EXPECT_EQ(model["components"][8]["lower_bound"], 0.5);
  const nlohmann::json manifest =
      nlohmann::json::parse(first["provenance/calibrate-model.json.json"]);
  ASSERT_EQ(manifest["inputs"].size(), 2u);
  EXPECT_EQ(manifest["inputs"][1]["path"], orderings);
  EXPECT_EQ(manifest["options"]["accelwattch"]["lower_bound"], 0.01);
  const nlohmann::json metrics = nlohmann::json::parse(first["loko.json"]);
  EXPECT_EQ(metrics["mode"], "accelwattch");
  EXPECT_EQ(metrics["variant"], "loko");
  EXPECT_EQ(metrics["mape_ci_method"], "normal-population-sd");
  EXPECT_EQ(metrics["fold_x"].size(), 40u);
  EXPECT_EQ(metrics["max_constraint_violation"], 0.0);
  EXPECT_NE(first["loko.csv"].find(",fold\n"), std::string::npos);
}

// A prior model: the second start runs and both are recorded.
TEST(AccelWattchStage, PriorModelGivesTheSecondStart) {
  const std::string dir = ScratchDir();
  const std::string train = WriteFile(dir + "/train.csv", SyntheticTidyTable(30));
  ExpectExit(RunStage("wattcal-calibrate", {"--method", "accelwattch", "--components", train,
                                            "--out", dir + "/prior.json", "-q"}),
             0, {});
  ExpectExit(RunStage("wattcal-calibrate",
                      {"--method", "accelwattch", "--components", train, "--out", dir + "/m.json",
                       "--prior", dir + "/prior.json", "--prior-weight", "0.5"}),
             0, {"start 'ones'", "start 'prior'"});
  const nlohmann::json m = nlohmann::json::parse(ReadFile(dir + "/m.json"));
  EXPECT_EQ(m["fit"]["prior_source"], dir + "/prior.json");
  EXPECT_EQ(m["fit"]["starts"][1]["run"], true);
  EXPECT_EQ(m["fit"]["prior_weight"], 0.5);
}

TEST(AccelWattchStage, BadDataExits2NamingFileLineFieldAndWritesNothing) {
  const std::string dir = ScratchDir();
  const std::string out = dir + "/out";
  const std::string bad =
      WriteFile(dir + "/bad.csv",
                "kernel,measured_w,const_w,static_w,idle_w,INTP_w\na,100,30,20,1,5\n"
                "b,100,30,20,1,oops\n");
  ExpectExit(RunStage("wattcal-calibrate",
                      {"--method", "accelwattch", "--components", bad, "--out", out + "/m.json"}),
             2, {bad + ":3", "INTP_w"});
  ExpectExit(
      RunStage("wattcal-validate", {"--components", bad, "--mode", "accelwattch", "--predictions",
                                    out + "/p.csv", "--metrics", out + "/m.json"}),
      2, {bad + ":3", "INTP_w"});
  const std::string train = WriteFile(dir + "/train.csv", SyntheticTidyTable(20));
  const std::string orderings = WriteFile(dir + "/o.txt", "INTP <= FPUP\nINTP <= FPU\n");
  ExpectExit(RunStage("wattcal-calibrate", {"--method", "accelwattch", "--components", train,
                                            "--out", out + "/m.json", "--orderings", orderings}),
             2, {orderings + ":2", "ordering", "unknown component 'FPU'"});
  const std::string cycle = WriteFile(dir + "/c.txt", "DPUP <= INTP\n");
  ExpectExit(RunStage("wattcal-calibrate", {"--method", "accelwattch", "--components", train,
                                            "--out", out + "/m.json", "--orderings", cycle}),
             2, {cycle + ":1", "cycle"});
  const std::string model = WriteFile(
      dir + "/model.json", "{\"format\": \"wattcal-accelwattch-model\",\n\"version\": 7}\n");
  ExpectExit(
      RunStage("wattcal-validate", {"--model", model, "--heldout", train, "--mode", "accelwattch",
                                    "--predictions", out + "/p.csv", "--metrics", out + "/m.json"}),
      2, {model + ":2", "version"});
  EXPECT_FALSE(boost::filesystem::exists(out)) << "no output may be left behind";
}

TEST(AccelWattchStage, BadOptionsExit1NamingTheFlag) {
  const std::string dir = ScratchDir();
  const std::string out = dir + "/out";
  const std::string train = WriteFile(dir + "/train.csv", SyntheticTidyTable(20));
  const std::vector<std::string> base = {"--method", "accelwattch", "--components",
                                         train,      "--out",       out + "/m.json"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  ExpectExit(RunStage("wattcal-calibrate", with({"--bounds", "abc"})), 1, {"--bounds", "abc"});
  ExpectExit(RunStage("wattcal-calibrate", with({"--bounds", "5:1"})), 1, {"upper bound", "1"});
  ExpectExit(RunStage("wattcal-calibrate", with({"--bounds", "FOO=1:2"})), 1, {"bounds", "FOO"});
  ExpectExit(RunStage("wattcal-calibrate", with({"--prior-weight", "-1"})), 1, {"--prior-weight"});
  ExpectExit(
      RunStage("wattcal-calibrate", with({"--bounds", "INTP=2:3", "--bounds", "FPUP=0.1:1"})), 1,
      {"no feasible value"});
  ExpectExit(RunStage("wattcal-calibrate", {"--method", "accelwattch", "--out", out + "/m.json"}),
             1, {"--components"});
  ExpectExit(RunStage("wattcal-calibrate",
                      {"--train", train, "--out", out + "/m.json", "--bounds", "1:2"}),
             1, {"--method accelwattch"});
  ExpectExit(RunStage("wattcal-validate", {"--components", train, "--mode", "dvfs", "--predictions",
                                           out + "/p.csv", "--metrics", out + "/m.json"}),
             1, {"--mode accelwattch"});
  ExpectExit(RunStage("wattcal-validate",
                      {"--components", train, "--mode", "accelwattch", "--train", train,
                       "--predictions", out + "/p.csv", "--metrics", out + "/m.json"}),
             1, {"--mode accelwattch takes"});
  ExpectExit(RunStage("wattcal-validate",
                      {"--components", train, "--mode", "accelwattch", "--prior-weight", "1",
                       "--predictions", out + "/p.csv", "--metrics", out + "/m.json"}),
             1, {"--cv loko"});
  ExpectExit(RunStage("wattcal-validate",
                      {"--components", train, "--mode", "accelwattch", "--mape-ci", "z",
                       "--predictions", out + "/p.csv", "--metrics", out + "/m.json"}),
             1, {"--mape-ci"});
  EXPECT_FALSE(boost::filesystem::exists(out));
}

// The published Volta HW model through the executable: the sheet's 7.46% and the paper's
// interval (normal quantile, population sd).
TEST(AccelWattchStage, PublishedVoltaHwThroughTheExecutable) {
  WATTCAL_REQUIRE_DATASETS();
  const std::string dir = ScratchDir();
  const std::string table = Dataset("accelwattch/volta_qv100/per_kernel_hw.csv");
  ExpectExit(RunStage("wattcal-validate", {"--components", table, "--mode", "accelwattch",
                                           "--mape-ci", "normal-population-sd", "--predictions",
                                           dir + "/p.csv", "--metrics", dir + "/m.json"}),
             0, {"MAPE 7.46 +/- 2.18 %"});
  const nlohmann::json m = nlohmann::json::parse(ReadFile(dir + "/m.json"));
  EXPECT_EQ(m["variant"], "published");
  EXPECT_EQ(m["points"], 25);
  EXPECT_EQ(fmt::format("{:.2f}", m["mape_pct"].get<double>()), "7.46");
  EXPECT_EQ(fmt::format("{:.3f}", m["pearson_r"].get<double>()), "0.910");
}

}  // namespace
}  // namespace wattcal
