// Field logs and sacct tables: dcgmi dmon text, dcgm-exporter Prometheus text
// (ingest/field_log.h), sacct --parsable2 (ingest/slurm_jobs.h), and a window's means.
#include "fuzz_support.h"
#include "ingest/field_log.h"
#include "ingest/slurm_jobs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = wattcal::fuzz::WriteInput(data, size);
  WATTCAL_FUZZ_BODY({
    wattcal::FieldLogOptions options;
    options.dmon_interval_ms = 100.0;  // lets dmon inputs without timestamps through
    const wattcal::FieldLog log = wattcal::ReadFieldLog(path, options);
    for (const wattcal::FieldSeries& s : log.series) {
      if (s.time_s.empty()) continue;
      wattcal::AverageFieldWindow(log, s, s.time_s.front(), s.time_s.back(), log.fields, 1);
    }
  });
  WATTCAL_FUZZ_BODY({
    for (const wattcal::SlurmJob& job : wattcal::ReadSacctJobs(path)) {
      wattcal::NodeListHas(job.nodes, "gpu01");
    }
  });
  return 0;
}
