#include "fleet/fleet_stage.h"

#include <fmt/format.h>

#include <filesystem>
#include <sstream>

#include "fleet/fleet_report.h"
#include "fleet/fleet_table.h"
#include "util/errors.h"
#include "util/json_file.h"
#include "util/logging.h"
#include "util/output.h"
#include "util/strings.h"

namespace wattcal {

namespace fs = std::filesystem;

void FleetStageOptions::Check() const {
  if (gpus.empty())
    throw OptionError("--gpu: give the description of each GPU model (one or more)");
  if (out_dir.empty()) throw OptionError("--out: give the folder of the fleet report");
  if (captures.empty() && captures_from.empty())
    throw OptionError("--capture / --captures-from: give at least one capture directory");
  std::string error;
  if (!reduce.Check(&error)) throw OptionError(error);
}

std::vector<std::string> ReadCaptureList(const std::string& path) {
  std::istringstream in(ReadFileText(path, "--captures-from"));
  std::vector<std::string> dirs;
  std::string line;
  int64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    for (const char c : line) {
      if (static_cast<unsigned char>(c) < 0x20 && c != '\t')
        throw InputError(path, number, "", "not a line of text (a directory a line is expected)");
    }
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    const size_t last = line.find_last_not_of(" \t");
    dirs.push_back(line.substr(first, last - first + 1));
  }
  return dirs;
}

namespace {

// The report folder is never a capture directory nor inside one (a capture is never written into).
void RefuseOutInsideCapture(const std::string& out_dir, const std::vector<std::string>& captures) {
  const fs::path out = fs::weakly_canonical(fs::absolute(out_dir));
  if (fs::exists(out / "windows.csv")) {
    throw OptionError(
        fmt::format("--out {}: a capture directory (it holds windows.csv): the fleet "
                    "report goes elsewhere",
                    out_dir));
  }
  for (const std::string& c : captures) {
    const fs::path dir = fs::weakly_canonical(fs::absolute(c));
    const std::string rel = out.lexically_relative(dir).generic_string();
    if (!rel.empty() && rel.rfind("..", 0) != 0) {
      throw OptionError(
          fmt::format("--out {} is inside the capture directory {}: the fleet report "
                      "goes elsewhere; a capture is never written into",
                      out_dir, c));
    }
  }
}

nlohmann::json OptionsJson(const FleetStageOptions& o, size_t captures) {
  return {{"captures", captures},
          {"captures_from", o.captures_from},
          {"gpus", o.gpus},
          {"bootstrap", o.reduce.fit.bootstrap_replicates},
          {"seed", o.reduce.fit.seed},
          {"cv_folds", o.reduce.fit.cv_folds},
          {"common_benchmarks", o.reduce.fit.common_benchmarks},
          {"max_matrix_gpus", o.reduce.max_matrix_gpus},
          {"settle_ms", o.reduce.fit.capture.settle_ms}};
}

// Not one of the capture paths exists: a wrong folder or list (relative paths from another working
// directory), not a fleet whose every task failed, so no report of N "does not exist" rows.
void RefuseWhenNoCaptureExists(const std::vector<std::string>& captures, const std::string& list) {
  for (const std::string& c : captures)
    if (fs::exists(c)) return;
  std::string hint;
  const fs::path first(captures.front());
  const fs::path beside = list.empty() ? fs::path() : fs::path(list).parent_path() / first;
  if (!list.empty() && first.is_relative() && fs::exists(beside)) {
    hint = fmt::format(
        ": relative paths in a --captures-from list are read from the working directory, and {} "
        "is there from the list's folder; run from {} or list absolute paths",
        beside.string(), fs::absolute(list).parent_path().string());
  } else if (first.is_relative()) {
    hint = fmt::format(" (relative paths are read from the working directory, {})",
                       fs::current_path().string());
  }
  throw InputError(list.empty() ? "--capture" : list, 0, "",
                   fmt::format("none of the {} capture paths exists (the first: {}){}",
                               captures.size(), captures.front(), hint));
}

}  // namespace

FleetStageReport RunFleetStage(const FleetStageOptions& o) {
  o.Check();
  std::vector<std::string> captures = o.captures;
  if (!o.captures_from.empty()) {
    const std::vector<std::string> listed = ReadCaptureList(o.captures_from);
    captures.insert(captures.end(), listed.begin(), listed.end());
  }
  if (captures.empty()) throw InputError(o.captures_from, 0, "", "lists no capture directory");
  RefuseWhenNoCaptureExists(captures, o.captures_from);
  RefuseOutInsideCapture(o.out_dir, captures);
  const std::vector<FleetDescription> descriptions = ReadFleetDescriptions(o.gpus);
  FleetStageReport report;
  report.fleet = ReduceFleet(captures, descriptions, o.reduce);
  const FleetResult& fleet = report.fleet;

  std::vector<std::string> inputs = o.gpus;
  if (!o.captures_from.empty()) inputs.push_back(o.captures_from);
  inputs.insert(inputs.end(), fleet.inputs.begin(), fleet.inputs.end());
  const nlohmann::json options = OptionsJson(o, captures.size());
  const std::string settings =
      fmt::format("Settings: {} bootstrap replicates per GPU, {}-fold CV by benchmark, seed {}.",
                  o.reduce.fit.bootstrap_replicates, o.reduce.fit.cv_folds, o.reduce.fit.seed);
  OutputSet outputs;
  const std::string csv = o.out_dir + "/fleet.csv";
  const std::string cross = o.out_dir + "/cross_prediction.csv";
  outputs.StageText(csv, FleetCsv(fleet));
  outputs.StageText(cross, CrossPredictionCsv(fleet));
  const std::vector<std::string> pages = StageFleetReport(fleet, o.out_dir, settings, &outputs);
  // Every input once, with the first output (one record for the run).
  outputs.StageProvenance(csv, "fleet", inputs, options, "fleet");
  outputs.StageProvenance(cross, "fleet", {}, options, "cross_prediction");
  for (const std::string& p : pages) outputs.StageProvenance(p, "fleet", {}, options, "report");
  outputs.Commit();
  report.written = outputs.Outputs();
  const int reduced = static_cast<int>(fleet.gpus.size()) - fleet.failed();
  report.brief = fmt::format("{} GPUs reduced, {} captures or GPUs not: {}", reduced,
                             fleet.failed(), o.out_dir + "/index.html");
  LogInfo("wrote " + csv + " and " + o.out_dir + "/index.html");
  if (fleet.failed() > 0) {
    LogWarning(
        fmt::format("{} of {} GPUs or captures were not reduced (status and message in {}; "
                    "the report lists them): exit {}",
                    fleet.failed(), fleet.gpus.size(), csv, kExitPartial));
    report.exit_code = kExitPartial;
  }
  return report;
}

}  // namespace wattcal
