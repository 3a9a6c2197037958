// Run-time models from counters (perf_models.h) and the counters / times files:
//
//   CrispContract*      the CRISP prediction exactly as the contract states it, on hand values
//   PerfBaselines*      CRISP Eq. 2 for STALL, LEAD, CRIT, MISS; proportional scaling
//   PerfPredictTimes*   which models run, ordering, errors for a model without its counter
//   PerfCountersIo*     the counters / times / actual-times CSVs: round trip, unit conversion
//                       and errors naming FILE:LINE and the field
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "perf/crisp_counters.h"
#include "perf/perf_models.h"
#include "util/rng.h"
#include "stage_options.h"
#include "test_support.h"
#include "util/errors.h"

namespace wattcal {
namespace {

using ::wattcal::testing::ScratchDir;
using ::wattcal::testing::SeedFromTestName;
using ::wattcal::testing::WriteFile;

CrispCounters Counters(double C, double L, double Sl, double Ss, double base_mhz = 700) {
  CrispCounters c;
  c.kernel = "k";
  c.base_mhz = base_mhz;
  c.total_cycles = C;
  c.lcp_cycles = L;
  c.load_stall_cycles = Sl;
  c.store_stall_cycles = Ss;
  return c;
}

// ---------------------------------------------------------------------------------------

TEST(CrispContract, LowerFrequencyHandValues) {
  // C = 1000, L = 600 (400 load stalls, 200 overlapped), S_s = 100, pure computation 300.
  const CrispCounters c = Counters(1000, 600, 400, 100);
  // s = 2: LCP max(600, 400) = 600 (the load latency still hides the overlapped computation);
  // CSP max(400, 600) = 600 (the stretched computation swallows the store stalls).
  EXPECT_DOUBLE_EQ(PredictCycles(PerfModelKind::kCrisp, c, 350), 1200);
  // s = 4: max(600, 800) + max(400, 1200) = 2000: the second slope (Fig. 2).
  EXPECT_DOUBLE_EQ(PredictCycles(PerfModelKind::kCrisp, c, 175), 2000);
  // s = 1.2: max(600, 240) + max(400, 360) = 1000: nothing changes yet.
  EXPECT_DOUBLE_EQ(PredictCycles(PerfModelKind::kCrisp, c, 700 / 1.2), 1000);
  // Seconds = cycles / f_base.
  EXPECT_DOUBLE_EQ(PredictTimeS(PerfModelKind::kCrisp, c, 175), 2000 / 700e6);
}

TEST(CrispContract, HigherFrequencyVariant) {
  // CRISP §5.2: T = L + S_s + s (C - L - S_s); s = 0.5: 600 + 100 + 150.
  const CrispCounters c = Counters(1000, 600, 400, 100);
  EXPECT_DOUBLE_EQ(PredictCycles(PerfModelKind::kCrisp, c, 1400), 850);
  EXPECT_DOUBLE_EQ(CrispCycles(1000, 600, 400, 100, 0.5), 850);
}

TEST(CrispContract, ContinuousAndExactAtTheBase) {
  // Random counters (seeded by the test name): both branches meet C at s = 1, each is
  // continuous there, and the prediction never decreases as the frequency drops.
  Rng rng(SeedFromTestName());
  for (int trial = 0; trial < 200; ++trial) {
    const double C = rng.Uniform(1e3, 1e6);
    const double L = rng.Uniform(0, C);
    const double Sl = rng.Uniform(0, L);
    const double Ss = rng.Uniform(0, C - L);
    const CrispCounters c = Counters(C, L, Sl, Ss, 975);
    EXPECT_DOUBLE_EQ(PredictCycles(PerfModelKind::kCrisp, c, 975), C);
    EXPECT_NEAR(CrispCycles(C, L, Sl, Ss, 1.0 - 1e-12), C, 1e-6 * C);
    EXPECT_NEAR(CrispCycles(C, L, Sl, Ss, 1.0 + 1e-12), C, 1e-6 * C);
    double previous = 0.0;
    for (double f : {1500.0, 1200.0, 975.0, 800.0, 500.0, 200.0, 100.0}) {
      const double t = PredictCycles(PerfModelKind::kCrisp, c, f);
      EXPECT_GE(t, previous - 1e-9 * C) << "f = " << f;
      previous = t;
    }
    // Never faster than the pure computation and the overlapped computation allow.
    EXPECT_GE(PredictCycles(PerfModelKind::kCrisp, c, 97.5), 10.0 * (C - Sl - Ss) - 1e-6 * C);
  }
}

TEST(CrispContract, CrispLUsesLoadOutstandingCycles) {
  CrispCounters c = Counters(1000, 600, 400, 100);
  c.load_outstanding_cycles = 700;  // + 100 computation cycles under non-critical loads
  // s = 4: max(700, 4 x 300) + max(300, 4 x 200) = 2000.
  EXPECT_DOUBLE_EQ(PredictCycles(PerfModelKind::kCrispL, c, 175), 2000);
  // s = 2: max(700, 600) + max(300, 400) = 1100 (CRISP says 1200: more computation hidden).
  EXPECT_DOUBLE_EQ(PredictCycles(PerfModelKind::kCrispL, c, 350), 1100);
}

TEST(PerfBaselines, LinearModelsAndProportional) {
  CrispCounters c = Counters(1000, 600, 400, 100);
  c.stall_cycles = 450;
  c.lead_cycles = 500;
  c.crit_cycles = 550;
  c.miss_cycles = 1400;  // MISS's estimate above the run time is capped at it
  EXPECT_DOUBLE_EQ(PredictCycles(PerfModelKind::kStall, c, 350), 450 + 2 * 550);
  EXPECT_DOUBLE_EQ(PredictCycles(PerfModelKind::kLead, c, 350), 500 + 2 * 500);
  EXPECT_DOUBLE_EQ(PredictCycles(PerfModelKind::kCrit, c, 1400), 550 + 0.5 * 450);
  EXPECT_DOUBLE_EQ(PredictCycles(PerfModelKind::kMiss, c, 350), 1000);
  EXPECT_DOUBLE_EQ(PredictCycles(PerfModelKind::kProportional, c, 140), 5000);
  EXPECT_THROW(PredictCycles(PerfModelKind::kLead, Counters(1, 0, 0, 0), 100),
               std::invalid_argument);
}

// wattcal-perf --models takes exactly the names PerfModelName gives.
TEST(PerfBaselines, NamesRoundTrip) {
  for (PerfModelKind m : AllPerfModels()) {
    PerfStageOptions parsed;
    CLI::App app;
    AddPerfOptions(&app, &parsed);
    testing::ParseCommandLine(&app, {"--models", PerfModelName(m)});
    EXPECT_EQ(parsed.models, std::vector<PerfModelKind>{m}) << PerfModelName(m);
  }
  PerfStageOptions unused;
  CLI::App app;
  AddPerfOptions(&app, &unused);
  EXPECT_THROW(testing::ParseCommandLine(&app, {"--models", "CRISP"}), CLI::ParseError);
  EXPECT_TRUE(unused.models.empty());
}

// ---------------------------------------------------------------------------------------

TEST(PerfPredictTimes, DefaultModelsFollowTheColumns) {
  CrispCounters a = Counters(1000, 600, 400, 100), b = a;
  b.kernel = "b";
  a.crit_cycles = 500;
  b.crit_cycles = 520;
  TimePredictionOptions o;
  o.targets_mhz = {350, 700};
  std::vector<std::string> skipped;
  const std::vector<TimePrediction> rows = PredictTimes({a, b}, o, "c.csv", &skipped);
  ASSERT_EQ(rows.size(), 2u * 3u * 2u);  // kernels x {crisp, proportional, crit} x targets
  EXPECT_EQ(rows[0].kernel, "k");
  EXPECT_EQ(rows[0].model, "crisp");
  EXPECT_EQ(rows[0].target_mhz, 350);
  EXPECT_EQ(rows[2].model, "proportional");
  EXPECT_EQ(rows[4].model, "crit");
  EXPECT_EQ(rows[6].kernel, "b");
  EXPECT_EQ(skipped, (std::vector<std::string>{"crisp_l", "stall", "lead", "miss"}));
}

TEST(PerfPredictTimes, ExplicitModelWithoutItsCounterNamesTheLine) {
  CrispCounters a = Counters(1000, 600, 400, 100);
  a.line = 7;
  TimePredictionOptions o;
  o.models = {PerfModelKind::kCrisp, PerfModelKind::kLead};
  try {
    PredictTimes({a}, o, "counters.csv");
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "counters.csv");
    EXPECT_EQ(e.line(), 7);
    EXPECT_EQ(e.field(), "lead_cycles");
  }
  o.targets_mhz = {700, 350};
  EXPECT_THROW(PredictTimes({a}, o, "counters.csv"), OptionError);
}

TEST(PerfOptionsCheck, TimePredictionDefaultsPassAndRulesNameTheField) {
  std::string error;
  EXPECT_TRUE(TimePredictionOptions().Check(&error)) << error;
  TimePredictionOptions o;
  o.targets_mhz = {100, -5};
  EXPECT_FALSE(o.Check(&error));
  EXPECT_NE(error.find("targets_mhz[1] = -5"), std::string::npos) << error;
  o.targets_mhz = {};
  EXPECT_FALSE(o.Check(&error));
  EXPECT_NE(error.find("targets_mhz"), std::string::npos) << error;
  o = {};
  o.models = {PerfModelKind::kCrit, PerfModelKind::kCrit};
  EXPECT_FALSE(o.Check(&error));
  EXPECT_NE(error.find("'crit' twice"), std::string::npos) << error;
}

// ---------------------------------------------------------------------------------------

template <typename Reader>
void ExpectInputError(Reader read, const std::string& content, int64_t line,
                      const std::string& field, const std::string& mention) {
  const std::string path = ScratchDir() + "/bad.csv";
  WriteFile(path, content);
  try {
    read(path);
    ADD_FAILURE() << "expected an InputError for:\n" << content;
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_EQ(e.field(), field) << e.what();
    EXPECT_NE(std::string(e.what()).find(mention), std::string::npos) << e.what();
  }
}

const char kCountersHeader[] =
    "kernel,base_mhz,total_cycles,lcp_cycles,load_stall_cycles,store_stall_cycles";

TEST(PerfCountersIo, RoundTripAndOptionalColumns) {
  CrispCounters a = Counters(1000, 600.5, 400, 100), b = Counters(2000, 100, 0, 1900);
  a.kernel = "needs \"quotes\", really";
  for (CrispCounters* c : {&a, &b}) c->crit_cycles = 90;
  a.load_outstanding_cycles = 700;
  b.load_outstanding_cycles = 100;
  const std::string path = ScratchDir() + "/c.csv";
  WriteFile(path, CrispCountersToCsv({a, b}));
  const std::vector<CrispCounters> read = ReadCrispCounters(path);
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].kernel, a.kernel);
  EXPECT_EQ(read[0].lcp_cycles, 600.5);
  EXPECT_EQ(read[1].store_stall_cycles, 1900);
  EXPECT_EQ(read[1].crit_cycles, 90);
  EXPECT_TRUE(std::isnan(read[1].lead_cycles));
  EXPECT_EQ(read[1].line, 3);
  EXPECT_EQ(CrispCountersToCsv(read), CrispCountersToCsv({a, b}));
}

TEST(PerfCountersIo, KilohertzBaseIsConverted) {
  const std::string path = ScratchDir() + "/c.csv";
  WriteFile(path,
            "kernel,base_khz,total_cycles,lcp_cycles,load_stall_cycles,store_stall_cycles\n"
            "k,700000,10,5,2,1\n");
  EXPECT_DOUBLE_EQ(ReadCrispCounters(path)[0].base_mhz, 700);
}

TEST(PerfCountersIo, ErrorsNameFileLineAndField) {
  const std::string h = std::string(kCountersHeader) + "\n";
  ExpectInputError(ReadCrispCounters, h + "k,700,100,120,0,0\n", 2, "lcp_cycles",
                   "exceeds total_cycles");
  ExpectInputError(ReadCrispCounters, h + "k,700,100,50,60,0\n", 2, "load_stall_cycles",
                   "exceeds lcp_cycles");
  ExpectInputError(ReadCrispCounters, h + "k,700,100,50,10,60\n", 2, "store_stall_cycles",
                   "total_cycles - lcp_cycles");
  ExpectInputError(ReadCrispCounters, h + "k,700,100,50,10,x\n", 2, "store_stall_cycles",
                   "expected a finite number");
  ExpectInputError(ReadCrispCounters, h + "k,0,100,50,10,0\n", 2, "base_mhz", "frequency > 0");
  ExpectInputError(ReadCrispCounters, h + "k,700,100,50,10,0\nk,700,100,50,10,0\n", 3, "kernel",
                   "appears twice");
  ExpectInputError(ReadCrispCounters, h + "k,700,100,50,10\n", 2, "", "expected 6 fields");
  ExpectInputError(ReadCrispCounters, std::string(kCountersHeader) + ",crit_cycle\n", 1,
                   "crit_cycle", "unknown column");
  ExpectInputError(ReadCrispCounters,
                   std::string(kCountersHeader) + ",crit_cycles\nk,700,100,50,10,0,101\n", 2,
                   "crit_cycles", "exceeds total_cycles");
  ExpectInputError(ReadCrispCounters, "kernel,base_mhz,total_cycles\n", 1, "lcp_cycles",
                   "missing required column");
  ExpectInputError(ReadCrispCounters, h, 1, "", "no kernel rows");
}

TEST(PerfCountersIo, TimesAndActualTimes) {
  const std::string dir = ScratchDir();
  const std::vector<TimePrediction> rows = {{"k", "crisp", 350, 2.5e-6, 0},
                                            {"k", "my model", 700, 1.25e-6, 0}};
  WriteFile(dir + "/t.csv", TimesToCsv(rows));
  const std::vector<TimePrediction> read = ReadTimes(dir + "/t.csv");
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[1].model, "my model");
  EXPECT_DOUBLE_EQ(read[1].predicted_time_s, 1.25e-6);
  ExpectInputError(ReadTimes,
                   "kernel,model,target_mhz,predicted_time_s\nk,crisp,350,1\nk,crisp,350,2\n", 3,
                   "target_mhz", "appears twice");
  ExpectInputError(ReadTimes, "kernel,model,target_mhz,predicted_time_s\nk,crisp,350,0\n", 2,
                   "predicted_time_s", "time > 0");
  ExpectInputError(ReadActualTimes, "kernel,target_mhz,actual_time_s\nk,700,-1\n", 2,
                   "actual_time_s", "time > 0");
  WriteFile(dir + "/a.csv", ActualTimesToCsv({{"k", 700, 1e-3, 0}}));
  EXPECT_DOUBLE_EQ(ReadActualTimes(dir + "/a.csv")[0].actual_time_s, 1e-3);
}

}  // namespace
}  // namespace wattcal
