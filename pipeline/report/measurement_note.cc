// What a run report says about how a training table's power was measured (report/run_report.h
// ReportCorpus::measurement_note), from the provenance of the ingest run that wrote it.
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/internal/run_report_internal.h"
#include "util/json_file.h"
#include "util/output.h"

namespace fs = std::filesystem;

namespace wattcal::report_internal {

// What the ingest run's provenance says about a measured table's power (wattcal-ingest
// --capture records options.power_sources), with the table's board limit and flagged rows.
std::string MeasurementNote(const Corpus& corpus, const std::string& path) {
  std::string note;
  const std::string provenance = FindProvenanceOf(path);
  if (!provenance.empty()) {
    try {
      const nlohmann::json j = ReadJsonFile(provenance, "file for reading");
      // The output's own options when it has them, else the run's.
      const nlohmann::json* options = j.contains("options") ? &j["options"] : nullptr;
      for (const nlohmann::json& o : j.value("outputs", nlohmann::json::array())) {
        if (fs::path(o.value("path", "")).filename() == fs::path(path).filename() &&
            o.contains("options")) {
          options = &o["options"];
        }
      }
      const nlohmann::json* sources = nullptr;
      if (options != nullptr && options->contains("power_sources"))
        sources = &(*options)["power_sources"];
      if (sources != nullptr && sources->is_array() && !sources->empty()) {
        note += "Measured power: ";
        for (size_t i = 0; i < sources->size(); ++i) {
          const nlohmann::json& e = (*sources)[i];
          note += fmt::format(
              "{}{} from {} ({})", i > 0 ? "; " : "", e.value("power_source", std::string("?")),
              e.value("power_log", std::string("?")), e.value("capture", std::string("?")));
        }
        note += " (preference: energy counter, then instant power, then 1-s averaged power). ";
      }
    } catch (const std::exception&) {
      // A provenance file that cannot be read says nothing about the power.
    }
  }
  if (corpus.power_limit_w) {
    note += fmt::format("Board power limit {:g} W. ", *corpus.power_limit_w);
  }
  if (corpus.has_flags()) {
    std::vector<std::string> flagged;
    // The rows calibrate leaves out, by its own rule (power_cap or clock_moved).
    for (int i = 0; i < corpus.rows(); ++i) {
      if (IsThrottledRow(corpus, i)) {
        flagged.push_back(fmt::format("{} [{}]", corpus.benchmark[static_cast<size_t>(i)],
                                      corpus.flags[static_cast<size_t>(i)]));
      }
    }
    if (!flagged.empty()) {
      note += fmt::format(
          "{} of {} rows are flagged (left out of training unless calibrate "
          "--keep-flagged): ",
          flagged.size(), corpus.rows());
      for (size_t i = 0; i < flagged.size(); ++i) note += (i > 0 ? ", " : "") + flagged[i];
      note += ".";
    }
  }
  while (!note.empty() && note.back() == ' ') note.pop_back();
  return note;
}

}  // namespace wattcal::report_internal
