// The fleet reduce (issue 39; docs/fleet.md): grouping captures into GPUs, each failure kind with
// its status while the other GPUs reduce, one GPU's counters lent to the others, a small fleet of
// known variants of the committed H100 suite end to end (scripts/fleet_captures.py), and the two
// real H100s when ../shared/datasets is there.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "fleet/fleet_captures.h"
#include "fleet/fleet_reduce.h"
#include "fleet/fleet_stage.h"
#include "ingest/capture.h"
#include "test_support.h"
#include "util/errors.h"

namespace wattcal {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::WriteFile;

const std::string kSource = WATTCAL_SOURCE_DIR;
const std::string kH100 = kSource + "/microbench_specs/gpus/h100_sxm.json";
const std::string kH200 = kSource + "/microbench_specs/gpus/h200_sxm.json";
const std::string kSuite = kSource + "/datasets/captures/h100/suite";

// fleet.csv as rows of cells by column name (a cell holds no comma but in message, last-but-one
// quoted: read by a small CSV splitter).
std::vector<std::map<std::string, std::string>> ReadFleetCsv(const std::string& path) {
  std::istringstream in(ReadFile(path));
  std::string line;
  auto split = [](const std::string& l) {
    std::vector<std::string> cells(1);
    bool quoted = false;
    for (size_t i = 0; i < l.size(); ++i) {
      const char c = l[i];
      if (c == '"') {
        if (quoted && i + 1 < l.size() && l[i + 1] == '"') {
          cells.back() += '"';
          ++i;
        } else {
          quoted = !quoted;
        }
      } else if (c == ',' && !quoted) {
        cells.emplace_back();
      } else {
        cells.back() += c;
      }
    }
    return cells;
  };
  std::getline(in, line);
  const std::vector<std::string> header = split(line);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    const std::vector<std::string> cells = split(line);
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < header.size() && i < cells.size(); ++i) row[header[i]] = cells[i];
    rows.push_back(row);
  }
  return rows;
}

// A capture directory with only what grouping reads: capture.json and windows.csv (and
// idle_windows.csv when `finished` is set or not: with `died`, only idle_before).
std::string FakeCapture(const std::string& dir, const std::string& name, const std::string& uuid,
                        const std::vector<std::string>& benchmarks, bool died = false) {
  fs::create_directories(dir);
  WriteFile(dir + "/capture.json", "{\"format\": \"wattcal-capture\", \"gpu\": {\"name\": \"" +
                                       name + "\", \"uuid\": \"" + uuid + "\"}}\n");
  std::string w = "kernel,start_us,end_us\n";
  int64_t t = 1000000;
  for (const std::string& b : benchmarks) {
    w += b + "," + std::to_string(t) + "," + std::to_string(t + 500000) + "\n";
    t += 600000;
  }
  WriteFile(dir + "/windows.csv", w);
  WriteFile(dir + "/idle_windows.csv",
            std::string("kernel,start_us,end_us\nidle_before,0,900000\n") +
                (died ? "" : "idle_after,9000000000,9000900000\n"));
  return dir;
}

std::vector<FleetDescription> H100Only() { return ReadFleetDescriptions({kH100}); }

TEST(FleetOptions, DefaultsPassTheirChecks) {
  std::string error;
  EXPECT_TRUE(FleetFitOptions().Check(&error)) << error;
  EXPECT_TRUE(FleetReduceOptions().Check(&error)) << error;
  FleetReduceOptions bad;
  bad.threads = 0;
  EXPECT_FALSE(bad.Check(&error));
  EXPECT_NE(error.find("--threads"), std::string::npos) << error;
}

TEST(FleetGrouping, DisjointCapturesOfOneUuidAreOneGpu) {
  const std::string d = testing::ScratchDir();
  const std::string a = FakeCapture(d + "/ubench", "NVIDIA H100 80GB HBM3", "GPU-1", {"x", "y"});
  const std::string b = FakeCapture(d + "/mix", "NVIDIA H100 80GB HBM3", "GPU-1", {"m1", "m2"});
  const std::string c = FakeCapture(d + "/other", "NVIDIA H100 80GB HBM3", "GPU-0", {"x"});
  const std::vector<FleetMember> m = GroupCaptures({a, b, c}, H100Only());
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].uuid, "GPU-0");  // UUID order
  EXPECT_EQ(m[1].uuid, "GPU-1");
  EXPECT_EQ(m[1].captures, (std::vector<std::string>{a, b}));
  EXPECT_EQ(m[1].windows, 4);
  EXPECT_EQ(m[1].status, FleetStatus::kOk);
}

TEST(FleetGrouping, EachFailureKindGetsItsStatusAndTheOthersStay) {
  const std::string d = testing::ScratchDir();
  const std::string good = FakeCapture(d + "/good", "NVIDIA H100 80GB HBM3", "GPU-1", {"x", "y"});
  const std::string rerun = FakeCapture(d + "/rerun", "NVIDIA H100 80GB HBM3", "GPU-1", {"y"});
  const std::string h200 = FakeCapture(d + "/h200", "NVIDIA H200", "GPU-2", {"x"});
  const std::string died = FakeCapture(d + "/died", "NVIDIA H100 80GB HBM3", "GPU-3", {"x"}, true);
  fs::create_directories(d + "/empty");
  std::ofstream(d + "/a_file") << "not a capture\n";
  const std::vector<FleetMember> m = GroupCaptures(
      {good, rerun, h200, died, d + "/empty", d + "/missing", d + "/a_file"}, H100Only());
  ASSERT_EQ(m.size(), 7u);
  EXPECT_EQ(m[0].status, FleetStatus::kOk);
  EXPECT_EQ(m[0].captures, std::vector<std::string>{good});
  // The rest in the order given.
  EXPECT_EQ(m[1].status, FleetStatus::kDuplicate);
  EXPECT_NE(m[1].message.find(good), std::string::npos) << m[1].message;
  EXPECT_NE(m[1].message.find(rerun), std::string::npos) << m[1].message;
  EXPECT_EQ(m[2].status, FleetStatus::kOtherModel);
  EXPECT_NE(m[2].message.find("NVIDIA H200"), std::string::npos) << m[2].message;
  EXPECT_EQ(m[3].status, FleetStatus::kIncomplete);
  EXPECT_NE(m[3].message.find("idle_after"), std::string::npos) << m[3].message;
  EXPECT_EQ(m[4].status, FleetStatus::kEmpty);
  EXPECT_EQ(m[5].status, FleetStatus::kEmpty);
  EXPECT_NE(m[5].message.find("does not exist"), std::string::npos) << m[5].message;
  EXPECT_EQ(m[6].status, FleetStatus::kEmpty);
  EXPECT_NE(m[6].message.find("not a directory"), std::string::npos) << m[6].message;
}

TEST(FleetGrouping, AFileCutWhileWrittenIsIncomplete) {
  const std::string d = testing::ScratchDir();
  const std::string cut = FakeCapture(d + "/cut", "NVIDIA H100 80GB HBM3", "GPU-1", {"x"});
  WriteFile(cut + "/nvml_power.csv", "timestamp_us,power_mw\n1000000,100000\n1005000,1000");
  const std::vector<FleetMember> m = GroupCaptures({cut}, H100Only());
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].status, FleetStatus::kIncomplete);
  EXPECT_NE(m[0].message.find(cut + "/nvml_power.csv"), std::string::npos) << m[0].message;
}

TEST(FleetGrouping, ADuplicateKeepsTheCaptureWithMoreWindows) {
  const std::string d = testing::ScratchDir();
  const std::string shorter = FakeCapture(d + "/a", "NVIDIA H100 80GB HBM3", "GPU-1", {"x"});
  const std::string longer = FakeCapture(d + "/b", "NVIDIA H100 80GB HBM3", "GPU-1", {"x", "y"});
  const std::vector<FleetMember> m = GroupCaptures({shorter, longer}, H100Only());
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].captures, std::vector<std::string>{longer});
  EXPECT_EQ(m[1].status, FleetStatus::kDuplicate);
  EXPECT_EQ(m[1].captures, std::vector<std::string>{shorter});
}

// Three variants of the committed suite (GPU 0 as recorded, GPU 1 +10 W, GPU 2 x 1.1), only GPU 0
// with counters, and one capture of each failure kind beside them.
class FleetEndToEnd : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = testing::SuiteScratchDir("FleetEndToEnd");
    if (testing::Python3().empty()) return;
    const testing::CommandResult r =
        testing::RunShell(testing::ShellQuote(testing::Python3()) + " " +
                          testing::ShellQuote(kSource + "/scripts/fleet_captures.py") + " " +
                          testing::ShellQuote(kSuite) + " " + testing::ShellQuote(dir_ + "/fleet") +
                          " 3 --scales 1.0,1.0,1.1 --offsets-w 0,10,0");
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  void SetUp() override {
    WATTCAL_REQUIRE_PYTHON("json", "scripts/fleet_captures.py makes the fleet's captures");
  }
  static std::string Gpu(int k) {
    return dir_ + "/fleet/GPU-f1ee7000-0000-0000-0000-00000000000" + std::to_string(k);
  }
  static std::string dir_;
};
std::string FleetEndToEnd::dir_;

TEST_F(FleetEndToEnd, LentCountersAreTheLendersUtilisations) {
  CaptureOptions options;
  const CaptureReport lender = IngestCaptures({Gpu(0)}, ReadGpuDescription(kH100), options);
  options.counters_from = std::make_shared<const CaptureCounters>(LendCounters(lender));
  const CaptureReport borrower = IngestCaptures({Gpu(1)}, options.counters_from->gpu, options);
  ASSERT_EQ(borrower.windows.size(), lender.windows.size());
  for (size_t i = 0; i < lender.windows.size(); ++i) {
    EXPECT_EQ(borrower.windows[i].utilisations, lender.windows[i].utilisations) << i;
  }
  EXPECT_TRUE(testing::Warned(borrower.warnings, {"no counters of its own", "GPU-f1ee7000"}));
  // Without a lender, the capture without counters is refused, naming it.
  EXPECT_THROW(IngestCaptures({Gpu(1)}, ReadGpuDescription(kH100), CaptureOptions()), InputError);
  // A benchmark the lender lacks is named with its line.
  const std::string odd = testing::ScratchDir() + "/odd";
  fs::copy(Gpu(1), odd, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  fs::remove(odd + "/windows.csv");
  std::string w = ReadFile(kSuite + "/windows.csv");
  w.replace(w.find("int_add,"), 8, "int_sub,");
  WriteFile(odd + "/windows.csv", w);
  testing::ExpectInputError([&] { IngestCaptures({odd}, options.counters_from->gpu, options); }, 3,
                            {"int_sub", "no counters", "GPU-f1ee7000-0000-0000-0000-000000000000"});
}

// A copy of GPU k's capture at `dir` whose capture.json names no UUID.
std::string WithoutUuid(const std::string& from, const std::string& dir) {
  fs::copy(from, dir, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  std::string json = ReadFile(dir + "/capture.json");
  const size_t at = json.find("\"uuid\": \"GPU-");
  json.erase(at, json.find('"', at + 9) + 1 - at);  // "uuid": "GPU-..." -> nothing
  json.erase(json.rfind(',', at), 1);               // and the comma before it
  fs::remove(dir + "/capture.json");
  WriteFile(dir + "/capture.json", json);
  return dir;
}

TEST_F(FleetEndToEnd, CapturesThatNameNoUuidAreEachAGpuNamedByTheirDirectory) {
  const std::string d = testing::ScratchDir();
  const std::string lender = WithoutUuid(Gpu(0), d + "/no_uuid_lender");
  const std::string a = WithoutUuid(Gpu(1), d + "/no_uuid_a");
  const std::string b = WithoutUuid(Gpu(1), d + "/no_uuid_b");
  const testing::CommandResult r = testing::RunStage(
      "wattcal-fleet", {"--capture", lender, "--capture", a, "--capture", b, "--capture", Gpu(2),
                        "--gpu", kH100, "--bootstrap", "5", "--out", d + "/out"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto rows = ReadFleetCsv(d + "/out/fleet.csv");
  ASSERT_EQ(rows.size(), 4u);  // two captures of one GPU's data, but no UUID says so: two GPUs
  std::map<std::string, std::string> counters_of;
  for (const auto& row : rows) {
    EXPECT_EQ(row.at("status"), "ok") << row.at("message");
    counters_of[row.at("captures")] = row.at("counters_from");
  }
  // Whose counters: the lender by its directory, as it recorded no UUID.
  for (const std::string& c : {lender, a, b, Gpu(2)}) EXPECT_EQ(counters_of[c], lender) << c;
  // The cross-prediction table names each GPU apart: its UUID or its directory, never "".
  const std::string cross = ReadFile(d + "/out/cross_prediction.csv");
  for (const std::string& c : {lender, a, b})
    EXPECT_NE(cross.find("," + c + "," + Gpu(2).substr(Gpu(2).rfind('/') + 1) + ","),
              std::string::npos)
        << c << "\n"
        << cross;
  EXPECT_EQ(cross.find(",,"), std::string::npos) << cross;
}

TEST_F(FleetEndToEnd, AListOfWhichNoPathExistsIsRefusedWithWhereRelativePathsAreRead) {
  const std::string d = testing::ScratchDir();
  // Paths relative to the list's own folder, read from another working directory.
  fs::create_directories(d + "/campaign");
  fs::copy(Gpu(0), d + "/campaign/GPU-0", fs::copy_options::recursive);
  WriteFile(d + "/campaign/list.txt", "# the campaign\nGPU-0\nGPU-1\n");
  testing::ExpectRefused(
      testing::RunStage("wattcal-fleet", {"--captures-from", d + "/campaign/list.txt", "--gpu",
                                          kH100, "--out", d + "/out"}),
      2, {"list.txt", "none of the 2 capture paths exists", "run from " + d + "/campaign"},
      {d + "/out"});
  testing::ExpectRefused(
      testing::RunStage("wattcal-fleet",
                        {"--capture", d + "/nope", "--gpu", kH100, "--out", d + "/out"}),
      2, {"--capture", "none of the 1 capture paths exists", d + "/nope"}, {d + "/out"});
  // A list that is no text (a binary file given by mistake): its first bad line.
  WriteFile(d + "/binary.txt", Gpu(0) + "\n" + std::string("\x7f\x01\x02ELF", 6) + "\n");
  testing::ExpectRefused(testing::RunStage("wattcal-fleet", {"--captures-from", d + "/binary.txt",
                                                             "--gpu", kH100, "--out", d + "/out"}),
                         2, {"binary.txt:2", "not a line of text"}, {d + "/out"});
}

TEST_F(FleetEndToEnd, RecoversTheVariationAndNamesEveryFailure) {
  const std::string d = testing::ScratchDir();
  // Another model: GPU 2's capture relabelled as an H200.
  const std::string h200 = d + "/h200";
  fs::copy(Gpu(2), h200, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  std::string json = ReadFile(h200 + "/capture.json");
  json.replace(json.find("NVIDIA H100 80GB HBM3"), 21, "NVIDIA H200");
  json.replace(json.find("GPU-f1ee7000"), 12, "GPU-0200h200");
  fs::remove(h200 + "/capture.json");
  WriteFile(h200 + "/capture.json", json);
  // A task that died mid-suite: 40 windows, no idle_after.
  const std::string died = d + "/died";
  fs::create_directories(died);
  std::istringstream all(ReadFile(kSuite + "/windows.csv"));
  std::string line, head;
  for (int i = 0; i < 41 && std::getline(all, line); ++i) head += line + "\n";
  WriteFile(died + "/windows.csv", head);
  WriteFile(died + "/capture.json", ReadFile(kSuite + "/capture.json"));
  WriteFile(died + "/idle_windows.csv", ReadFile(kSuite + "/idle_windows.csv").substr(0, 60));
  fs::create_directories(d + "/empty");
  const std::vector<std::string> args = {
      "--capture", Gpu(0),      "--capture",   Gpu(1),      "--capture",  Gpu(2),      "--capture",
      h200,        "--capture", died,          "--capture", d + "/empty", "--capture", Gpu(0) + "/",
      "--gpu",     kH100,       "--bootstrap", "20",        "--threads",  "2"};
  std::vector<std::string> first = args;
  first.insert(first.end(), {"--out", d + "/out"});
  const testing::CommandResult r = testing::RunStage("wattcal-fleet", first);
  ASSERT_EQ(r.exit_code, kExitPartial) << r.output;
  for (const char* status : {"other_model", "incomplete", "empty", "duplicate"})
    EXPECT_NE(r.output.find(status), std::string::npos) << status << "\n" << r.output;
  const auto rows = ReadFleetCsv(d + "/out/fleet.csv");
  ASSERT_EQ(rows.size(), 7u);
  std::map<std::string, double> idle, stat;
  for (int k = 0; k < 3; ++k) {
    const auto& row = rows[k];
    ASSERT_EQ(row.at("status"), "ok") << row.at("message");
    EXPECT_EQ(row.at("counters_from"), "GPU-f1ee7000-0000-0000-0000-000000000000");
    idle[row.at("uuid")] = std::stod(row.at("idle_w"));
    stat[row.at("uuid")] = std::stod(row.at("static_w"));
    EXPECT_LT(std::stod(row.at("pooled_mape_pct")), 20.0);
  }
  const std::string g0 = "GPU-f1ee7000-0000-0000-0000-000000000000";
  const std::string g1 = "GPU-f1ee7000-0000-0000-0000-000000000001";
  const std::string g2 = "GPU-f1ee7000-0000-0000-0000-000000000002";
  // Made: +10 W on GPU 1 (idle and static), x 1.1 on GPU 2.
  EXPECT_NEAR(idle[g1] - idle[g0], 10.0, 0.5);
  EXPECT_NEAR(stat[g1] - stat[g0], 10.0, 1.0);
  EXPECT_NEAR(idle[g2] / idle[g0], 1.1, 0.005);
  EXPECT_NEAR(stat[g2] / stat[g0], 1.1, 0.01);
  std::vector<std::string> statuses;
  for (size_t k = 3; k < rows.size(); ++k) statuses.push_back(rows[k].at("status"));
  EXPECT_EQ(statuses,
            (std::vector<std::string>{"other_model", "incomplete", "empty", "duplicate"}));
  // The duplicate is GPU 0's directory given a second time (with a slash): said so, read once.
  EXPECT_NE(rows[6].at("message").find("the same directory as " + Gpu(0) + ", given twice"),
            std::string::npos)
      << rows[6].at("message");
  const std::string html = ReadFile(d + "/out/index.html");
  for (const std::string& named : {h200, died, d + "/empty"})
    EXPECT_NE(html.find(named), std::string::npos) << named;
  EXPECT_TRUE(testing::HasProvenance(d + "/out/fleet.csv"));
  // The same bytes again, on one thread.
  std::vector<std::string> second = args;
  second.back() = "1";
  second.insert(second.end(), {"--out", d + "/again"});
  ASSERT_EQ(testing::RunStage("wattcal-fleet", second).exit_code, kExitPartial);
  for (const char* f : {"fleet.csv", "cross_prediction.csv", "index.md"})
    EXPECT_EQ(ReadFile(d + "/out/" + f), ReadFile(d + "/again/" + f)) << f;
}

TEST(FleetRealH100, TwoH100sAndAnH200) {
  WATTCAL_REQUIRE_DATASETS();
  const std::string d = testing::ScratchDir();
  const std::string h100 = testing::Dataset("h100_capture");
  const std::string h200 = testing::Dataset("h200_capture");
  const testing::CommandResult r =
      testing::RunStage("wattcal-fleet", {"--capture",   h100 + "/ubench_random",
                                          "--capture",   h100 + "/mix_random",
                                          "--capture",   kSuite,
                                          "--capture",   h200 + "/ubench_random",
                                          "--capture",   h200 + "/mix_random",
                                          "--gpu",       kH100,
                                          "--gpu",       kH200,
                                          "--out",       d,
                                          "--bootstrap", "20",
                                          "--threads",   "2"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto rows = ReadFleetCsv(d + "/fleet.csv");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].at("uuid").substr(0, 12), "GPU-1e00b39f");
  EXPECT_EQ(rows[1].at("uuid").substr(0, 12), "GPU-e4ca9cc1");
  EXPECT_EQ(rows[2].at("model"), "h200_sxm");
  // The shared H100 capture has no DMMA metric: no DMMA term there, one on the own suite.
  EXPECT_EQ(rows[0].at("dmma_w"), "");
  EXPECT_NE(rows[1].at("dmma_w"), "");
  const std::string cross = ReadFile(d + "/cross_prediction.csv");
  EXPECT_NE(cross.find("GPU-1e00b39f-f22d-f581-3a82-4323e62146c2,GPU-e4ca9cc1-9894-07ce-6614-"
                       "7f62bef2b3f2,34,"),
            std::string::npos)
      << cross;
}

}  // namespace
}  // namespace wattcal
