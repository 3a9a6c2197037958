// Provenance records (pipeline/util/output.h ParseProvenanceRecord), as wattcal-report and
// wattcal-check read them, and where each output they list resolves: a record is either read or
// refused with an InputError, and an output never resolves to a file outside the record's run
// folder (a file planted beside the run folder is never returned).
#include <boost/filesystem.hpp>

#include "fuzz_support.h"
#include "util/output.h"

namespace {

struct RunFolder {
  std::string root, run, record;
};

// A run folder with one output (model/model.json) and a file outside it, made once.
const RunFolder& Folder() {
  static const RunFolder folder = [] {
    RunFolder f;
    f.root = "/tmp/wattcal_fuzz_provenance_" + std::to_string(getpid());
    f.run = f.root + "/run";
    f.record = f.run + "/provenance/model/calibrate-model.json.json";
    boost::filesystem::create_directories(f.run + "/provenance/model");
    boost::filesystem::create_directories(f.run + "/model");
    for (const std::string& p : {f.run + "/model/model.json", f.root + "/outside.json"}) {
      std::FILE* out = std::fopen(p.c_str(), "wb");
      if (out != nullptr) std::fclose(out);
    }
    return f;
  }();
  return folder;
}

void ReadRecord(const std::string& text) {
  const RunFolder& f = Folder();
  const nlohmann::json record = wattcal::ParseProvenanceRecord(f.record, text);
  for (const nlohmann::json& output : record["outputs"]) {
    const std::string path = wattcal::ResolveRecordedOutput(f.record, output);
    const std::string relative =
        boost::filesystem::path(path).lexically_normal().lexically_relative(f.run).string();
    if (!path.empty() && (relative.empty() || relative.rfind("..", 0) == 0)) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  wattcal::SetLogLevel(wattcal::LogLevel::kQuiet);
  WATTCAL_FUZZ_BODY(ReadRecord(std::string(reinterpret_cast<const char*>(data), size)));
}
