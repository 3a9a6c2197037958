#include "report/gnuplot_figure.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <locale>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <boost/filesystem.hpp>
#include <fmt/format.h>
#include <gnuplot-iostream.h>

#include "util/logging.h"

namespace fs = boost::filesystem;

namespace wattcal {
namespace {

constexpr const char* kFont = "Sans,14";
// Marker of the last line gnuplot's wrapper appends to the log: its exit status.
constexpr const char* kStatusMarker = "wattcal-gnuplot-exit-status ";

constexpr const char* kSeriesColours[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                          "#E69F00", "#56B4E9", "#000000"};
constexpr int kSeriesColourCount = sizeof(kSeriesColours) / sizeof(kSeriesColours[0]);
constexpr int kDashTypes = 5;

// A POSIX shell single-quoted word.
std::string ShellWord(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

std::string GnuplotExecutable() {
#ifdef WATTCAL_GNUPLOT
  return WATTCAL_GNUPLOT;
#else
  return "";
#endif
}

// Blocks SIGPIPE in the calling thread while gnuplot's pipe is open, so that a gnuplot
// that exits early (on an error) makes our writes fail instead of killing the process.
// The pending signal, if any, is consumed before the previous mask is restored.
class ScopedSigpipeBlock {
 public:
  ScopedSigpipeBlock() {
    sigemptyset(&sigpipe_);
    sigaddset(&sigpipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &sigpipe_, &previous_);
  }
  ~ScopedSigpipeBlock() {
    if (sigismember(&previous_, SIGPIPE) == 1) return;  // it was blocked before us
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

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace

bool GnuplotAvailable() {
  const std::string executable = GnuplotExecutable();
  return !executable.empty() && access(executable.c_str(), X_OK) == 0;
}

namespace {

// `text` wrapped greedily at spaces into lines of at most `width` characters (a longer word
// stands alone on its line).
std::vector<std::string> WrapWords(const std::string& text, size_t width) {
  std::vector<std::string> lines(1);
  std::string word;
  auto flush = [&]() {
    if (word.empty()) return;
    if (!lines.back().empty() && lines.back().size() + 1 + word.size() > width) {
      lines.emplace_back();
    }
    if (!lines.back().empty()) lines.back() += ' ';
    lines.back() += word;
    word.clear();
  };
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\r') {
      flush();
    } else {
      word += c;
    }
  }
  flush();
  return lines;
}

}  // namespace

std::string GnuplotTitle(const std::string& text, size_t max_chars) {
  // As few lines as `max_chars` allows, balanced: the narrowest width that needs no more lines
  // (no last line holding a single orphaned word).
  std::vector<std::string> lines = WrapWords(text, max_chars);
  for (size_t width = text.size() / lines.size(); width < max_chars; ++width) {
    std::vector<std::string> balanced = WrapWords(text, width);
    if (balanced.size() <= lines.size()) {
      lines = std::move(balanced);
      break;
    }
  }
  std::string quoted = "\"";
  for (size_t l = 0; l < lines.size(); ++l) {
    if (l > 0) quoted += "\\n";
    for (char c : lines[l]) {
      if (c == '"' || c == '\\') quoted += '\\';
      quoted += c;
    }
  }
  return quoted + "\"";
}

std::string GnuplotString(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "''";
    } else if (c == '\n' || c == '\r') {
      quoted += ' ';
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

std::string TicsStyle(const std::string& axis) { return "set " + axis + "tics out nomirror\n"; }

std::string GridStyle(const std::string& axis) {
  return "set grid " + (axis.empty() ? std::string() : axis + "tics ") +
         "lc rgb '#d9d9d9' lw 0.5\n";
}

std::string AxisStyle(const std::string& axis) { return TicsStyle(axis) + GridStyle(axis); }

const char* SeriesColour(int index) {
  return kSeriesColours[(index % kSeriesColourCount + kSeriesColourCount) % kSeriesColourCount];
}

int SeriesDashType(int index) { return 1 + (index % kDashTypes + kDashTypes) % kDashTypes; }

void RenderFigure(const std::string& figure, const std::string& png_path,
                  const std::string& svg_path, const std::function<void(gnuplotio::Gnuplot*)>& body,
                  const FigureSize& size) {
  if (!GnuplotAvailable()) {
    throw std::runtime_error("cannot draw the " + figure +
                             ": gnuplot is not available (install gnuplot and re-run cmake)");
  }
  if (size.width_px <= 0 || size.height_px <= 0) {
    throw std::invalid_argument(fmt::format("cannot draw the {}: figure size {}x{} px", figure,
                                            size.width_px, size.height_px));
  }
  // gnuplot runs the piped script as a file (/dev/stdin), so that it stops at the first
  // error as in batch mode instead of carrying on (a failed "set output" would otherwise
  // send the image to stdout). Its messages go to a log, followed by its exit status: the
  // gnuplot-iostream destructor waits for gnuplot but discards the status itself.
  const fs::path log_path =
      fs::temp_directory_path() / fs::unique_path("wattcal-gnuplot-%%%%-%%%%-%%%%.log");
  const std::string command = ShellWord(GnuplotExecutable()) + " /dev/stdin >/dev/null 2>" +
                              ShellWord(log_path.string()) + "; echo \"" + kStatusMarker +
                              "$?\" >>" + ShellWord(log_path.string());
  bool stream_ok = false;
  {
    ScopedSigpipeBlock sigpipe_block;
    Gnuplot gp(command);  // one session per figure: both files are closed when it exits
    gp.imbue(std::locale::classic());  // '.' decimals whatever the global locale
    gp << "set encoding utf8\n";
    gp << "set terminal pngcairo size " << size.width_px << "," << size.height_px
       << " noenhanced font " << GnuplotString(kFont) << " linewidth 1.5 rounded\n";
    gp << "set output " << GnuplotString(png_path) << "\n";
    body(&gp);
    gp << "set terminal svg size " << size.width_px << "," << size.height_px
       << " fixed noenhanced font " << GnuplotString(kFont)
       << " linewidth 1.5 rounded background '#ffffff'\n";
    gp << "set output " << GnuplotString(svg_path) << "\n";
    body(&gp);
    gp << "unset output\n";
    gp << std::flush;
    stream_ok = gp.good();
  }  // ~Gnuplot flushes, closes the pipe and waits for gnuplot to exit

  std::string log = ReadWholeFile(log_path.string());
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
    fs::remove(png_path, ignored);  // no partial figures
    fs::remove(svg_path, ignored);
    throw std::runtime_error(
        fmt::format("gnuplot failed to draw the {} ({}, {}): exit status {}{}{}", figure, png_path,
                    svg_path, status, log.empty() ? "" : "; gnuplot said:\n", log));
  }
  if (!log.empty()) LogWarning("gnuplot, drawing the " + figure + ": " + log);
}

}  // namespace wattcal
