// The GPU a capture directory was recorded on, read in one place (issue 35): wattcal-ingest
// --capture and wattcal-predict --capture compare it with the GPU description (--gpu) and the
// model, so that one GPU's data is never read through another GPU's description or model.
#pragma once

#include <string>

namespace wattcal {

struct CaptureGpu {
  // The product name as NVML and nvidia-smi give it ("NVIDIA H100 80GB HBM3"); "" when nothing in
  // the capture names the GPU.
  std::string name;
  // Its UUID ("GPU-e4ca9cc1-..."); "" when not recorded.
  std::string uuid;
  // The file that names it (capture.json, nvidia_smi_power.csv or nvidia_smi_q.txt).
  std::string source;
};

// The GPU of the capture directory `dir`: capture.json's gpu.name and gpu.uuid (wattcal-capture
// writes them), else the name and uuid columns of nvidia_smi_power.csv's first row, else
// nvidia_smi_q.txt's first Product Name and GPU UUID. A capture.json that is there is read
// strictly: InputError naming it (and the line) when it is not JSON, not an object, or its gpu is
// not an object whose name and uuid are strings of printable characters.
CaptureGpu ReadCaptureGpu(const std::string& dir);

// "NAME (UUID), per FILE" for messages; "an unnamed GPU" when the name is unknown.
std::string DescribeCaptureGpu(const CaptureGpu& gpu);

}  // namespace wattcal
