#include "app_command.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "io/gpu_description.h"
#include "nvml_loader.h"
#include "recording_guard.h"
#include "util/errors.h"
#include "util/logging.h"

namespace wattcal::capture {

namespace {

// The GPU the program will see first: --device, else CUDA_VISIBLE_DEVICES' first entry.
bool ChooseDevice(int device, unsigned* index, std::string* uuid, std::string* error) {
  if (device >= 0) {
    *index = static_cast<unsigned>(device);
    return true;
  }
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  *index = 0;
  if (visible == nullptr || visible[0] == '\0') return true;
  std::string first(visible);
  first = first.substr(0, first.find(','));
  if (first.rfind("GPU-", 0) == 0) {
    *uuid = first;
    return true;
  }
  if (first.rfind("MIG-", 0) == 0) {
    *error = fmt::format("CUDA_VISIBLE_DEVICES={}: a MIG instance: NVML reports the power of the whole GPU, "
                         "which other instances share; record on a whole GPU",
                         visible);
    return false;
  }
  char* end = nullptr;
  const long i = std::strtol(first.c_str(), &end, 10);
  if (end == first.c_str() || *end != '\0' || i < 0) {
    *error = fmt::format("CUDA_VISIBLE_DEVICES={}: cannot tell which GPU the program uses; give --device N "
                         "(NVML's index, as nvidia-smi numbers them)",
                         visible);
    return false;
  }
  *index = static_cast<unsigned>(i);
  return true;
}

}  // namespace

int RunAppCommand(AppCommand c) {
  AppCaptureOptions& o = c.options;
  if (o.counters) {
    try {
      // What an export must give: the description's time bases and required components'
      // metrics; without a description, the time bases ingest's default description reads.
      const GpuDescription description =
          c.gpu_description.empty() ? GpuDescription() : ReadGpuDescription(c.gpu_description);
      o.metrics = c.gpu_description.empty() ? DefaultMetrics() : description.Metrics();
      o.required_metrics = description.RequiredMetrics();
    } catch (const std::exception& e) {
      LogError(fmt::format("--gpu-description: {}", e.what()));
      return kExitOptions;
    }
  }
  std::string error;
  if (!c.fields.empty() && !ResolveFieldRecording(c.fields, &o.gpm_metric_ids, &o.gpm_metric_names, &error)) {
    LogError(error);
    return kExitOptions;
  }
  if (!o.Check(&error)) {
    LogError(error);
    return kExitOptions;
  }
  if (FindProgram(o.command.front()).empty()) {
    LogError(fmt::format("--app {}: '{}' is not an executable (on the PATH, or give its path)", o.name,
                         o.command.front()));
    return kExitOptions;
  }
  CaptureInfo info;
  if (o.counters) {
    const std::string ncu = FindProgram(o.ncu);
    if (ncu.empty()) {
      LogError(fmt::format("--counters: '{}' is not an executable on the PATH (install Nsight Compute, or give "
                           "--ncu PATH)",
                           o.ncu));
      return kExitInput;
    }
    o.ncu = ncu;
    info.ncu_version = LastLineOf(ShellJoin({o.ncu, "--version"}));
  }
  unsigned index = 0;
  std::string uuid;
  if (!ChooseDevice(c.device, &index, &uuid, &error)) {
    LogError(error);
    return kExitOptions;
  }
  Nvml nvml;
  if (!nvml.OpenByIndex(index, uuid, &error, NvmlLibraryFromEnvironment())) {
    LogError(error);
    return kExitInput;
  }
  nvml.Describe(&info);
  // --fields: refused here, before --out is touched, when this GPU or driver has no GPM.
  if (!o.gpm_metric_ids.empty() && !nvml.StartFieldSampling(o.gpm_metric_ids, &error)) {
    LogError(error);
    return kExitInput;
  }
  LogInfo(fmt::format("{} ({}): recording '{}' {} time{}{}", info.gpu_name, info.gpu_uuid, o.name, o.repeat,
                      o.repeat == 1 ? "" : "s", o.counters ? ", then its counters" : ""));
  try {
    const std::vector<WindowRecord> added = RunAppCapture(o, info, nvml, [&](const std::string& line) {
      std::fprintf(stderr, "%s\n", line.c_str());
      std::fflush(stderr);
    });
    LogInfo(fmt::format("done: {} window{} of '{}' in {}", added.size(), added.size() == 1 ? "" : "s", o.name,
                        o.out_dir));
    LogInfo(fmt::format("predict: wattcal-predict --model MODEL.json --capture {} --gpu "
                        "microbench_specs/gpus/<gpu>.json --out apps.csv",
                        o.out_dir));
    return kExitOk;
  } catch (const InputError& e) {
    LogError(e.what());
    return kExitInput;
  } catch (const Interrupted& e) {
    LogError(fmt::format("{}: the recording stopped and nothing was written: --out {} is as it was", e.what(),
                         o.out_dir));
    return kExitFit;
  } catch (const std::exception& e) {
    LogError(e.what());
    return kExitFit;
  }
}

}  // namespace wattcal::capture
