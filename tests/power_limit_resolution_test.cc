// The board's power limit has one notion of "unset" (std::optional) and one resolution rule,
// ResolvePowerLimitW (model/power_limit.h): --power-limit-w, else the measurements' file
// (corpus preamble, capture log), else the model's. These tests walk the rule's set/unset
// combinations, a flag overriding a file at the library and at the stage, and a limit that is
// unknown staying unknown through every file it is written to and read back from.
#include <gtest/gtest.h>

#include <array>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "clocks/vf_model.h"
#include "fit/calibrate.h"
#include "io/corpus_io.h"
#include "model/model_io.h"
#include "model/power_limit.h"
#include "test_support.h"

namespace wattcal {
namespace {

using testing::CommandResult;
using testing::ReadFile;
using testing::RunStage;
using testing::ScratchDir;
using testing::WriteFile;

// A one-pair corpus (1000 / 3000 MHz) of the noise-free truth P = 50 + 100 A + 60 B W, with
// `preamble_limit` (e.g. " power_limit_w=160", or "") in its tidy preamble.
std::string OnePairCsv(const std::string& preamble_limit) {
  std::string s = "# wattcal-tidy default_f_core_mhz=1000 default_f_mem_mhz=3000" + preamble_limit +
                  "\nbenchmark,power_w,f_core_mhz,f_mem_mhz,core:A,core:B\n";
  for (int i = 0; i < 8; ++i) {
    const double a = 0.1 * i, b = 0.05 * ((3 * i) % 8);
    s += fmt::format("k{},{},1000,3000,{},{}\n", i, 50.0 + 100.0 * a + 60.0 * b, a, b);
  }
  return s;
}

CalibrationOptions FixedL2() {
  CalibrationOptions o;
  o.method = FitMethod::kFixed;
  o.loss = FitLoss::kL2;
  return o;
}

TEST(ResolvePowerLimit, TheFirstSetOfFlagDataAndModelWins) {
  const std::optional<double> unset;
  const std::array<double, 3> given_w = {200.0, 300.0, 250.0};  // flag, data, model
  for (int mask = 0; mask < 8; ++mask) {
    std::array<std::optional<double>, 3> in;
    std::optional<double> expected;
    for (int k = 2; k >= 0; --k) {
      if (mask & (1 << k)) {
        in[k] = given_w[k];
        expected = given_w[k];  // the lowest k set is the last written: the first in the rule
      }
    }
    EXPECT_EQ(ResolvePowerLimitW(in[0], in[1], in[2]), expected) << "mask " << mask;
  }
  EXPECT_EQ(ResolvePowerLimitW(unset), unset);
  EXPECT_EQ(ResolvePowerLimitW(180.0), 180.0);
}

TEST(ResolvePowerLimit, CalibrateRecordsTheFlagOverTheCorpusFile) {
  const std::string dir = ScratchDir();
  const Corpus limited = ReadCorpus(WriteFile(dir + "/l.csv", OnePairCsv(" power_limit_w=160")));
  const Corpus unlimited = ReadCorpus(WriteFile(dir + "/u.csv", OnePairCsv("")));
  CalibrationOptions o = FixedL2();
  EXPECT_EQ(Calibrate(limited, o).power_limit_w, 160.0);
  EXPECT_FALSE(Calibrate(unlimited, o).power_limit_w.has_value());
  o.power_limit_w = 250.0;  // --power-limit-w 250
  EXPECT_EQ(Calibrate(limited, o).power_limit_w, 250.0);
  EXPECT_EQ(Calibrate(unlimited, o).power_limit_w, 250.0);
  // A limit is given or unset: 0 W is no limit a board has.
  std::string error;
  o.power_limit_w = 0.0;
  EXPECT_FALSE(o.Check(&error));
  EXPECT_NE(error.find("power_limit_w = 0 must lie in (0, 10000] W"), std::string::npos) << error;
  o.power_limit_w = 20000.0;
  EXPECT_FALSE(o.Check(&error));
}

TEST(ResolvePowerLimit, AnUnknownLimitStaysUnknownThroughWriteAndRead) {
  const std::string dir = ScratchDir();
  // Corpus: no preamble key, written without one, read back unset.
  const Corpus c = ReadCorpus(WriteFile(dir + "/u.csv", OnePairCsv("")));
  ASSERT_FALSE(c.power_limit_w.has_value());
  const std::string tidy = CorpusToTidyCsv(c);
  EXPECT_EQ(tidy.find("power_limit_w"), std::string::npos) << tidy;
  const Corpus tidy_back = ReadCorpus(WriteFile(dir + "/back.csv", tidy));
  EXPECT_FALSE(tidy_back.power_limit_w.has_value());
  EXPECT_EQ(CorpusToTidyCsv(tidy_back), tidy);

  // Model: null in the file, unset when read, the same bytes when written again.
  const PowerModel m = Calibrate(c, FixedL2());
  const std::string json = ModelToJson(m);
  EXPECT_TRUE(nlohmann::json::parse(json).at("power_limit_w").is_null()) << json;
  const PowerModel back = ReadModel(WriteFile(dir + "/m.json", json));
  EXPECT_FALSE(back.power_limit_w.has_value());
  EXPECT_EQ(ModelToJson(back), json);

  // V-F model (wattcal-clocks): no key when unset, unset when read; a set one comes back.
  VfModel vf;
  vf.reference_mhz = 1000.0;
  vf.static_w = 20.0;
  vf.constant_w = 10.0;
  vf.clocks_mhz = {500.0, 1000.0};
  vf.v_rel = {0.8, 1.0};
  nlohmann::json vf_json = vf;
  EXPECT_FALSE(vf_json.contains("power_limit_w")) << vf_json.dump();
  EXPECT_FALSE(VfModelFromJson(vf_json, "vf.json").power_limit_w.has_value());
  vf.power_limit_w = 250.0;
  vf_json = vf;
  EXPECT_EQ(VfModelFromJson(vf_json, "vf.json").power_limit_w, 250.0);
}

// wattcal-predict: the model says 160 W (its training corpus), the activity file 170 W, the flag
// 180 W; the "big" row (200 W uncapped) is capped at whichever the rule picks.
TEST(ResolvePowerLimit, PredictStageFlagOverActivityFileOverModel) {
  const std::string dir = ScratchDir();
  const std::string train = WriteFile(dir + "/t.csv", OnePairCsv(" power_limit_w=160"));
  ASSERT_EQ(RunStage("wattcal-calibrate", {"--train", train, "--method", "fixed", "--loss", "l2",
                                           "--out", dir + "/m.json"})
                .exit_code,
            0);
  const std::string rows = "benchmark,f_core_mhz,f_mem_mhz,core:A,core:B\nbig,1000,3000,0.9,1.0\n";
  const std::string plain = WriteFile(dir + "/a.csv", rows);
  const std::string stated = WriteFile(dir + "/s.csv", "# wattcal-tidy power_limit_w=170\n" + rows);
  auto predicted = [&](const std::string& activity, std::vector<std::string> extra) {
    std::vector<std::string> args = {"--model", dir + "/m.json", "--activity", activity,
                                     "--mode",  "fixed",         "--out",      dir + "/p.csv"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CommandResult r = RunStage("wattcal-predict", args);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const std::string p = ReadFile(dir + "/p.csv");
    const size_t at = p.find("\nbig,");
    return at == std::string::npos ? p : p.substr(at + 1, p.find('\n', at + 1) - at - 1);
  };
  EXPECT_EQ(predicted(plain, {}).rfind("big,1000,3000,160.000000,", 0), 0u);
  EXPECT_EQ(predicted(stated, {}).rfind("big,1000,3000,170.000000,", 0), 0u);
  EXPECT_EQ(predicted(stated, {"--power-limit-w", "180"}).rfind("big,1000,3000,180.000000,", 0),
            0u);
  EXPECT_EQ(predicted(plain, {"--power-limit-w", "180"}).rfind("big,1000,3000,180.000000,", 0), 0u);
}

}  // namespace
}  // namespace wattcal
