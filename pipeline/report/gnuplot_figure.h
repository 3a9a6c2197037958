// Drawing one figure with gnuplot through gnuplot-iostream, as PNG (pngcairo) and SVG: the
// session handling every figure of wattcal shares (report/validation_plots.h,
// report/report_figures.h, perf/perf_plots.h).
//
// RenderFigure runs one gnuplot per figure, writes the script with its data inline once per
// terminal, and returns only after gnuplot has exited and closed both files (the
// gnuplot-iostream pitfall of files completed only on destruction, FORMATS.md §6.2). gnuplot
// reads the script as /dev/stdin, so it stops at the first error as in batch mode; its messages
// and exit status go to a temporary log. SIGPIPE is blocked while the pipe is open, so a gnuplot
// that exits early makes writes fail instead of killing the process.
//
// Same script, same bytes: neither terminal writes a timestamp. The bytes depend on the
// installed gnuplot, cairo and fonts ("Sans" through fontconfig).
#pragma once

#include <functional>
#include <string>

namespace gnuplotio {
class Gnuplot;  // gnuplot-iostream.h (included by the .cc files that draw) exports it as ::Gnuplot
}  // namespace gnuplotio

namespace wattcal {

// Size of a figure: PNG pixels and SVG user units.
struct FigureSize {
  // 800 x 600 with 14 pt text stays legible when scaled to one column of a two-column paper
  // (about 3.3 in wide).
  int width_px = 800;
  int height_px = 600;
};

// True when this build knows a gnuplot executable (CMake's WATTCAL_GNUPLOT) and it can be
// executed now.
bool GnuplotAvailable();

// A gnuplot single-quoted string literal (inside one only the quote itself is special; line
// breaks become spaces).
// A figure title for `set title`: the text wrapped at spaces into as few lines of at most
// `max_chars` characters as it needs (a long title is never clipped by the canvas), balanced in
// length, as a double-quoted gnuplot string with "\n" between the lines.
std::string GnuplotTitle(const std::string& text, size_t max_chars = 64);
std::string GnuplotString(const std::string& text);

// The Okabe-Ito colours (distinguishable with colour-vision deficiencies), cycled by index,
// and a dash type per index (1..5) so that lines also separate in greyscale print.
const char* SeriesColour(int index);
int SeriesDashType(int index);

// The figures' one axis style: tics outside the plot and not mirrored, a light grey grid at
// them. An axis "x" or "y" styles that axis's tics and grid only; "" both axes. AxisStyle is the
// two together; TicsStyle and GridStyle are its halves, for figures that set something between.
std::string TicsStyle(const std::string& axis = "");
std::string GridStyle(const std::string& axis = "");
std::string AxisStyle(const std::string& axis = "");

// Renders one figure to `png_path` and `svg_path` (written exactly there: callers pass
// OutputSet temporaries): sets the encoding, the terminal (noenhanced text, Sans 14, line
// width 1.5) and the output, then calls `body` to write the plot commands and their inline data,
// once per terminal. Throws std::runtime_error when gnuplot is not available or fails (the
// message names `figure` and carries gnuplot's own output; neither file is left behind);
// gnuplot's warnings on a successful run are logged with LogWarning.
void RenderFigure(const std::string& figure, const std::string& png_path,
                  const std::string& svg_path, const std::function<void(gnuplotio::Gnuplot*)>& body,
                  const FigureSize& size = FigureSize());

}  // namespace wattcal
