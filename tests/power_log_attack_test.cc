// The capture path under attack, on the real H100 power log made wrong on purpose: an energy
// counter that freezes, one that steps by 300 J, and a 3 s gap across a window's start. Each
// once gave a wrong power with exit 0; now the window is flagged and named, and its energy
// comes from what is left to trust.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "fit/calibrate.h"
#include "fit/training_rows.h"
#include "ingest/capture.h"
#include "ingest/kernel_energy.h"
#include "io/gpu_description.h"
#include "test_support.h"

namespace wattcal {
namespace {

namespace fs = std::filesystem;

std::string Ubench(const std::string& file) {
  return testing::Dataset("h100_capture/ubench_random/" + file);
}

GpuDescription H100() {
  return ReadGpuDescription(std::string(WATTCAL_SOURCE_DIR) +
                            "/microbench_specs/gpus/h100_sxm.json");
}

struct Window {
  std::string name;
  int64_t start_us = 0, end_us = 0;
};

// The capture's windows (name, start, end) in file order.
std::vector<Window> Windows() {
  std::ifstream in(Ubench("windows.csv"));
  std::string line;
  std::getline(in, line);
  std::vector<Window> out;
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    Window w;
    std::string cell;
    std::getline(ss, w.name, ',');
    std::getline(ss, cell, ',');
    w.start_us = std::stoll(cell);
    std::getline(ss, cell, ',');
    w.end_us = std::stoll(cell);
    out.push_back(w);
  }
  return out;
}

// A capture directory whose windows and counters are the real ones and whose NVML log is the
// real one passed through `edit` (timestamp_us, energy_mj -> keep the line?).
std::string AttackedCapture(const std::function<bool(int64_t t_us, int64_t* energy_mj)>& edit) {
  const std::string dir = testing::ScratchDir() + "/capture";
  fs::create_directories(dir);
  fs::create_symlink(Ubench("windows.csv"), dir + "/windows.csv");
  fs::create_symlink(Ubench("ncu_raw.csv"), dir + "/ncu_raw.csv");
  std::ifstream in(Ubench("nvml_power.csv"));
  std::ofstream out(dir + "/nvml_power.csv");
  std::string line;
  std::getline(in, line);
  out << line << "\n";
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) f.push_back(cell);
    int64_t energy = std::stoll(f[3]);
    if (!edit(std::stoll(f[0]), &energy)) continue;
    f[3] = std::to_string(energy);
    for (size_t i = 0; i < f.size(); ++i) out << (i ? "," : "") << f[i];
    out << "\n";
  }
  return dir;
}

const CaptureWindow& Find(const CaptureReport& r, const std::string& name) {
  for (const CaptureWindow& w : r.windows) {
    if (w.workload == name) return w;
  }
  ADD_FAILURE() << "no window " << name;
  return r.windows.front();
}

bool Warned(const CaptureReport& r, const std::vector<std::string>& parts) {
  return testing::Warned(r.warnings, parts);
}

class PowerLogAttack : public ::testing::Test {
 protected:
  void SetUp() override {
    WATTCAL_REQUIRE_DATASETS();
    windows_ = Windows();
    original_ = IngestCaptures({fs::path(Ubench("windows.csv")).parent_path().string()}, H100(),
                               CaptureOptions());
  }
  std::vector<Window> windows_;
  CaptureReport original_;
};

TEST_F(PowerLogAttack, TheRealLogHasNoGapOrCounterMismatch) {
  for (const CaptureWindow& w : original_.windows) {
    EXPECT_EQ(w.energy.flags & (kFlagSampleGap | kFlagCounterMismatch), 0u) << w.workload;
  }
}

// The counter repeats a stale value for 10 s from 200 ms before `first`'s start, then catches
// up: every window over the stretch is flagged, measured from the instant power and named (a
// window inside once got the stretch's mean power, flagged only beyond the 10% mismatch
// threshold); every window clear of it keeps its power exactly.
void ExpectFrozenStretchCaught(const std::vector<Window>& windows, const std::string& first,
                               const CaptureReport& original) {
  int64_t from = 0;
  for (const Window& w : windows) {
    if (w.name == first) from = w.start_us - 200000;
  }
  ASSERT_GT(from, 0) << first;
  const int64_t to = from + 10000000;
  int64_t stale = -1;
  const std::string dir = AttackedCapture([&](int64_t t, int64_t* e) {
    if (t >= from && t < to) {
      if (stale < 0) stale = *e;
      *e = stale;
    }
    return true;
  });
  const CaptureReport r = IngestCaptures({dir}, H100(), CaptureOptions());
  int over = 0;
  // The stretch's interpolation segment reaches one counter refresh (~0.1 s) beyond it.
  constexpr int64_t kRefreshUs = 150000;
  for (const Window& w : windows) {
    const CaptureWindow& got = Find(r, w.name);
    const CaptureWindow& truth = Find(original, w.name);
    const int64_t measured_from_us = w.start_us + 300000;  // CaptureOptions::settle_ms
    if (w.end_us < from - kRefreshUs || measured_from_us > to + kRefreshUs) {
      EXPECT_EQ(got.energy.flags & kFlagCounterMismatch, 0u) << w.name;
      EXPECT_NEAR(got.energy.mean_power_w, truth.energy.mean_power_w, 1e-9) << w.name;
      continue;
    }
    if (w.end_us < from + kRefreshUs || measured_from_us > to - kRefreshUs) continue;  // an edge
    ++over;
    EXPECT_TRUE(got.energy.flags & kFlagCounterMismatch) << w.name;
    EXPECT_EQ(got.energy.power_source, "instant_power") << w.name;
    // Measured from the instant power: within the 6.4% the two sources differ on real windows.
    EXPECT_NEAR(got.energy.mean_power_w, truth.energy.mean_power_w,
                0.07 * truth.energy.mean_power_w)
        << w.name;
    EXPECT_TRUE(Warned(r, {w.name, "the energy counter did not advance for", "it was frozen",
                           "counter_mismatch"}) ||
                Warned(r, {w.name, "the energy counter gives", "counter_mismatch"}))
        << w.name;
  }
  EXPECT_GE(over, 5);  // the stretch covers several windows of different power
}

TEST_F(PowerLogAttack, AFrozenCounterIsCaughtAndTheInstantPowerUsed) {
  ExpectFrozenStretchCaught(windows_, "fp32_fma", original_);
}

// Issue 35's case: from 200 ms before l2_ld, whose windows l2_ld, dram_copy and dram_write once
// all came out at the stretch's 450.598599 W (measured 485, 487 and 408 W), from the counter,
// unflagged.
TEST_F(PowerLogAttack, AFrozenCounterUnderTheMismatchThresholdIsCaughtToo) {
  ExpectFrozenStretchCaught(windows_, "l2_ld", original_);
}

TEST_F(PowerLogAttack, ACounterStepIsCaught) {
  // +300 J in the middle of int_mul (~1.6 s): a ~190 W step that nothing flagged before.
  const Window target = windows_[2];
  ASSERT_EQ(target.name, "int_mul");
  const int64_t step_at = (target.start_us + target.end_us) / 2;
  const std::string dir = AttackedCapture([&](int64_t t, int64_t* e) {
    if (t >= step_at) *e += 300000;
    return true;
  });
  const CaptureReport r = IngestCaptures({dir}, H100(), CaptureOptions());
  const CaptureWindow& got = Find(r, "int_mul");
  const CaptureWindow& truth = Find(original_, "int_mul");
  EXPECT_TRUE(got.energy.flags & kFlagCounterMismatch);
  EXPECT_NEAR(got.energy.mean_power_w, truth.energy.mean_power_w, 0.07 * truth.energy.mean_power_w);
  EXPECT_GT(got.energy.counter_energy_j / got.energy.duration_s, truth.energy.mean_power_w + 100.0);
  // The neighbours are untouched.
  EXPECT_EQ(Find(r, "int_add").energy.flags & kFlagCounterMismatch, 0u);
  EXPECT_NEAR(Find(r, "int_add").energy.mean_power_w,
              Find(original_, "int_add").energy.mean_power_w, 1e-9);
}

TEST_F(PowerLogAttack, AGapAcrossAWindowStartIsFlaggedNamedAndLeftOutOfTraining) {
  // No reading for 3 s across fp32_add's start.
  const Window target = windows_[4];
  ASSERT_EQ(target.name, "fp32_add");
  const int64_t from = target.start_us - 1500000, to = target.start_us + 1500000;
  const std::string dir = AttackedCapture([&](int64_t t, int64_t*) { return t < from || t >= to; });
  const CaptureReport r = IngestCaptures({dir}, H100(), CaptureOptions());
  const CaptureWindow& got = Find(r, "fp32_add");
  EXPECT_TRUE(got.energy.flags & kFlagSampleGap);
  EXPECT_GT(got.energy.max_gap_s, 2.9);
  EXPECT_TRUE(
      Warned(r, {"fp32_add", "no power reading for 3.0", "nvml_power.csv, lines", "sample_gap"}));
  // Windows two away keep their power and no flag.
  EXPECT_EQ(Find(r, "int_mul").energy.flags & kFlagSampleGap, 0u);
  EXPECT_EQ(Find(r, "fp64_fma").energy.flags & kFlagSampleGap, 0u);
  const Corpus corpus = r.ToCorpus();
  const TrainingSelection selection = SelectTrainingRows(corpus, /*keep_flagged=*/false);
  EXPECT_NE(selection.message.find("fp32_add"), std::string::npos) << selection.message;
  EXPECT_NE(selection.message.find("sample_gap:"), std::string::npos) << selection.message;
}

}  // namespace
}  // namespace wattcal
