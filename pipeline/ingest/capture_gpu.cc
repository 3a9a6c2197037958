#include "ingest/capture_gpu.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "ingest/internal/capture_flags.h"
#include "util/errors.h"
#include "util/strings.h"

namespace fs = std::filesystem;

namespace wattcal {

namespace {

// A cell of a CSV or text line without its blanks and, in a quoted CSV cell, its quotes.
std::string Cell(const std::string& s) {
  std::string t = Trim(s);
  if (t.size() >= 2 && t.front() == '"' && t.back() == '"') t = Trim(t.substr(1, t.size() - 2));
  return t;
}

// capture.json's gpu object, checked; false when the directory has no capture.json or it names
// no GPU. The file is read strictly (capture_flags.h ReadCaptureJson: not JSON, or not an object,
// is an InputError naming it).
bool FromCaptureJson(const std::string& dir, CaptureGpu* gpu) {
  const nlohmann::json j = capture_internal::ReadCaptureJson(dir);
  if (j.is_null() || !j.contains("gpu")) return false;
  const std::string path = (fs::path(dir) / "capture.json").string();
  if (!j["gpu"].is_object()) throw InputError(path, 0, "gpu", "expected an object");
  for (const char* key : {"name", "uuid"}) {
    const nlohmann::json& gpu_json = j["gpu"];
    if (!gpu_json.contains(key)) continue;
    const nlohmann::json& v = gpu_json[key];
    const std::string field = std::string("gpu.") + key;
    if (!v.is_string()) throw InputError(path, 0, field, "expected a string");
    for (char c : v.get<std::string>()) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
        throw InputError(path, 0, field, "holds a control character");
    }
    (std::string(key) == "name" ? gpu->name : gpu->uuid) = v.get<std::string>();
  }
  gpu->source = path;
  return !gpu->name.empty();
}

// The first data row of an nvidia-smi --query-gpu log with a header naming `name` (and `uuid`).
bool FromSmiLog(const std::string& path, CaptureGpu* gpu) {
  std::ifstream in(path);
  std::string header, row;
  if (!std::getline(in, header) || !std::getline(in, row)) return false;
  std::vector<std::string> h, v;
  std::stringstream hs(header), rs(row);
  for (std::string c; std::getline(hs, c, ',');) h.push_back(Cell(c));
  for (std::string c; std::getline(rs, c, ',');) v.push_back(Cell(c));
  for (size_t i = 0; i < h.size() && i < v.size(); ++i) {
    if (h[i] == "name") gpu->name = v[i];
    if (h[i] == "uuid") gpu->uuid = v[i];
  }
  gpu->source = path;
  return !gpu->name.empty();
}

// nvidia-smi -q: the first GPU's Product Name and GPU UUID.
bool FromSmiQuery(const std::string& path, CaptureGpu* gpu) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = Cell(line.substr(0, colon));
    if (key == "Product Name" && gpu->name.empty()) gpu->name = Cell(line.substr(colon + 1));
    if (key == "GPU UUID" && gpu->uuid.empty()) gpu->uuid = Cell(line.substr(colon + 1));
    if (!gpu->name.empty() && !gpu->uuid.empty()) break;
  }
  gpu->source = path;
  return !gpu->name.empty();
}

}  // namespace

CaptureGpu ReadCaptureGpu(const std::string& dir) {
  const fs::path d(dir);
  std::error_code ec;
  CaptureGpu gpu;
  if (FromCaptureJson(dir, &gpu)) return gpu;
  gpu = CaptureGpu();
  if (fs::is_regular_file(d / "nvidia_smi_power.csv", ec) &&
      FromSmiLog((d / "nvidia_smi_power.csv").string(), &gpu))
    return gpu;
  gpu = CaptureGpu();
  if (fs::is_regular_file(d / "nvidia_smi_q.txt", ec) &&
      FromSmiQuery((d / "nvidia_smi_q.txt").string(), &gpu))
    return gpu;
  return CaptureGpu();
}

std::string DescribeCaptureGpu(const CaptureGpu& gpu) {
  if (gpu.name.empty()) return "an unnamed GPU";
  return gpu.name + (gpu.uuid.empty() ? "" : " (" + gpu.uuid + ")") + ", per " + gpu.source;
}

}  // namespace wattcal
