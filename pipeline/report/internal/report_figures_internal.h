// The figure helpers report_figures.cc and constant_figures.cc share (styles, palettes, JSON
// reading, gnuplot data strings, tic sizes). Internal to report/.
#pragma once

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/errors.h"
#include "util/json_file.h"

namespace wattcal {
namespace figures_internal {

// Colour of cells and curves that carry no value.
inline constexpr const char* kMissingColour = "#bdbdbd";
// Diverging palette of the correlation heat-maps (ColorBrewer RdBu, blue = -1, red = +1).
inline constexpr const char* kCorrelationPalette =
    "set palette defined (-1 '#2166ac', -0.5 '#92c5de', 0 '#f7f7f7', 0.5 '#f4a582', 1 '#b2182b')\n";
// Above this |r| a heat-map cell is dark enough for white text.
inline constexpr double kWhiteTextAbsR = 0.6;
// Greys of the static and component-independent terms of a breakdown, darkest first.
inline constexpr const char* kGreyColours[] = {"#404040", "#6e6e6e", "#9a9a9a", "#c4c4c4"};
// One colour per component of a breakdown: ColorBrewer "Paired" (12 classes), then 8 darker or
// other hues, so that a GH100 breakdown's 17 components never share a colour (with 12 they did:
// ISSUE and DMMA were the same blue).
inline constexpr const char* kComponentColours[] = {
    "#1f78b4", "#a6cee3", "#33a02c", "#b2df8a", "#e31a1c", "#fb9a99", "#ff7f00",
    "#fdbf6f", "#6a3d9a", "#cab2d6", "#b15928", "#ffff99", "#17becf", "#bcbd22",
    "#e377c2", "#006d2c", "#08306b", "#800026", "#54278f", "#ffd92f"};
// The benchmark heat-map keeps the usual canvas up to this many benchmarks; beyond, it grows
// by kHeatmapCellPx per benchmark and names them at kHeatmapLargeFontPt.
inline constexpr int kMaxNamedBenchmarks = 40;
inline constexpr int kHeatmapCellPx = 13;
inline constexpr int kHeatmapLargeFontPt = 9;
// Samples of each fitted curve of the constant-power figure.
inline constexpr int kCurveSamples = 120;

// object[key] as a number: NaN when absent or null and not required; InputError naming
// `where` + key when required and absent, or when not a number.
inline double JsonNumber(const std::string& path, const nlohmann::json& object,
                         const std::string& key, const std::string& where, bool required) {
  if (!object.is_object() || !object.contains(key) || object[key].is_null()) {
    if (required) throw InputError(path, 0, where + key, "missing (expected a number)");
    return std::numeric_limits<double>::quiet_NaN();
  }
  if (!object[key].is_number()) throw InputError(path, 0, where + key, "expected a number");
  return object[key].get<double>();
}

// A number for the script: 10 significant digits, '.' decimals, no locale.
inline std::string Num(double value) { return fmt::format("{:.10g}", value); }

// A string column of a datablock: double-quoted, with double quotes and line breaks replaced.
inline std::string DataString(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') {
      out += '\'';
    } else if (c == '\n' || c == '\r' || c == '\t') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out + "\"";
}

inline void CheckFinite(double value, const std::string& what) {
  if (!std::isfinite(value)) {
    throw std::invalid_argument(fmt::format("{} is {}; figures need finite values", what, value));
  }
}

inline std::string DomainTitle(const std::string& domain) {
  if (domain == "core") return "Core domain";
  if (domain == "mem") return "Memory domain";
  return domain + " domain";
}

inline std::string FrequencyAxisLabel(const std::string& domain) {
  if (domain == "core") return "Core frequency (MHz)";
  if (domain == "mem") return "Memory frequency (MHz)";
  return domain + " frequency (MHz)";
}

// A tic label font small enough for `count` labels side by side across about `span_px`.
inline int TicFontPt(int count, int span_px, int largest_pt) {
  if (count <= 0) return largest_pt;
  // A text line is about 1.45 px per pt at the terminals' 72 dpi font scale with spacing.
  const int fitting = static_cast<int>(std::floor(span_px / (1.45 * count)));
  return std::clamp(fitting, 6, largest_pt);
}

// A round tic step (1, 2 or 5 times a power of ten) giving at most about five tics over the
// frequencies of `curves`.
inline double NiceStep(const std::vector<std::vector<std::pair<double, double>>>& curves) {
  double low = 0.0, high = 0.0;
  bool any = false;
  for (const auto& curve : curves) {
    for (const auto& [f, v] : curve) {
      low = any ? std::min(low, f) : f;
      high = any ? std::max(high, f) : f;
      any = true;
    }
  }
  const double span = high - low;
  if (!(span > 0.0)) return 1.0;
  const double raw = span / 4.0;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double factor : {1.0, 2.0, 5.0, 10.0}) {
    if (factor * magnitude >= raw) return factor * magnitude;
  }
  return 10.0 * magnitude;
}

// Bottom margin, in lines of the 14 pt font, for x tic labels of up to `chars` characters
// written at `font_pt` and rotated by 90 degrees, plus a line of air.
inline int BottomMarginChars(size_t chars, int font_pt) {
  // A character of a proportional sans font is about 0.55 of its size wide; a margin line of
  // the 14 pt font is about 1.45 of its size high (measured on the rendered figures: 1.25
  // left four empty lines under 24-character labels, 1.6 clipped them).
  return 1 +
         static_cast<int>(std::ceil(0.55 * static_cast<double>(chars) * font_pt / (1.45 * 14.0)));
}

}  // namespace figures_internal
}  // namespace wattcal
