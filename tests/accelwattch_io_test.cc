// AccelWattch scaling-factor inputs and files: the per-kernel component tables (AccelWattch's
// sheets and the tidy form), the orderings file and its graph rules, the forest encoding of the
// orderings, and the versioned model file. Every bad input names FILE:LINE and the field.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "accelwattch/component_table.h"
#include "accelwattch/orderings.h"
#include "accelwattch/scaling_fit.h"
#include "accelwattch/scaling_model.h"
#include "util/rng.h"
#include "test_support.h"
#include "util/errors.h"

namespace wattcal {
namespace {

using testing::ScratchDir;
using testing::WriteFile;

// Runs `read` and expects an InputError whose message names every one of `mentions`.
template <typename Read>
void ExpectInputError(Read read, const std::vector<std::string>& mentions) {
  try {
    read();
    ADD_FAILURE() << "expected an InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    for (const std::string& m : mentions)
      EXPECT_NE(what.find(m), std::string::npos) << m << " in: " << what;
  }
}

const char* kAccelWattchHeader =
    "kernel_id,benchmark,suite,n_unique_kernels,runtime_covered,kernel_label,IBP_W,INTP_W,FPUP_W,"
    "IDLE_COREP_W,CONSTP_W,STATICP_W,sim_total_W,hw_total_W,rel_error,abs_rel_error,error_W,"
    "abs_error_W\n";

std::string AccelWattchRow(const std::string& kernel, double ibp, double measured) {
  const double sim = ibp + 2.0 + 3.0 + 1.0 + 32.3252 + 30.0;
  return fmt::format("{},b,s,1,1.0,{}_label,{},2,3,1,32.3252,30,{},{},0,0,0,0\n", kernel, kernel,
                     ibp, sim, measured);
}

TEST(AccelWattchTable, ReadsTheAccelWattchForm) {
  const std::string dir = ScratchDir();
  const std::string path =
      WriteFile(dir + "/t.csv", std::string(kAccelWattchHeader) + AccelWattchRow("k1", 10.0, 80.0) +
                                    AccelWattchRow("k2", 4.5, 75.5));
  const ComponentTable t = ReadComponentTable(path);
  EXPECT_EQ(t.format, "accelwattch");
  EXPECT_EQ(t.components, (std::vector<std::string>{"IBP", "INTP", "FPUP"}));
  EXPECT_EQ(t.kernels, (std::vector<std::string>{"k1", "k2"}));
  EXPECT_EQ(t.lines, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t.dynamic_w[1], (std::vector<double>{4.5, 2.0, 3.0}));
  EXPECT_EQ(t.FixedW(0), 1.0 + 32.3252 + 30.0);
  EXPECT_EQ(t.measured_w[1], 75.5);
  EXPECT_EQ(t.published_total_mismatches, 0);
}

TEST(AccelWattchTable, ReadsTheTidyFormWithMilliwatts) {
  const std::string dir = ScratchDir();
  const std::string path = WriteFile(dir + "/t.csv",
                                     "kernel,measured_w,const_w,static_w,idle_mw,INTP_w,L2CP_mW\n"
                                     "a,100,30,20,500,10,2500\n\"b,2\",90,30,20,0,5,0\n");
  const ComponentTable t = ReadComponentTable(path);
  EXPECT_EQ(t.format, "tidy");
  EXPECT_EQ(t.components, (std::vector<std::string>{"INTP", "L2CP"}));
  EXPECT_EQ(t.idle_w[0], 0.5);
  EXPECT_EQ(t.dynamic_w[0][1], 2.5);
  EXPECT_EQ(t.kernels[1], "b,2");
  EXPECT_TRUE(t.published_total_w.empty());
}

TEST(AccelWattchTable, TidyRoundTripIsExact) {
  const std::string dir = ScratchDir();
  Rng rng(testing::SeedFromTestName());
  ComponentTable t;
  t.components = {"IBP", "INTP", "FP_MULP"};
  for (int k = 0; k < 5; ++k) {
    t.kernels.push_back(fmt::format("k{}", k));
    t.dynamic_w.push_back({rng.Uniform(0, 20), rng.Uniform(0, 20), rng.Uniform(0, 20)});
    t.const_w.push_back(32.3252);
    t.static_w.push_back(rng.Uniform(20, 40));
    t.idle_w.push_back(rng.Uniform(0, 2));
    t.measured_w.push_back(rng.Uniform(80, 200));
  }
  const std::string path = WriteFile(dir + "/t.csv", ComponentTableToTidyCsv(t));
  const ComponentTable back = ReadComponentTable(path);
  EXPECT_EQ(back.components, t.components);
  EXPECT_EQ(back.kernels, t.kernels);
  EXPECT_EQ(back.dynamic_w, t.dynamic_w);
  EXPECT_EQ(back.static_w, t.static_w);
  EXPECT_EQ(back.idle_w, t.idle_w);
  EXPECT_EQ(back.measured_w, t.measured_w);
  EXPECT_EQ(ComponentTableToTidyCsv(back), ComponentTableToTidyCsv(t));
}

TEST(AccelWattchTable, ErrorsNameFileLineAndField) {
  const std::string dir = ScratchDir();
  const std::string tidy = "kernel,measured_w,const_w,static_w,idle_w,INTP_w\n";
  const auto write = [&](const std::string& name, const std::string& text) {
    return WriteFile(dir + "/" + name, text);
  };
  std::string p = write("empty.csv", "");
  ExpectInputError([&] { ReadComponentTable(p); }, {p + ":1", "empty"});
  p = write("header.csv", tidy);
  ExpectInputError([&] { ReadComponentTable(p); }, {p + ":1", "no kernel rows"});
  p = write("unknown.csv", "name,power\nx,1\n");
  ExpectInputError([&] { ReadComponentTable(p); }, {p + ":1", "unrecognised"});
  p = write("nounit.csv", "kernel,measured_w,const_w,static_w,idle_w,INTP\n");
  ExpectInputError([&] { ReadComponentTable(p); }, {p + ":1", "INTP", "unit"});
  p = write("missing.csv", "kernel,measured_w,const_w,idle_w,INTP_w\n");
  ExpectInputError([&] { ReadComponentTable(p); }, {p + ":1", "static_w"});
  p = write("width.csv", tidy + "a,100,30,20,1,5\nb,100,30,20,1\n");
  ExpectInputError([&] { ReadComponentTable(p); }, {p + ":3", "expected 6 fields"});
  p = write("number.csv", tidy + "a,100,30,20,1,5\nb,100,30,x,1,5\n");
  ExpectInputError([&] { ReadComponentTable(p); }, {p + ":3", "static_w"});
  p = write("negative.csv", tidy + "a,100,30,20,1,-5\n");
  ExpectInputError([&] { ReadComponentTable(p); }, {p + ":2", "INTP_w", ">= 0"});
  p = write("measured.csv", tidy + "a,0,30,20,1,5\n");
  ExpectInputError([&] { ReadComponentTable(p); }, {p + ":2", "measured_w", "> 0"});
  p = write("twice.csv", tidy + "a,100,30,20,1,5\na,100,30,20,1,5\n");
  ExpectInputError([&] { ReadComponentTable(p); }, {p + ":3", "kernel 'a'", "line 2"});
  p = write("column.csv", "kernel,measured_w,const_w,static_w,idle_w,INTP_w,intp_W\n");
  ExpectInputError([&] { ReadComponentTable(p); }, {p + ":1", "intp_W", "twice"});
  p = write("aw.csv", "kernel_id,IBP_W,hw_total_W,CONSTP_W,IDLE_COREP_W\n");
  ExpectInputError([&] { ReadComponentTable(p); }, {p + ":1", "STATICP_W"});
  p = write("awmeta.csv", "kernel_id,IBP_W,hw_total_W,CONSTP_W,IDLE_COREP_W,STATICP_W,notes\n");
  ExpectInputError([&] { ReadComponentTable(p); }, {p + ":1", "notes", "metadata"});
}

// A sheet whose modelled total is not the sum of its columns (the Turing sheets) is read, and
// the disagreement counted (and warned about), not hidden.
TEST(AccelWattchTable, CountsPublishedTotalsThatAreNotTheColumnSum) {
  const std::string dir = ScratchDir();
  // k2's sim_total_W is 50 W where its columns sum to 4.5 + 2 + 3 + 1 + 32.3252 + 30 = 72.8252.
  const std::string bad = "k2,b,s,1,1.0,k2_label,4.5,2,3,1,32.3252,30,50,75.5,0,0,0,0\n";
  const std::string path = WriteFile(
      dir + "/t.csv", std::string(kAccelWattchHeader) + AccelWattchRow("k1", 10.0, 80.0) + bad);
  const ComponentTable t = ReadComponentTable(path);
  EXPECT_EQ(t.published_total_mismatches, 1);
  EXPECT_NEAR(t.published_total_max_abs_diff_w, 22.8252, 1e-9);
}

// ---------------------------------------------------------------------------------------
// Orderings

std::vector<std::string> VoltaHwComponents() {
  return {"IBP",      "DCP",     "CCP",      "SHRDP",  "INTP",    "FPUP",   "DPUP",
          "INT_MULP", "FP_MULP", "FP_SQRTP", "FP_LGP", "FP_SINP", "FP_EXP", "DP_MULP",
          "TENSORP",  "TEXP",    "SCHEDP",   "L2CP",   "DRAMP",   "PIPEP"};
}

OrderingForest Forest(const std::vector<std::string>& components, const std::vector<Ordering>& o,
                      double lower = 0.001, double upper = 1000.0) {
  return OrderingForest(components, o, std::vector<double>(components.size(), lower),
                        std::vector<double>(components.size(), upper));
}

Ordering Make(const std::string& a, const std::string& b, const std::string& file = "u.txt",
              int64_t line = 1) {
  Ordering o;
  o.lower = a;
  o.upper = b;
  o.file = file;
  o.line = line;
  return o;
}

TEST(AccelWattchOrderings, TheSpecFileIsThePapersConstraints) {
  const std::vector<Ordering> file = ReadOrderingsFile(
      std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/accelwattch_orderings.txt");
  const std::vector<Ordering> paper = PaperOrderings();
  ASSERT_EQ(file.size(), paper.size());
  for (size_t i = 0; i < paper.size(); ++i) EXPECT_EQ(file[i].Text(), paper[i].Text());
  EXPECT_EQ(paper[0].Source(), "AccelWattch Eq. 14");
}

TEST(AccelWattchOrderings, FileSyntaxErrorsNameTheLine) {
  const std::string dir = ScratchDir();
  const std::string p =
      WriteFile(dir + "/o.txt", "# comment\n\nINTP <= FPUP <= DPUP  # chain\nINTP < FPUP\n");
  ExpectInputError([&] { ReadOrderingsFile(p); }, {p + ":4", "ordering", "A <= B"});
  const std::string q = WriteFile(dir + "/q.txt", "INTP <= \n");
  ExpectInputError([&] { ReadOrderingsFile(q); }, {q + ":1", "not a component name"});
  const std::string ok = WriteFile(dir + "/ok.txt", "INTP <= FPUP <= DPUP # chain\n");
  const std::vector<Ordering> o = ReadOrderingsFile(ok);
  ASSERT_EQ(o.size(), 2u);
  EXPECT_EQ(o[1].Text(), "FPUP <= DPUP");
  EXPECT_EQ(o[1].Source(), ok + ":1");
}

// The HW sheet has every component the paper orders: all 11 constraints are used, and they form
// one tree (INT_MULP above both INTP and FP_MULP).
TEST(AccelWattchOrderings, PaperConstraintsOnTheVoltaHwComponents) {
  const OrderingForest f = Forest(VoltaHwComponents(), PaperOrderings());
  EXPECT_EQ(f.used().size(), 11u);
  EXPECT_TRUE(f.dropped().empty());
}

// A table without some components: constraints naming them are dropped, with the reason.
TEST(AccelWattchOrderings, DropsConstraintsOnAbsentColumns) {
  const OrderingForest f = Forest({"INTP", "FPUP", "FP_MULP", "TEXP", "L2CP"}, PaperOrderings());
  std::vector<std::string> used;
  for (const Ordering& o : f.used()) used.push_back(o.Text());
  EXPECT_EQ(used, (std::vector<std::string>{"INTP <= FPUP", "FP_MULP <= TEXP"}));
  ASSERT_EQ(f.dropped().size(), 9u);
  EXPECT_NE(f.dropped()[0].reason.find("DPUP_W"), std::string::npos) << f.dropped()[0].reason;
}

TEST(AccelWattchOrderings, DropsDuplicatesTrivialAndImpliedConstraints) {
  std::vector<Ordering> o = PaperOrderings();
  o.push_back(Make("INTP", "DPUP", "u.txt", 3));     // implied by INTP <= FPUP <= DPUP
  o.push_back(Make("FP_MULP", "TEXP", "u.txt", 4));  // duplicate
  o.push_back(Make("IBP", "IBP", "u.txt", 5));       // trivial
  const OrderingForest f = Forest(VoltaHwComponents(), o);
  EXPECT_EQ(f.used().size(), 11u);
  ASSERT_EQ(f.dropped().size(), 3u);
  std::string reasons;
  for (const DroppedOrdering& d : f.dropped())
    reasons += d.ordering.Text() + ": " + d.reason + "\n";
  EXPECT_NE(reasons.find("INTP <= DPUP: implied by INTP <= FPUP <= DPUP"), std::string::npos)
      << reasons;
  EXPECT_NE(reasons.find("duplicate"), std::string::npos) << reasons;
  EXPECT_NE(reasons.find("trivial"), std::string::npos) << reasons;
}

TEST(AccelWattchOrderings, RejectsCyclesNamingTheClosingConstraint) {
  // Directed: FPUP <= INTP closes INTP <= FPUP.
  std::vector<Ordering> o = PaperOrderings();
  o.push_back(Make("DPUP", "INTP", "u.txt", 7));
  ExpectInputError([&] { Forest(VoltaHwComponents(), o); }, {"u.txt:7", "DPUP <= INTP", "cycle"});
  // Undirected: a diamond IBP <= DCP, IBP <= CCP, DCP <= L2CP, CCP <= L2CP.
  const std::vector<Ordering> diamond = {
      Make("IBP", "DCP", "d.txt", 1), Make("IBP", "CCP", "d.txt", 2),
      Make("DCP", "L2CP", "d.txt", 3), Make("CCP", "L2CP", "d.txt", 4)};
  ExpectInputError([&] { Forest(VoltaHwComponents(), diamond); },
                   {"d.txt:4", "CCP <= L2CP", "forest", "CCP - IBP - DCP - L2CP"});
}

TEST(AccelWattchOrderings, RejectsUnknownNames) {
  std::vector<Ordering> o = {Make("INTP", "FPU", "u.txt", 9)};
  ExpectInputError([&] { Forest(VoltaHwComponents(), o); }, {"u.txt:9", "unknown component 'FPU'"});
}

TEST(AccelWattchOrderings, InfeasibleBoundsAreAnOptionError) {
  const std::vector<std::string> c = {"INTP", "FPUP"};
  EXPECT_THROW(OrderingForest(c, {Make("INTP", "FPUP")}, {2.0, 0.001}, {10.0, 1.0}), OptionError);
}

// The encoding: any parameters inside their boxes give an x satisfying every bound and used
// ordering exactly, and FromX(ToX(theta)) reproduces x.
TEST(AccelWattchOrderings, EncodingIsFeasibleAndInvertible) {
  const std::vector<std::string> c = VoltaHwComponents();
  std::vector<double> lower(c.size(), 0.001), upper(c.size(), 1000.0);
  lower[8] = 0.2;   // FP_MULP: unequal bounds give the kinked branch of the map
  upper[7] = 50.0;  // INT_MULP
  const OrderingForest f(c, PaperOrderings(), lower, upper);
  Rng rng(testing::SeedFromTestName());
  const int n = f.size();
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<double> theta(n);
    for (int i = 0; i < n; ++i) {
      const double u = rng.Uniform();
      // Put a quarter of the parameters exactly on a bound.
      theta[i] = u < 0.125  ? f.ParameterLower(i)
                 : u < 0.25 ? f.ParameterUpper(i)
                            : rng.Uniform(f.ParameterLower(i), f.ParameterUpper(i));
    }
    std::vector<double> x(n), back(n);
    f.ToX(theta.data(), x.data(), nullptr);
    EXPECT_EQ(f.MaxViolation(x), 0.0);
    for (int i = 0; i < n; ++i) {
      EXPECT_GE(x[i], lower[i]);
      EXPECT_LE(x[i], upper[i]);
    }
    const std::vector<double> theta2 = f.FromX(x);
    f.ToX(theta2.data(), back.data(), nullptr);
    for (int i = 0; i < n; ++i) EXPECT_NEAR(back[i], x[i], 1e-12 * std::max(1.0, x[i])) << c[i];
  }
  // An infeasible x is pulled into the feasible set.
  std::vector<double> bad(n, 1.0);
  bad[4] = 5.0;  // INTP above FPUP and INT_MULP
  std::vector<double> fixed(n);
  const std::vector<double> theta = f.FromX(bad);
  f.ToX(theta.data(), fixed.data(), nullptr);
  EXPECT_EQ(f.MaxViolation(fixed), 0.0);
}

// The Jacobian of the encoding agrees with central differences (smooth branch).
TEST(AccelWattchOrderings, JacobianMatchesFiniteDifferences) {
  const OrderingForest f = Forest(VoltaHwComponents(), PaperOrderings());
  const int n = f.size();
  Rng rng(testing::SeedFromTestName());
  std::vector<double> theta(n);
  for (int i = 0; i < n; ++i) {
    theta[i] = f.IsRoot(i) ? rng.Uniform(0.5, 2.0) : rng.Uniform(0.0001, 0.002);
  }
  std::vector<double> x(n), jac(static_cast<size_t>(n) * n), xp(n), xm(n);
  f.ToX(theta.data(), x.data(), jac.data());
  for (int j = 0; j < n; ++j) {
    const double h = 1e-7 * std::max(1e-3, std::abs(theta[j]));
    std::vector<double> tp = theta, tm = theta;
    tp[j] += h;
    tm[j] -= h;
    f.ToX(tp.data(), xp.data(), nullptr);
    f.ToX(tm.data(), xm.data(), nullptr);
    for (int i = 0; i < n; ++i) {
      const double fd = (xp[i] - xm[i]) / (2 * h);
      EXPECT_NEAR(jac[static_cast<size_t>(i) * n + j], fd, 1e-5 * std::max(1.0, std::abs(fd)))
          << "dx[" << i << "]/dtheta[" << j << "]";
    }
  }
}

// ---------------------------------------------------------------------------------------
// Model file

AccelWattchModel SmallModel() {
  ComponentTable t;
  t.path = "train.csv";
  t.components = {"INTP", "FPUP", "FP_MULP", "TEXP"};
  Rng rng(7);
  for (int k = 0; k < 12; ++k) {
    t.kernels.push_back(fmt::format("k{}", k));
    t.lines.push_back(k + 2);
    t.dynamic_w.push_back(
        {rng.Uniform(0, 30), rng.Uniform(0, 30), rng.Uniform(0, 30), rng.Uniform(0, 5)});
    t.const_w.push_back(32.0);
    t.static_w.push_back(30.0);
    t.idle_w.push_back(1.0);
    t.measured_w.push_back(rng.Uniform(80, 160));
  }
  AccelWattchFitOptions o;
  o.show_progress = false;
  o.prior_x = {{"INTP", 0.5}, {"TEXP", 2.0}};
  o.prior_source = "prior.json";
  o.prior_weight = 0.05;
  return FitAccelWattchScaling(t, o, true);
}

TEST(AccelWattchModelFile, RoundTripIsExact) {
  const AccelWattchModel m = SmallModel();
  const std::string dir = ScratchDir();
  const std::string path = WriteFile(dir + "/m.json", AccelWattchModelToJson(m));
  const AccelWattchModel back = ReadAccelWattchModel(path);
  EXPECT_EQ(back.components, m.components);
  EXPECT_EQ(back.x, m.x);
  EXPECT_EQ(back.prior_x, m.prior_x);
  EXPECT_EQ(back.orderings.size(), m.orderings.size());
  EXPECT_EQ(back.dropped_orderings.size(), m.dropped_orderings.size());
  ASSERT_EQ(back.fit.starts.size(), 2u);
  EXPECT_EQ(back.fit.starts[1].x, m.fit.starts[1].x);
  EXPECT_EQ(AccelWattchModelToJson(back), AccelWattchModelToJson(m));
}

TEST(AccelWattchModelFile, ErrorsNameLineAndKey) {
  const std::string dir = ScratchDir();
  const nlohmann::json good = nlohmann::json::parse(AccelWattchModelToJson(SmallModel()));
  const auto expect_bad = [&](const std::string& name, nlohmann::json j,
                              const std::vector<std::string>& mentions) {
    const std::string p = WriteFile(dir + "/" + name, j.dump(2));
    ExpectInputError([&] { ReadAccelWattchModel(p); }, mentions);
  };
  nlohmann::json j = good;
  j["format"] = "wattcal-power-model";
  expect_bad("format.json", j, {"format", "wattcal-accelwattch-model"});
  j = good;
  j["version"] = 2;
  expect_bad("version.json", j, {"version", "2"});
  j = good;
  j["components"][1].erase("x");
  expect_bad("missing.json", j, {"components[1].x", "missing"});
  j = good;
  j["components"][0]["x"] = 5000.0;
  expect_bad("bound.json", j, {"components[0].x", "outside its bounds"});
  j = good;
  j["components"][2]["component"] = "INTP";
  expect_bad("twice.json", j, {"components[2].component", "twice"});
  j = good;
  j["components"][0]["x"] = 999.0;  // INTP above FPUP
  expect_bad("order.json", j, {"orderings[0]", "violates INTP <= FPUP"});
  // The line points at the offending value.
  j = good;
  j["components"][3]["prior_x"] = -1.0;
  const std::string p = WriteFile(dir + "/line.json", j.dump(2));
  const std::string text = testing::ReadFile(p);
  const size_t at = text.find("-1.0");
  const int64_t line = 1 + std::count(text.begin(), text.begin() + at, '\n');
  ExpectInputError([&] { ReadAccelWattchModel(p); }, {fmt::format("{}:{}", p, line), "prior_x"});
  const std::string broken = WriteFile(dir + "/broken.json", "{\n  \"format\": \n");
  ExpectInputError([&] { ReadAccelWattchModel(broken); }, {broken + ":", "invalid JSON"});
}

TEST(AccelWattchModelFile, PredictionNeedsTheSameComponents) {
  const AccelWattchModel m = SmallModel();
  ComponentTable t;
  t.path = "heldout.csv";
  t.components = {"INTP", "FPUP", "FP_MULP", "L2CP"};
  t.kernels = {"k"};
  t.lines = {2};
  t.dynamic_w = {{1, 1, 1, 1}};
  t.const_w = t.static_w = t.idle_w = {1};
  t.measured_w = {10};
  ExpectInputError([&] { PredictKernelPowerW(m, t); },
                   {"heldout.csv:1", "components", "no scaling factor for L2CP",
                    "no column for the model's TEXP"});
}

}  // namespace
}  // namespace wattcal
