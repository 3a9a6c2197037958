// Slurm accounting as `sacct --parsable2` prints it: the jobs whose windows a field/power log is
// cut into (ingest/job_energy.h).
//
//   sacct --parsable2 --allocations --format=JobID,Start,End,NodeList,AllocTRES[,...]
//   JobID|Start|End|NodeList|AllocTRES
//   4242|2026-11-29T10:00:00|2026-11-29T10:05:00|gpu01|billing=8,cpu=8,gres/gpu=2,mem=64G,node=1
//
// The header names the columns (any order; JobID, Start and End are required). Job steps
// (`4242.batch`, `4242.0`) are skipped: the allocation row holds the job's window. Start and End
// are local time without a zone (SlurmOptions::utc_offset_h is subtracted); End `Unknown` (a
// job still running) leaves the job without an end and flagged. Which GPUs a job held: a
// `GPUs` (or `GpuIdx`, `GRES_IDX`) column, or any cell with Slurm's `IDX:0-1,3` detail (e.g.
// `gpu:h100:2(IDX:0-1)` from `scontrol show job -d`, often copied into AdminComment or Comment);
// without one, AllocTRES's gres/gpu=N gives only the count. Every problem is an InputError
// naming FILE:LINE and the column.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace wattcal {

struct SlurmJob {
  std::string job_id;
  // Seconds since the Unix epoch (UTC after the offset); end_s NaN while the job runs.
  double start_s = 0.0;
  double end_s = 0.0;
  // NodeList as printed (`gpu01`, `gpu[01-04]`).
  std::string nodes;
  // GPU indices the job held on its node; empty when the table gives only the count.
  std::vector<int> gpus;
  // gres/gpu=N of AllocTRES (or the number of indices); 0 when neither is given.
  int gpu_count = 0;
  // The sacct file and the job's line in it (for error messages).
  std::string path;
  int64_t line = 0;
};

struct SlurmOptions {
  // Hours the accounting's clock was ahead of UTC (sacct prints local time).
  double utc_offset_h = 0.0;
};

// Reads `sacct --parsable2` output (throws InputError).
std::vector<SlurmJob> ReadSacctJobs(const std::string& path, const SlurmOptions& options = {});

// Whether a NodeList (`gpu01`, `gpu[01-04,07]`, `a1,b[2-3]`) names `node`.
bool NodeListHas(const std::string& node_list, const std::string& node);

}  // namespace wattcal
