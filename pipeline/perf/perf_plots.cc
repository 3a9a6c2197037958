#include "perf/perf_plots.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <locale>
#include <sstream>
#include <stdexcept>

#include <boost/filesystem.hpp>
#include <fmt/format.h>
#include <gnuplot-iostream.h>

#include "report/validation_plots.h"
#include "util/logging.h"

namespace fs = boost::filesystem;

namespace wattcal {
namespace {

// The session handling below follows report/validation_plots.cc (whose renderer is private to
// that file): gnuplot reads the script as /dev/stdin so it stops at the first error, its
// messages and exit status go to a log, SIGPIPE is blocked while the pipe is open.
constexpr int kWidthPx = 800;
constexpr int kHeightPx = 600;
constexpr const char* kFont = "Sans,14";
constexpr const char* kStatusMarker = "wattcal-gnuplot-exit-status ";
// Okabe-Ito colours, one per series, with a dash type each for greyscale print.
constexpr const char* kColours[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                    "#E69F00", "#56B4E9", "#000000"};
constexpr int kColourCount = sizeof(kColours) / sizeof(kColours[0]);
// Smallest MAPE drawn on the logarithmic axis (an exact model would otherwise vanish).
constexpr double kMapeFloorPct = 0.01;

std::string GnuplotString(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') quoted += "''";
    else if (c == '\n' || c == '\r') quoted += ' ';
    else quoted += c;
  }
  return quoted + "'";
}

std::string ShellWord(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') quoted += "'\\''";
    else quoted += c;
  }
  return quoted + "'";
}

class ScopedSigpipeBlock {
 public:
  ScopedSigpipeBlock() {
    sigemptyset(&sigpipe_);
    sigaddset(&sigpipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &sigpipe_, &previous_);
  }
  ~ScopedSigpipeBlock() {
    if (sigismember(&previous_, SIGPIPE) == 1) return;
    const struct timespec no_wait = {0, 0};
    while (sigtimedwait(&sigpipe_, nullptr, &no_wait) == SIGPIPE) {
    }
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  ScopedSigpipeBlock(const ScopedSigpipeBlock&) = delete;
  ScopedSigpipeBlock& operator=(const ScopedSigpipeBlock&) = delete;

 private:
  sigset_t sigpipe_;
  sigset_t previous_;
};

void Render(const std::string& figure, const std::string& png_path, const std::string& svg_path,
            const std::function<void(Gnuplot*)>& body) {
  if (!GnuplotAvailable()) {
    throw std::runtime_error("cannot draw the " + figure +
                             ": gnuplot is not available (install gnuplot and re-run cmake)");
  }
#ifdef WATTCAL_GNUPLOT
  const std::string executable = WATTCAL_GNUPLOT;
#else
  const std::string executable = "gnuplot";
#endif
  const fs::path log_path =
      fs::temp_directory_path() / fs::unique_path("wattcal-gnuplot-%%%%-%%%%-%%%%.log");
  const std::string command = ShellWord(executable) + " /dev/stdin >/dev/null 2>" +
                              ShellWord(log_path.string()) + "; echo \"" + kStatusMarker +
                              "$?\" >>" + ShellWord(log_path.string());
  bool stream_ok = false;
  {
    ScopedSigpipeBlock sigpipe_block;
    Gnuplot gp(command);
    gp.imbue(std::locale::classic());
    gp << "set encoding utf8\n";
    gp << "set terminal pngcairo size " << kWidthPx << "," << kHeightPx << " noenhanced font "
       << GnuplotString(kFont) << " linewidth 1.5 rounded\n";
    gp << "set output " << GnuplotString(png_path) << "\n";
    body(&gp);
    gp << "set terminal svg size " << kWidthPx << "," << kHeightPx << " fixed noenhanced font "
       << GnuplotString(kFont) << " linewidth 1.5 rounded background '#ffffff'\n";
    gp << "set output " << GnuplotString(svg_path) << "\n";
    body(&gp);
    gp << "unset output\n";
    gp << std::flush;
    stream_ok = gp.good();
  }
  std::string log;
  {
    std::ifstream in(log_path.string(), std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    log = buffer.str();
  }
  boost::system::error_code ignored;
  fs::remove(log_path, ignored);
  int status = -1;
  const size_t marker = log.rfind(kStatusMarker);
  if (marker != std::string::npos) {
    status = std::atoi(log.c_str() + marker + std::string(kStatusMarker).size());
    log.erase(marker);
  }
  while (!log.empty() && (log.back() == '\n' || log.back() == ' ')) log.pop_back();
  if (status != 0 || !stream_ok) {
    fs::remove(png_path, ignored);
    fs::remove(svg_path, ignored);
    throw std::runtime_error(fmt::format("gnuplot failed to draw the {} ({}, {}): exit status {}{}{}",
                                         figure, png_path, svg_path, status,
                                         log.empty() ? "" : "; gnuplot said:\n", log));
  }
  if (!log.empty()) LogWarning("gnuplot, drawing the " + figure + ": " + log);
}

void CommonStyle(Gnuplot* gp) {
  *gp << "set tics out nomirror\n";
  *gp << "set grid lc rgb '#d9d9d9' lw 0.5\n";
}

}  // namespace

void WritePerfMapePlot(const PerfValidation& v, const std::string& title,
                       const std::string& png_path, const std::string& svg_path) {
  std::vector<std::vector<std::pair<double, double>>> curves;
  std::vector<std::string> titles;
  for (const ModelValidation& m : v.models) {
    if (m.per_target.empty()) continue;
    std::vector<std::pair<double, double>> curve;
    for (const auto& [f, s] : m.per_target) curve.emplace_back(f, std::max(kMapeFloorPct, s.mape_pct));
    curves.push_back(std::move(curve));
    titles.push_back(fmt::format("{} ({:.2f}%)", m.model, m.overall.mape_pct));
  }
  if (curves.empty()) throw std::invalid_argument("MAPE plot: no model has a validated point");
  auto body = [&](Gnuplot* gp) {
    *gp << "set title " << GnuplotString(title) << "\n";
    *gp << "set xlabel 'Target core frequency (MHz)'\n";
    *gp << "set ylabel 'Run-time MAPE (%, log scale)'\n";
    *gp << "set logscale y\n";
    *gp << "set key outside right top Left reverse box samplen 2 spacing 1.2\n";
    CommonStyle(gp);
    *gp << "plot ";
    for (size_t s = 0; s < curves.size(); ++s) {
      if (s > 0) *gp << ", \\\n  ";
      *gp << "'-' using 1:2 with linespoints lw 2 pt " << 5 + static_cast<int>(s) << " lc rgb '"
          << kColours[s % kColourCount] << "' dt " << 1 + static_cast<int>(s % 5) << " title "
          << GnuplotString(titles[s]);
    }
    *gp << "\n";
    for (const auto& c : curves) gp->send1d(c);
  };
  Render("run-time MAPE figure", png_path, svg_path, body);
}

void WritePerfTimesPlot(const PerfValidation& v, const std::string& kernel, double base_time_s,
                        const std::string& png_path, const std::string& svg_path) {
  if (!(base_time_s > 0.0)) {
    throw std::invalid_argument(fmt::format("times plot: base time {} must be > 0", base_time_s));
  }
  std::vector<std::string> models;
  std::vector<std::vector<std::pair<double, double>>> curves;
  std::vector<std::pair<double, double>> actual;
  for (const TimeErrorPoint& p : v.points) {
    if (p.kernel != kernel) continue;
    auto it = std::find(models.begin(), models.end(), p.model);
    if (it == models.end()) {
      models.push_back(p.model);
      curves.emplace_back();
      it = models.end() - 1;
    }
    curves[static_cast<size_t>(it - models.begin())].emplace_back(p.target_mhz,
                                                                  p.predicted_time_s / base_time_s);
    if (it == models.begin()) actual.emplace_back(p.target_mhz, p.actual_time_s / base_time_s);
  }
  if (models.empty()) throw std::invalid_argument("times plot: no points of kernel '" + kernel + "'");
  for (auto& c : curves) std::sort(c.begin(), c.end());
  std::sort(actual.begin(), actual.end());
  auto body = [&](Gnuplot* gp) {
    *gp << "set title " << GnuplotString("Run time of " + kernel + " against core frequency") << "\n";
    *gp << "set xlabel 'Core frequency (MHz)'\n";
    *gp << "set ylabel 'Run time / run time at the base frequency'\n";
    *gp << "set key outside right top Left reverse box samplen 2 spacing 1.2\n";
    CommonStyle(gp);
    *gp << "plot '-' using 1:2 with points pt 7 ps 1.6 lc rgb '#000000' title 'actual'";
    for (size_t s = 0; s < curves.size(); ++s) {
      *gp << ", \\\n  '-' using 1:2 with lines lw 2 lc rgb '" << kColours[s % kColourCount]
          << "' dt " << 1 + static_cast<int>(s % 5) << " title " << GnuplotString(models[s]);
    }
    *gp << "\n";
    gp->send1d(actual);
    for (const auto& c : curves) gp->send1d(c);
  };
  Render("run-time figure of " + kernel, png_path, svg_path, body);
}

void WriteDvfsPlot(const DvfsChoice& c, DvfsObjective objective, const std::string& png_path,
                   const std::string& svg_path) {
  if (c.predicted.empty() || c.chosen < 0) {
    throw std::invalid_argument("DVFS plot: kernel '" + c.kernel + "' has no candidate pairs");
  }
  std::vector<std::pair<double, double>> energy, time, chosen, true_energy, true_time, optimum;
  for (const DvfsPoint& p : c.predicted) {
    energy.emplace_back(p.f_core_mhz, p.energy_j);
    time.emplace_back(p.f_core_mhz, p.time_s);
  }
  chosen.emplace_back(c.choice().f_core_mhz, c.choice().energy_j);
  if (c.has_truth) {
    for (const DvfsPoint& p : c.truth) {
      true_energy.emplace_back(p.f_core_mhz, p.energy_j);
      true_time.emplace_back(p.f_core_mhz, p.time_s);
    }
    const DvfsPoint& o = c.truth[static_cast<size_t>(c.optimum)];
    optimum.emplace_back(o.f_core_mhz, o.energy_j);
  }
  auto body = [&](Gnuplot* gp) {
    *gp << "set title " << GnuplotString(fmt::format("{}: energy and time by core frequency ({}, "
                                                     "minimising {})",
                                                     c.kernel, c.perf_model,
                                                     DvfsObjectiveName(objective)))
        << "\n";
    *gp << "set xlabel 'Core frequency (MHz)'\n";
    *gp << "set ylabel 'Energy (J)'\n";
    *gp << "set y2label 'Run time (s)'\n";
    *gp << "set ytics nomirror\n";
    *gp << "set y2tics\n";
    *gp << "set format y '%g'\n";
    *gp << "set format y2 '%g'\n";
    *gp << "set key outside below center Left reverse nobox maxcols 2 samplen 3 spacing 1.1\n";
    *gp << "set bmargin 8\n";
    CommonStyle(gp);
    *gp << "plot '-' using 1:2 axes x1y1 with linespoints lw 2 pt 7 lc rgb '" << kColours[0]
        << "' title 'energy (predicted)', \\\n"
        << "  '-' using 1:2 axes x1y2 with linespoints lw 2 pt 5 lc rgb '" << kColours[1]
        << "' title 'time (predicted)', \\\n"
        << "  '-' using 1:2 axes x1y1 with points pt 6 ps 3 lw 2 lc rgb '#000000' title "
        << GnuplotString(fmt::format("chosen: {:g} MHz", c.choice().f_core_mhz));
    if (c.has_truth) {
      *gp << ", \\\n  '-' using 1:2 axes x1y1 with linespoints lw 1.5 dt 2 pt 7 ps 0.6 lc rgb '"
          << kColours[0] << "' title 'energy (true)', \\\n"
          << "  '-' using 1:2 axes x1y2 with linespoints lw 1.5 dt 2 pt 5 ps 0.6 lc rgb '"
          << kColours[1] << "' title 'time (true)', \\\n"
          << "  '-' using 1:2 axes x1y1 with points pt 3 ps 3 lw 2 lc rgb '" << kColours[2]
          << "' title "
          << GnuplotString(fmt::format("true optimum: {:g} MHz",
                                       c.truth[static_cast<size_t>(c.optimum)].f_core_mhz));
    }
    *gp << "\n";
    gp->send1d(energy);
    gp->send1d(time);
    gp->send1d(chosen);
    if (c.has_truth) {
      gp->send1d(true_energy);
      gp->send1d(true_time);
      gp->send1d(optimum);
    }
  };
  Render("DVFS figure of " + c.kernel, png_path, svg_path, body);
}

}  // namespace wattcal
