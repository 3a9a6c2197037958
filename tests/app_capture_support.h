// Shared by the tests of wattcal-capture --app (app_capture_test.cc, capture_recording_test.cc):
// a meter whose power follows a "load" file, a GPU's description, programs that mark windows, a
// stand-in for ncu and its raw page, a fixed test model, and a directory's bytes file by file.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "app_runner.h"
#include "capture_writer.h"
#include "io/gpu_description.h"
#include "model/model_io.h"
#include "runner.h"
#include "test_support.h"

namespace wattcal::apps_test {

namespace fs = std::filesystem;
using namespace capture;

inline const std::string kH100 =
    std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/gpus/h100_sxm.json";

inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

// Parses a CSV of plain fields (no quotes) into header -> column, one map per row.
inline std::vector<std::map<std::string, std::string>> Rows(const std::string& path) {
  const std::vector<std::string> lines = Lines(testing::ReadFile(path));
  std::vector<std::map<std::string, std::string>> rows;
  if (lines.empty()) return rows;
  auto split = [](const std::string& line) {
    std::vector<std::string> f;
    std::string cell;
    std::istringstream in(line);
    while (std::getline(in, cell, ',')) f.push_back(cell);
    if (!line.empty() && line.back() == ',') f.push_back("");
    return f;
  };
  const std::vector<std::string> header = split(lines[0]);
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> f = split(lines[i]);
    std::map<std::string, std::string> row;
    for (size_t j = 0; j < header.size() && j < f.size(); ++j) row[header[j]] = f[j];
    rows.push_back(row);
  }
  return rows;
}

// The Python the build found (tests/test_support.h).
inline std::string Python() { return testing::Python3(); }

class LoadFileMeter : public PowerMeter {
 public:
  explicit LoadFileMeter(std::string load_file) : load_file_(std::move(load_file)) {}
  PowerSample Read() override {
    std::lock_guard<std::mutex> lock(mutex_);
    PowerSample s;
    s.timestamp_us = std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    const double w = fs::exists(load_file_) ? kLoadW : kIdleW;
    if (last_us_ > 0) energy_mj_ += w * static_cast<double>(s.timestamp_us - last_us_) * 1e-3;
    last_us_ = s.timestamp_us;
    s.power_mw = static_cast<int64_t>(w * 1000.0);
    s.power_instant_mw = s.power_mw;
    s.energy_mj = static_cast<int64_t>(energy_mj_);
    s.sm_clock_mhz = 1980;
    s.mem_clock_mhz = 2619;
    s.temperature_c = 40;
    s.has_clocks_event_reasons = true;
    s.clocks_event_reasons = 0;
    s.power_limit_mw = 700000;
    return s;
  }
  bool LockCoreClock(int, std::string*) override { return false; }
  bool ResetCoreClock(std::string*) override { return true; }

  static constexpr double kIdleW = 80.0;
  static constexpr double kLoadW = 380.0;

 private:
  std::string load_file_;
  std::mutex mutex_;
  int64_t last_us_ = 0;
  double energy_mj_ = 2.0e6;
};

inline CaptureInfo FakeGpu(const std::string& uuid = "GPU-aaaaaaaa-1111-2222-3333-444444444444") {
  CaptureInfo info;
  info.gpu_name = "NVIDIA H100 80GB HBM3";
  info.gpu_uuid = uuid;
  info.driver_version = "580.00";
  info.compute_capability = 90;
  info.power_limit_mw = 700000;
  return info;
}

// A program that idles `pre_s`, then marks `windows` windows of `load_s` under load (the load
// file exists during each), then idles `post_s`; `steps` ("" for none) goes on each end mark.
inline std::vector<std::string> MarkedProgram(const std::string& load_file, int windows,
                                              double load_s, const std::string& name = "steady",
                                              const std::string& steps = "") {
  std::string body = "sleep 0.2\n";
  for (int i = 0; i < windows; ++i) {
    body += fmt::format(
        "touch '{0}'; echo \"begin {1} $(date +%s%N)\" >> \"$WATTCAL_MARKS\"; sleep {2}; "
        "echo \"end {1} $(date +%s%N){3}\" >> \"$WATTCAL_MARKS\"; rm -f '{0}'; sleep 0.1\n",
        load_file, name, load_s, steps.empty() ? "" : " " + steps);
  }
  return {"sh", "-c", body};
}

// Stand-in for ncu: copies $FAKE_NCU_PAGE to --log-file, writes its arguments to
// $FAKE_NCU_ARGS, then runs the program (so that its marks run too).
inline std::string FakeNcu(const std::string& dir) {
  const std::string path = testing::WriteFile(dir + "/ncu", R"(#!/bin/sh
echo "$*" > "$FAKE_NCU_ARGS"
log=""
while [ $# -gt 0 ]; do
  case "$1" in
    --log-file) log="$2"; shift 2 ;;
    --metrics|--page|--clock-control|--target-processes|--nvtx-include) shift 2 ;;
    --csv|--nvtx) shift ;;
    *) break ;;
  esac
done
cp "$FAKE_NCU_PAGE" "$log"
exec "$@" > /dev/null
)");
  fs::permissions(path, fs::perms::owner_all);
  return path;
}

// An Nsight Compute raw page (tool lines, header, units row, grouped digits) of `kernels`
// launches, each with made-up but well-formed counts of every metric; `scale` varies them.
inline std::string NcuRawPage(const std::vector<std::string>& metrics, int kernels, int scale) {
  auto q = [](const std::string& s) { return "\"" + s + "\""; };
  auto unit = [](const std::string& m) -> std::string {
    if (m.find("time_duration") != std::string::npos) return "nsecond";
    if (m.find("cycles") != std::string::npos && m.find("per_second") == std::string::npos)
      return "cycle";
    if (m.find("bytes") != std::string::npos) return "byte";
    if (m.find("wavefronts") != std::string::npos) return "";
    if (m.find("pct") != std::string::npos) return "%";
    if (m.find("per_second") != std::string::npos) return "cycle/second";
    return "inst";
  };
  std::string s = "==PROF== Connected to process 42 (/usr/bin/python3)\n";
  std::string header =
      "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\","
      "\"Block Size\",\"Grid Size\",\"Device\",\"CC\"";
  std::string units = "\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\"";
  for (const std::string& m : metrics) header += "," + q(m), units += "," + q(unit(m));
  s += header + "\n" + units + "\n";
  for (int k = 0; k < kernels; ++k) {
    s += fmt::format(
        "\"{}\",\"42\",\"python3\",\"127.0.0.1\",\"gemm_kernel_{}(float*, int)\",\"1\",\"7\","
        "\"(256, 1, 1)\",\"({}, 1, 1)\",\"0\",\"9.0\"",
        k, k % 2, 132 * (k + 1));
    for (size_t j = 0; j < metrics.size(); ++j) {
      const std::string& m = metrics[j];
      double v = 1.0e6 * (1 + (scale * 5 + k * 7 + static_cast<int>(j) * 13) % 40);
      if (m == "gpu__time_duration.sum") v = 1.5e6 * (k + 1);  // ns
      if (m.find("cycles_elapsed") != std::string::npos ||
          m.find("cycles_active") != std::string::npos) {
        v = 2.97e6 * (k + 1);
      }
      if (m.find("pct") != std::string::npos) v = 50.0;
      if (m.find("per_second") != std::string::npos) v = 1.98e9;
      s += "," + q(fmt::format("{:.0f}", v));
    }
    s += "\n";
  }
  return s + "==PROF== Disconnected from process 42\n";
}

// A fixed model for the H100 description (TPDS Eq. 9) with known coefficients.
inline std::string WriteTestModel(const std::string& path) {
  const GpuDescription gpu = ReadGpuDescription(kH100);
  PowerModel m;
  m.method = FitMethod::kFixed;
  m.layout = gpu.ToLayout();
  const int nd = m.layout.num_domains();
  for (int d = 0; d < nd; ++d) {
    m.freq_levels_mhz.push_back({m.layout.domains[d].default_freq_mhz});
    m.voltage_rel.push_back({1.0});
    m.static_w.push_back(d == 0 ? 90.0 : 0.0);
    m.idle_dyn_w_per_mhz.push_back(0.0);
  }
  m.component_w_per_mhz.assign(m.layout.num_components(), 0.0);
  for (size_t i = 0; i < m.component_w_per_mhz.size(); ++i)
    m.component_w_per_mhz[i] = 0.01 * (1 + i % 4);
  m.power_limit_w = 700.0;
  m.trained_on = "a model written by the test";
  return testing::WriteFile(path, ModelToJson(m));
}

struct Recorded {
  std::string dir, load, ncu, page, args;
};

inline Recorded NewRecording() {
  Recorded r;
  const std::string scratch = testing::ScratchDir();
  r.dir = scratch + "/apps";
  r.load = scratch + "/load";
  r.ncu = FakeNcu(scratch);
  r.page = scratch + "/page.csv";
  r.args = scratch + "/ncu_args.txt";
  setenv("FAKE_NCU_PAGE", r.page.c_str(), 1);
  setenv("FAKE_NCU_ARGS", r.args.c_str(), 1);
  return r;
}

inline AppCaptureOptions Options(const Recorded& r, const std::string& name,
                                 std::vector<std::string> command) {
  AppCaptureOptions o;
  o.out_dir = r.dir;
  o.name = name;
  o.command = std::move(command);
  o.gap_ms = 100.0;
  o.sample_ms = 2.0;
  o.ncu = r.ncu;
  o.metrics = DescriptionMetrics(kH100);
  o.required_metrics = ReadGpuDescription(kH100).RequiredMetrics();
  return o;
}

// The directory's bytes, file by file.
inline std::map<std::string, std::string> Snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  if (!fs::exists(dir)) return files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    files[fs::relative(entry.path(), dir).string()] =
        entry.is_regular_file() ? testing::ReadFile(entry.path()) : "<dir>";
  }
  return files;
}

// Runs RunAppCapture (the meter's load file beside --out), expecting an error whose message holds
// every one of `parts`, and the directory byte for byte as it was.
inline void ExpectRefusedRecording(const AppCaptureOptions& o, const CaptureInfo& gpu,
                                   const std::vector<std::string>& parts) {
  LoadFileMeter meter(fs::path(o.out_dir).parent_path().string() + "/load");
  const auto before = Snapshot(o.out_dir);
  try {
    RunAppCapture(o, gpu, meter, nullptr);
    ADD_FAILURE() << "accepted: " << parts.front();
  } catch (const std::exception& e) {
    for (const std::string& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
  EXPECT_EQ(Snapshot(o.out_dir), before) << parts.front();
}

}  // namespace wattcal::apps_test
