#include "usecases/report_stage.h"

#include <boost/filesystem.hpp>
#include <fmt/format.h>

#include <utility>

#include "report/gnuplot_figure.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/output.h"

namespace wattcal {

ReportOptions ReportStageOptions::Check() const {
  ReportOptions options = report;
  for (const std::string& m : models) options.models.push_back(ParseLabelledPath(m));
  options.figures = !no_figures;
  std::vector<std::pair<std::string, std::string>> named;  // (flag, file)
  for (const LabelledPath& m : options.models) named.emplace_back("--model", m.path);
  for (const std::string& p : options.predictions) {
    named.emplace_back("--predictions", ParseLabelledPath(p).path);
  }
  for (const auto& [flag, file] : named) {
    if (!boost::filesystem::is_regular_file(file)) {
      throw OptionError(flag + " " + file + ": no such file");
    }
  }
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  if (options.figures && !GnuplotAvailable()) {
    throw OptionError(
        "gnuplot is not available to draw the figures: install gnuplot (e.g. "
        "apt-get install gnuplot-nox) and re-run cmake, or pass --no-figures");
  }
  return options;
}

ReportStageReport RunReportStage(const ReportStageOptions& o) {
  const ReportOptions options = o.Check();
  const RunReport report = CollectRunReport(options);
  OutputSet outputs;
  StageRunReport(report, options, &outputs);
  outputs.Commit();
  ReportStageReport r;
  r.written = outputs.Outputs();
  r.out_dir = options.EffectiveOutDir();
  r.figures = options.figures ? report.figures.size() : 0;
  LogInfo(fmt::format("wrote {}/index.html and index.md ({} figures)", r.out_dir, r.figures));
  r.exit_code = static_cast<int>(kExitOk);
  return r;
}

}  // namespace wattcal
