// Field logs (ingest/field_log.h), sacct tables (ingest/slurm_jobs.h) and per-job energy
// (ingest/job_energy.h, wattcal-fields), on files written in the tools' real formats.
#include <gtest/gtest.h>

#include <boost/filesystem.hpp>
#include <cmath>
#include <functional>

#include "ingest/field_log.h"
#include "ingest/job_energy.h"
#include "ingest/slurm_jobs.h"
#include "io/field_set.h"
#include "model/model_io.h"
#include "test_support.h"
#include "util/errors.h"
#include "util/rng.h"

namespace wattcal {
namespace {

using testing::ReadFile;
using testing::RunStage;
using testing::ScratchDir;
using testing::WriteFile;

const std::string kH100Dcgm =
    std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/gpus/fields/h100_sxm_dcgm.json";

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

// `dcgmi dmon -e 1002,1005,155 -d 100` of two GPUs, as dcgmi prints it: header and units line
// repeated, N/A where DCGM has no value.
const char* kDmon =
    "#Entity   SMACT        DRAMA        POWER\n"
    "ID                                  W\n"
    "GPU 0     0.500        0.100        300.000\n"
    "GPU 1     N/A          N/A          61.000\n"
    "GPU 0     0.700        0.300        340.000\n"
    "GPU 1     0.000        0.000        61.000\n"
    "#Entity   SMACT        DRAMA        POWER\n"
    "ID                                  W\n"
    "GPU 0     0.900        N/A          380.000\n"
    "GPU 1     0.000        0.000        62.000\n";

TEST(FieldLog, DmonRowsByGpuTimedByTheDelay) {
  const std::string path = WriteFile(ScratchDir() + "/dmon.txt", kDmon);
  FieldLogOptions options;
  options.dmon_interval_ms = 100;
  options.dmon_start_s = 1000.0;
  const FieldLog log = ReadFieldLog(path, options);
  EXPECT_EQ(log.format, "dcgmi-dmon");
  EXPECT_EQ(log.fields,
            (std::vector<std::string>{"DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE",
                                      "DCGM_FI_DEV_POWER_USAGE"}));
  ASSERT_EQ(log.series.size(), 2u);
  const FieldSeries* gpu0 = log.Find("0");
  ASSERT_NE(gpu0, nullptr);
  EXPECT_EQ(gpu0->time_s, (std::vector<double>{1000.0, 1000.1, 1000.2}));
  EXPECT_EQ(gpu0->line, (std::vector<int64_t>{3, 5, 9}));
  EXPECT_EQ(log.Find("7"), nullptr);

  const FieldWindowMeans w = AverageFieldWindow(
      log, *gpu0, 1000.0, 1000.25, {"DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE"}, 3);
  EXPECT_EQ(w.samples, 3);
  EXPECT_DOUBLE_EQ(w.means.at("DCGM_FI_PROF_SM_ACTIVE"), 0.7);
  EXPECT_DOUBLE_EQ(w.means.at("DCGM_FI_PROF_DRAM_ACTIVE"), 0.2);  // the N/A cell left out
  EXPECT_EQ(w.na_cells.at("DCGM_FI_PROF_DRAM_ACTIVE"), 1);
  EXPECT_EQ(w.flags, (std::vector<std::string>{kFieldFlagNaCells, kFieldFlagOutsideLog}));
  const FieldWindowMeans inside =
      AverageFieldWindow(log, *gpu0, 1000.05, 1000.15, {"DCGM_FI_PROF_SM_ACTIVE"}, 3);
  EXPECT_EQ(inside.flags, std::vector<std::string>{kFieldFlagFewSamples});
  // A field the set needs that the log lacks: named, with the dmon field id to record.
  EXPECT_NE(ErrorOf([&] {
              AverageFieldWindow(log, *gpu0, 1000, 1001, {"DCGM_FI_PROF_PIPE_FP64_ACTIVE"}, 1);
            })
                .find("DCGM_FI_PROF_PIPE_FP64_ACTIVE: the log has no column for this field: record "
                      "it, dcgmi dmon -e 1006"),
            std::string::npos);
}

TEST(FieldLog, DmonErrorsNameFileAndLine) {
  const std::string dir = ScratchDir();
  FieldLogOptions timed;
  timed.dmon_interval_ms = 100;
  const std::string cut = WriteFile(dir + "/cut.txt", std::string(kDmon) + "GPU 0     0.9");
  EXPECT_NE(ErrorOf([&] { ReadFieldLog(cut, timed); }).find("cut.txt:11"), std::string::npos);
  const std::string bad = WriteFile(dir + "/bad.txt", "#Entity SMACT\nGPU 0 0.5x\n");
  EXPECT_NE(ErrorOf([&] {
              ReadFieldLog(bad, timed);
            }).find("bad.txt:2: DCGM_FI_PROF_SM_ACTIVE: expected a number or N/A, got '0.5x'"),
            std::string::npos);
  const std::string short_row = WriteFile(dir + "/short.txt", "#Entity SMACT DRAMA\nGPU 0 0.5\n");
  EXPECT_NE(ErrorOf([&] { ReadFieldLog(short_row, timed); }).find("short.txt:2"),
            std::string::npos);
  // An empty (or blank) log is named as empty, whatever format was meant.
  for (const char* text : {"", "\n  \n"}) {
    const std::string empty = WriteFile(dir + "/empty.txt", text);
    EXPECT_NE(
        ErrorOf([&] { ReadFieldLog(empty, timed); }).find("empty.txt: the field log is empty"),
        std::string::npos);
  }
  const std::string untimed = WriteFile(dir + "/untimed.txt", "#Entity SMACT\nGPU 0 0.5\n");
  EXPECT_NE(ErrorOf([&] { ReadFieldLog(untimed); }).find("give the -d delay"), std::string::npos);
  // ts-prefixed lines carry their own time.
  const std::string ts = WriteFile(dir + "/ts.txt",
                                   "2026-11-29T10:00:00.000 #Entity SMACT\n"
                                   "2026-11-29T10:00:00.000 GPU 0 0.5\n"
                                   "2026-11-29T10:00:01.000 GPU 0 0.7\n");
  const FieldLog log = ReadFieldLog(ts);
  EXPECT_DOUBLE_EQ(log.series[0].time_s[1] - log.series[0].time_s[0], 1.0);
}

TEST(FieldLog, ExporterFileAndScrapeDirectoryByUuidAndMigInstance) {
  const std::string dir = ScratchDir();
  const std::string labels0 =
      R"({gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="n1"})";
  const std::string labels_mig =
      R"({gpu="1",UUID="GPU-bbbb",GPU_I_PROFILE="1g.10gb",GPU_I_ID="3",Hostname="n1"})";
  std::string file =
      "# HELP DCGM_FI_PROF_SM_ACTIVE The ratio of cycles an SM has at least 1 warp assigned.\n"
      "# TYPE DCGM_FI_PROF_SM_ACTIVE gauge\n";
  for (int k = 0; k < 3; ++k) {
    const std::string t = std::to_string(1795946400000 + k * 1000);
    file += "DCGM_FI_PROF_SM_ACTIVE" + labels0 + " 0." + std::to_string(k + 1) + " " + t + "\n";
    file += "DCGM_FI_PROF_SM_ACTIVE" + labels_mig + " 0.9 " + t + "\n";
    file += "DCGM_FI_DEV_POWER_USAGE" + labels0 + " 200 " + t + "\n";
  }
  const FieldLog log = ReadFieldLog(WriteFile(dir + "/scrapes.prom", file));
  EXPECT_EQ(log.format, "dcgm-exporter");
  const FieldSeries* gpu0 = log.Find("GPU-aaaa");
  ASSERT_NE(gpu0, nullptr);
  EXPECT_EQ(gpu0, log.Find("0"));
  ASSERT_EQ(gpu0->time_s.size(), 3u);
  EXPECT_DOUBLE_EQ(gpu0->time_s[2], 1795946402.0);
  const FieldSeries* mig = log.Find("1", "3");
  ASSERT_NE(mig, nullptr);
  EXPECT_EQ(mig->uuid, "GPU-bbbb");
  EXPECT_EQ(log.Find("1"), nullptr);  // only a MIG instance of GPU 1 is in the log
  const FieldWindowMeans w =
      AverageFieldWindow(log, *gpu0, 1795946400, 1795946402, {"DCGM_FI_PROF_SM_ACTIVE"}, 3);
  EXPECT_NEAR(w.means.at("DCGM_FI_PROF_SM_ACTIVE"), 0.2, 1e-12);
  EXPECT_TRUE(w.flags.empty());

  // The same scrapes as a directory of files named by their time, lines without timestamps.
  boost::filesystem::create_directory(dir + "/scrapes");
  for (int k = 0; k < 3; ++k) {
    WriteFile(dir + "/scrapes/" + std::to_string(1795946400 + k) + ".prom",
              "DCGM_FI_PROF_SM_ACTIVE" + labels0 + " 0." + std::to_string(k + 1) + "\n");
  }
  const FieldLog scraped = ReadFieldLog(dir + "/scrapes");
  ASSERT_EQ(scraped.series.size(), 1u);
  EXPECT_EQ(scraped.series[0].time_s, (std::vector<double>{1795946400, 1795946401, 1795946402}));
  WriteFile(dir + "/scrapes/latest.prom", "DCGM_FI_PROF_SM_ACTIVE" + labels0 + " 0.1\n");
  EXPECT_NE(ErrorOf([&] { ReadFieldLog(dir + "/scrapes"); }).find("latest.prom"),
            std::string::npos);
  const std::string untimed =
      WriteFile(dir + "/one.prom", "DCGM_FI_PROF_SM_ACTIVE" + labels0 + " 0.1\n");
  EXPECT_NE(ErrorOf([&] { ReadFieldLog(untimed); }).find("one.prom:1"), std::string::npos);
}

TEST(SlurmJobs, ParsableTwoWithStepsRunningJobsAndGpuIndices) {
  const std::string path = WriteFile(
      ScratchDir() + "/sacct.txt",
      "JobID|Start|End|NodeList|AllocTRES|AdminComment\n"
      "101|2026-11-29T10:00:00|2026-11-29T10:01:00|gpu[01-02]|billing=8,cpu=8,gres/gpu=2,node=2|"
      "gpu:h100:2(IDX:0-1)\n"
      "101.batch|2026-11-29T10:00:00|2026-11-29T10:01:00|gpu01|cpu=8,gres/gpu=2|\n"
      "102|2026-11-29T10:02:00|Unknown|gpu01|cpu=4,gres/gpu=1|\n");
  const std::vector<SlurmJob> jobs = ReadSacctJobs(path);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].job_id, "101");
  EXPECT_EQ(jobs[0].gpus, (std::vector<int>{0, 1}));
  EXPECT_DOUBLE_EQ(jobs[0].end_s - jobs[0].start_s, 60.0);
  EXPECT_TRUE(std::isnan(jobs[1].end_s));
  EXPECT_EQ(jobs[1].gpu_count, 1);
  EXPECT_TRUE(jobs[1].gpus.empty());
  EXPECT_TRUE(NodeListHas("gpu[01-02]", "gpu02"));
  EXPECT_FALSE(NodeListHas("gpu[01-02]", "gpu03"));
  EXPECT_TRUE(NodeListHas("a1,b[2-3,5]", "b5"));
  const std::string bad =
      WriteFile(ScratchDir() + "/bad.txt", "JobID|Start|End\n7|yesterday|2026-11-29T10:00:00\n");
  EXPECT_NE(ErrorOf([&] { ReadSacctJobs(bad); }).find("bad.txt:2: Start: expected a time"),
            std::string::npos);
  const std::string no_end = WriteFile(ScratchDir() + "/no_end.txt", "JobID|Start\n");
  EXPECT_NE(ErrorOf([&] { ReadSacctJobs(no_end); }).find("End: missing column"), std::string::npos);
}

// A fixed model on the H100 DCGM field set's layout: the known truth the per-job test recovers.
PowerModel H100FieldModel(const FieldSet& set) {
  PowerModel m;
  m.method = FitMethod::kFixed;
  m.layout = set.ToLayout();
  m.freq_levels_mhz = {{1980.0}, {2619.0}};
  m.voltage_rel = {{1.0}, {1.0}};
  m.static_w = {80.0, 0.0};
  m.idle_dyn_w_per_mhz = {0.0, 0.0};
  // SM_ACTIVE, PIPE_INT, PIPE_FP32, PIPE_FP64, PIPE_FP16, TENSOR_HMMA, TENSOR_IMMA | DRAM_ACTIVE,
  // W at full use / MHz.
  const std::vector<double> full_w = {60, 90, 150, 200, 80, 350, 250, 180};
  for (size_t i = 0; i < full_w.size(); ++i) {
    m.component_w_per_mhz.push_back(full_w[i] / (i < 7 ? 1980.0 : 2619.0));
  }
  m.trained_on = "synthetic truth";
  return m;
}

// Per job: a dmon log of 2 GPUs at 10 Hz whose power is the truth's plus seeded noise, a sacct
// table in --parsable2 form; measured and predicted energy agree, the split sums to the
// prediction, and every defect of the issue is a flag or an error, never a silent number.
TEST(FieldJobs, SacctWindowsOverADmonLogGiveEnergyAndSplit) {
  const std::string dir = ScratchDir();
  const FieldSet set = ReadFieldSet(kH100Dcgm);
  const PowerModel truth = H100FieldModel(set);
  const std::string model_path = WriteFile(dir + "/model.json", ModelToJson(truth));
  Rng rng(38);
  std::string dmon =
      "#Entity  SMACT INTAC FP32A FP64A FP16A THMMA TIMMA DRAMA POWINST\n"
      "ID                                                     W\n";
  const double t0 = 1795946400.0;   // 2026-11-29T10:00:00Z
  for (int k = 0; k < 1200; ++k) {  // 120 s at 100 ms
    for (int gpu = 0; gpu < 2; ++gpu) {
      // Job phases: GPU 0 runs FP32 + DRAM work for the first minute, tensor work after.
      const bool tensor = k >= 600;
      const std::vector<double> u = gpu == 1 ? std::vector<double>(8, 0.0)
                                    : tensor
                                        ? std::vector<double>{0.95, 0.1, 0.1, 0, 0, 0.8, 0, 0.4}
                                        : std::vector<double>{0.9, 0.3, 0.7, 0, 0, 0, 0, 0.5};
      const double p = truth.PredictAtDefault(u.data()) + 3.0 * rng.Normal();
      std::string row = "GPU " + std::to_string(gpu);
      for (double x : u) row += " " + std::to_string(x);
      dmon += row + " " + (k == 700 && gpu == 0 ? std::string("N/A") : std::to_string(p)) + "\n";
    }
  }
  WriteFile(dir + "/dmon.txt", dmon);
  WriteFile(dir + "/sacct.txt",
            "JobID|Start|End|NodeList|AllocTRES|AdminComment\n"
            "501|2026-11-29T10:00:10|2026-11-29T10:00:50|gpu01|gres/gpu=1|gpu:h100:1(IDX:0)\n"
            "502|2026-11-29T10:01:05|2026-11-29T10:01:55|gpu01|gres/gpu=1|gpu:h100:1(IDX:0)\n"
            "503|2026-11-29T10:00:00|2026-11-29T10:01:00|gpu01|gres/gpu=1|gpu:h100:1(IDX:3)\n"
            "504|2026-11-29T10:01:30|2026-11-29T10:03:00|gpu01|gres/gpu=2|gpu:h100:2(IDX:0-1)\n"
            "505|2026-11-29T10:01:00|Unknown|gpu01|gres/gpu=1|gpu:h100:1(IDX:1)\n"
            "506|2026-11-29T10:00:00|2026-11-29T10:00:30|gpu07|gres/gpu=1|gpu:h100:1(IDX:0)\n");
  const testing::CommandResult r =
      RunStage("wattcal-fields", {"--fields", kH100Dcgm, "--sacct", dir + "/sacct.txt",
                                  "--field-log", dir + "/dmon.txt", "--dmon-interval-ms", "100",
                                  "--dmon-start-s", std::to_string(t0), "--model", model_path,
                                  "--node", "gpu01", "--out", dir + "/jobs.csv"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string table = ReadFile(dir + "/jobs.csv");
  EXPECT_EQ(table.substr(0, table.find('\n')),
            "job_id,gpu,start_s,duration_s,field_samples,power_samples,measured_w,"
            "measured_energy_j,predicted_w,predicted_energy_j,energy_error_pct,base_energy_j,"
            "energy_j:SM_ACTIVE,energy_j:PIPE_INT,energy_j:PIPE_FP32,energy_j:PIPE_FP64,"
            "energy_j:PIPE_FP16,energy_j:TENSOR_HMMA,energy_j:TENSOR_IMMA,energy_j:DRAM_ACTIVE,"
            "flags");

  EXPECT_NE(table.find("\n501,0,1795946410.000,40,401,401,"), std::string::npos) << table;
  // The same rows through the library, to check the numbers.
  FieldLogOptions lo;
  lo.dmon_interval_ms = 100;
  lo.dmon_start_s = t0;
  JobEnergyOptions jo;
  jo.node = "gpu01";
  const std::vector<JobEnergyRow> rows = JobEnergies(
      ReadSacctJobs(dir + "/sacct.txt"), ReadFieldLog(dir + "/dmon.txt", lo), set, truth, jo);
  ASSERT_EQ(rows.size(), 6u);  // 501, 502, 503, 504 x 2 GPUs, 505; 506 ran on another node
  constexpr double kEnergyTolerancePct = 0.5;  // 3 W noise over 400+ samples of ~600 W
  for (int i : {0, 1}) {
    SCOPED_TRACE(rows[i].job_id);
    EXPECT_EQ(rows[i].flags, "");
    EXPECT_NEAR(rows[i].predicted_energy_j, rows[i].measured_energy_j,
                rows[i].measured_energy_j * kEnergyTolerancePct / 100);
    double split = rows[i].base_energy_j;
    for (double e : rows[i].component_energy_j) split += e;
    EXPECT_NEAR(split, rows[i].predicted_energy_j, 1e-6 * rows[i].predicted_energy_j);
  }
  EXPECT_EQ(rows[0].field_samples, 401);          // 40 s at 10 Hz, both ends included
  EXPECT_GT(rows[0].component_energy_j[2], 0.0);  // FP32 work in the first minute ...
  EXPECT_DOUBLE_EQ(rows[0].component_energy_j[5], 0.0);
  EXPECT_GT(rows[1].component_energy_j[5], rows[1].component_energy_j[2]);  // ... tensor after
  EXPECT_EQ(rows[1].power_samples, rows[1].field_samples - 1);  // the N/A power reading left out
  EXPECT_EQ(rows[2].flags, kJobFlagGpuNotInLog);
  EXPECT_TRUE(std::isnan(rows[2].measured_energy_j));
  EXPECT_EQ(rows[3].flags, kFieldFlagOutsideLog);  // ends a minute after the log
  EXPECT_EQ(rows[4].gpu, "1");
  EXPECT_EQ(rows[5].flags, kJobFlagStillRunning);
  EXPECT_TRUE(std::isnan(rows[5].predicted_energy_j));

  // A field the set needs that the log lacks is an error naming the log and the field.
  WriteFile(dir + "/no_fp64.txt", "#Entity SMACT POWER\nGPU 0 0.5 300\n");
  const testing::CommandResult missing =
      RunStage("wattcal-fields", {"--fields", kH100Dcgm, "--sacct", dir + "/sacct.txt",
                                  "--field-log", dir + "/no_fp64.txt", "--dmon-interval-ms", "100",
                                  "--model", model_path, "--out", dir + "/jobs2.csv"});
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find("no_fp64.txt"), std::string::npos) << missing.output;
  EXPECT_NE(missing.output.find("dcgmi dmon -e 1016"), std::string::npos) << missing.output;
}

}  // namespace
}  // namespace wattcal
