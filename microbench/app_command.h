// The --app command of wattcal-capture (app_runner.h does the recording): picks the GPU the
// program will run on, opens NVML there, describes the GPU, and maps the outcome to an exit
// code. Host code (no CUDA): it builds and runs on any machine with the NVIDIA driver.
#pragma once

#include <string>

#include "app_runner.h"

namespace wattcal::capture {

struct AppCommand {
  AppCaptureOptions options;
  // NVML's index of the GPU to sample; -1 = the first GPU of CUDA_VISIBLE_DEVICES (an index or
  // a GPU-... UUID), else 0.
  int device = -1;
  // microbench_specs/gpus/*.json whose metrics --counters collects ("" = DefaultMetrics()).
  std::string gpu_description;
  // --fields: "gpm" or a GPM field set whose metrics are recorded beside the power ("" = none).
  std::string fields;
};

// Records the application. Exit codes: 0 done, 1 invalid options, 2 no GPU / NVML / ncu or a
// bad marks file, 3 the run failed (the command's status, an interruption, ncu).
int RunAppCommand(AppCommand command);

}  // namespace wattcal::capture
