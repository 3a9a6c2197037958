// Field logs (ingest/field_log.h): dcgmi dmon text, dcgm-exporter Prometheus text and
// wattcal-capture's gpm_fields.csv.
#include "ingest/field_log.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <string_view>

#include "ingest/internal/power_log_fields.h"
#include "ingest/power_log.h"
#include "io/field_set.h"
#include "util/errors.h"
#include "util/json_file.h"
#include "util/nan.h"
#include "util/strings.h"
#include "util/text_input.h"

namespace wattcal {
namespace {

using power_log_internal::IsMissing;
using power_log_internal::ParseEpochSeconds;
using power_log_internal::SplitDmonTimestamp;
using power_log_internal::SplitWhitespace;

// The lines of a text file, each without its end-of-line; a last line without one was cut (the
// logger was still writing) and is an InputError naming it.
std::vector<std::string_view> SplitLines(const std::string& path, const std::string& text) {
  std::vector<std::string_view> lines;
  std::string_view rest = StripUtf8ByteOrderMark(std::string_view(text));
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    if (nl == std::string_view::npos) {
      throw InputError(path, static_cast<int64_t>(lines.size()) + 1, "",
                       "the last line has no end-of-line: the log was cut while being written");
    }
    std::string_view line = rest.substr(0, nl);
    while (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    rest.remove_prefix(nl + 1);
  }
  return lines;
}

// The canonical name of a printed column: a known field's name, else the text as printed.
std::string CanonicalColumn(std::string_view printed) {
  const KnownField* f = FindKnownField(printed);
  return f != nullptr ? f->name : std::string(printed);
}

// Builds a FieldLog sample by sample: columns and series appear as they are first seen.
class LogBuilder {
 public:
  explicit LogBuilder(FieldLog* log) : log_(log) {}

  int Column(const std::string& name) {
    const auto [it, inserted] = columns_.emplace(name, static_cast<int>(log_->fields.size()));
    if (inserted) log_->fields.push_back(name);
    return it->second;
  }
  FieldSeries& Series(const std::string& entity) {
    const auto [it, inserted] = series_.emplace(entity, log_->series.size());
    if (inserted) {
      log_->series.emplace_back();
      log_->series.back().entity = entity;
    }
    return log_->series[it->second];
  }
  // A new sample of `s` at `time_s`; its values start as NaN (not printed).
  std::vector<double>& Sample(FieldSeries& s, double time_s, int64_t line) {
    if (!s.time_s.empty() && time_s < s.time_s.back()) {
      throw InputError(log_->path, line, "",
                       fmt::format("time goes backwards for {}: {:.3f} s after {:.3f} s (line {})",
                                   s.entity, time_s, s.time_s.back(), s.line.back()));
    }
    s.time_s.push_back(time_s);
    s.line.push_back(line);
    s.values.emplace_back();
    return s.values.back();
  }
  // Pads every sample to the final number of columns.
  void Finish() {
    for (FieldSeries& s : log_->series) {
      for (std::vector<double>& v : s.values) v.resize(log_->fields.size(), kNaN);
    }
    if (log_->series.empty()) throw InputError(log_->path, 0, "", "the log holds no sample");
  }

 private:
  FieldLog* log_;
  std::map<std::string, int> columns_;
  std::map<std::string, size_t> series_;
};

// A cell of a field: its value, NaN for N/A; anything else is an InputError.
double ParseCell(const std::string& path, int64_t line, const std::string& column,
                 std::string_view cell) {
  if (IsMissing(cell) || cell == "N/A") return kNaN;
  double value = 0.0;
  if (!ParseEpochSeconds(cell, &value)) {  // a plain decimal number, exponent allowed
    throw InputError(path, line, column,
                     fmt::format("expected a number or N/A, got '{}'", std::string(cell)));
  }
  return value;
}

// ------------------------------------------------------------------------------- dcgmi dmon

class DmonFieldParser {
 public:
  DmonFieldParser(const std::string& path, const FieldLogOptions& options, FieldLog* log)
      : path_(path), options_(options), log_(log), builder_(log) {}

  void Parse(const std::vector<std::string_view>& lines) {
    for (size_t i = 0; i < lines.size(); ++i) ParseLine(lines[i], static_cast<int64_t>(i) + 1);
    if (columns_.empty()) throw InputError(path_, 0, "", "no dcgmi dmon header '#Entity ...'");
    builder_.Finish();
  }

 private:
  void ParseLine(std::string_view raw, int64_t line) {
    bool has_time = false, is_epoch = false;
    double time_s = 0.0;
    const std::string_view rest = SplitDmonTimestamp(raw, &has_time, &time_s, &is_epoch);
    if (rest.empty() || StartsWith(rest, "dmon was stopped")) return;
    const std::vector<std::string_view> tokens = SplitWhitespace(rest);
    if (StartsWith(rest, "#")) return SetHeader(rest, line);
    if (tokens[0] == "ID") return;  // the units line: PROF fields are ratios, bytes or W
    if (columns_.empty()) {
      throw InputError(path_, line, "",
                       fmt::format("expected the dcgmi dmon header '#Entity ...' before the first "
                                   "row, got '{}'",
                                   std::string(rest.substr(0, 60))));
    }
    if (tokens.size() < 2 || tokens[1].empty() ||
        !std::isdigit(static_cast<unsigned char>(tokens[1][0]))) {
      throw InputError(path_, line, "#Entity",
                       fmt::format("expected a row like 'GPU 0 <values>', got '{}'",
                                   std::string(rest.substr(0, 60))));
    }
    if (tokens.size() - 2 != columns_.size()) {
      throw InputError(path_, line, "",
                       fmt::format("{} values after '{} {}', but the header on line {} names {} "
                                   "fields{}",
                                   tokens.size() - 2, std::string(tokens[0]),
                                   std::string(tokens[1]), header_line_, columns_.size(),
                                   tokens.size() - 2 < columns_.size() ? " (a cut row?)" : ""));
    }
    const std::string entity = std::string(tokens[0]) + " " + std::string(tokens[1]);
    FieldSeries& s = builder_.Series(entity);
    if (s.time_s.empty()) {
      s.gpu = tokens[0] == "GPU" ? std::string(tokens[1]) : "";
      s.mig_instance = tokens[0] == "GPU" ? "" : std::string(tokens[1]);
    }
    std::vector<double>& values =
        builder_.Sample(s, RowTime(s, has_time, is_epoch, time_s, line), line);
    values.resize(log_->fields.size(), kNaN);
    for (size_t k = 0; k < columns_.size(); ++k) {
      values[columns_[k]] = ParseCell(path_, line, log_->fields[columns_[k]], tokens[2 + k]);
    }
  }

  double RowTime(const FieldSeries& s, bool has_time, bool is_epoch, double time_s, int64_t line) {
    if (!seen_row_) timed_ = has_time;
    seen_row_ = true;
    if (has_time != timed_) {
      throw InputError(path_, line, "",
                       timed_ ? "this row has no leading timestamp but the earlier ones do"
                              : "this row has a leading timestamp but the earlier ones do not");
    }
    if (timed_) return is_epoch ? time_s : time_s - options_.utc_offset_h * 3600.0;
    if (options_.dmon_interval_ms <= 0.0) {
      throw InputError(path_, line, "",
                       "dcgmi dmon rows carry no timestamps: give the -d delay (--dmon-interval-ms)"
                       " or prefix each line with a timestamp (| ts '%Y-%m-%dT%H:%M:%.S')");
    }
    return options_.dmon_start_s +
           static_cast<double>(s.time_s.size()) * options_.dmon_interval_ms * 1e-3;
  }

  // `#Entity   SMACT   SMOCC ...` (possibly `# Entity`); repeated headers must agree.
  void SetHeader(std::string_view text, int64_t line) {
    const std::vector<std::string_view> tokens = SplitWhitespace(TrimView(text.substr(1)));
    if (tokens.empty() || tokens[0] != "Entity") {
      throw InputError(path_, line, "",
                       fmt::format("expected the dcgmi dmon header '#Entity ...', got '{}'",
                                   std::string(text.substr(0, 60))));
    }
    std::vector<int> columns;
    for (size_t k = 1; k < tokens.size(); ++k) {
      columns.push_back(builder_.Column(CanonicalColumn(tokens[k])));
    }
    if (columns.empty()) throw InputError(path_, line, "", "the dcgmi dmon header names no field");
    if (!columns_.empty() && columns != columns_) {
      throw InputError(path_, line, "",
                       fmt::format("this header names other fields than the one on line {}: one "
                                   "dmon run per log",
                                   header_line_));
    }
    columns_ = std::move(columns);
    header_line_ = line;
  }

  const std::string& path_;
  const FieldLogOptions& options_;
  FieldLog* log_;
  LogBuilder builder_;
  std::vector<int> columns_;
  int64_t header_line_ = 0;
  bool seen_row_ = false;
  bool timed_ = false;
};

// ---------------------------------------------------------------------------- gpm_fields.csv

// The cells of a comma-separated line (no quoting: the file's cells are names and numbers).
std::vector<std::string_view> SplitCommaCells(std::string_view line) {
  std::vector<std::string_view> cells;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    cells.push_back(line.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) return cells;
    start = comma + 1;
  }
}

// wattcal-capture --fields gpm's field log: `timestamp_us,NVML_GPM_METRIC_SM_UTIL,...`, one row
// per sampling tick, an empty cell where NVML refused the metric (N/A). One series, "GPU".
void ParseGpmCsv(const std::string& path, const std::vector<std::string_view>& lines,
                 LogBuilder* builder) {
  std::vector<int> columns;
  size_t header_line = 0;
  while (header_line < lines.size() && TrimView(lines[header_line]).empty()) ++header_line;
  const std::vector<std::string_view> header = SplitCommaCells(lines[header_line]);
  for (size_t c = 1; c < header.size(); ++c) {
    const std::string name = CanonicalColumn(TrimView(header[c]));
    if (name.empty()) {
      throw InputError(path, static_cast<int64_t>(header_line) + 1, "",
                       fmt::format("column {} has no name", c + 1));
    }
    columns.push_back(builder->Column(name));
  }
  FieldSeries& series = builder->Series("GPU");
  for (size_t i = header_line + 1; i < lines.size(); ++i) {
    const int64_t line = static_cast<int64_t>(i) + 1;
    if (TrimView(lines[i]).empty()) continue;
    const std::vector<std::string_view> cells = SplitCommaCells(lines[i]);
    if (cells.size() != header.size()) {
      throw InputError(path, line, "",
                       fmt::format("{} cells, the header has {}", cells.size(), header.size()));
    }
    double time_us = 0.0;
    if (!ParseEpochSeconds(TrimView(cells[0]), &time_us)) {
      throw InputError(path, line, "timestamp_us",
                       fmt::format("expected a time in us, got '{}'", std::string(cells[0])));
    }
    std::vector<double>& values = builder->Sample(series, time_us * 1e-6, line);
    values.resize(columns.size(), kNaN);
    for (size_t c = 1; c < cells.size(); ++c) {
      const std::string_view cell = TrimView(cells[c]);
      values[columns[c - 1]] =
          cell.empty() ? kNaN : ParseCell(path, line, std::string(TrimView(header[c])), cell);
    }
  }
}

// ---------------------------------------------------------------------------- dcgm-exporter

// `NAME{k="v",...} VALUE [TIMESTAMP_MS]` split into its parts; false for a comment or blank.
struct PromLine {
  std::string_view name;
  std::map<std::string, std::string> labels;
  std::string_view value;
  std::string_view timestamp;
};

std::map<std::string, std::string> ParseLabels(const std::string& path, int64_t line,
                                               std::string_view* rest) {
  std::map<std::string, std::string> labels;
  size_t i = 1;  // after '{'
  const std::string_view s = *rest;
  for (;;) {
    while (i < s.size() && (s[i] == ' ' || s[i] == ',')) ++i;
    if (i < s.size() && s[i] == '}') break;
    const size_t eq = s.find('=', i);
    if (eq == std::string_view::npos || eq + 1 >= s.size() || s[eq + 1] != '"') {
      throw InputError(path, line, "", "expected labels like {gpu=\"0\",UUID=\"GPU-...\"}");
    }
    std::string key(TrimView(s.substr(i, eq - i)));
    std::string value;
    size_t j = eq + 2;
    for (; j < s.size() && s[j] != '"'; ++j) {
      if (s[j] == '\\' && j + 1 < s.size()) ++j;  // \" \\ \n: the escaped character
      value.push_back(s[j]);
    }
    if (j >= s.size()) throw InputError(path, line, key, "label value without its closing quote");
    labels[key] = value;
    i = j + 1;
  }
  *rest = s.substr(i + 1);
  return labels;
}

bool SplitPromLine(const std::string& path, int64_t line, std::string_view text, PromLine* out) {
  text = TrimView(text);
  if (text.empty() || text[0] == '#') return false;
  const size_t name_end = text.find_first_of("{ \t");
  if (name_end == std::string_view::npos) {
    throw InputError(path, line, "", "expected 'NAME{labels} VALUE [TIMESTAMP_MS]'");
  }
  out->name = text.substr(0, name_end);
  std::string_view rest = text.substr(name_end);
  out->labels.clear();
  if (rest[0] == '{') out->labels = ParseLabels(path, line, &rest);
  const std::vector<std::string_view> tokens = SplitWhitespace(rest);
  if (tokens.empty() || tokens.size() > 2) {
    throw InputError(path, line, std::string(out->name),
                     "expected a value and at most a timestamp after the labels");
  }
  out->value = tokens[0];
  out->timestamp = tokens.size() == 2 ? tokens[1] : std::string_view();
  return true;
}

std::string LabelOr(const std::map<std::string, std::string>& labels, const char* key) {
  const auto it = labels.find(key);
  return it == labels.end() ? "" : it->second;
}

// One exporter file: `file_time_s` is the scrape's time when its lines carry no timestamp (NaN:
// they must). Samples of one entity at one time form one row.
void ParseExporterFile(const std::string& path, double file_time_s, LogBuilder* builder) {
  const std::string text = ReadFileText(path, "field log");  // the lines below point into it
  const std::vector<std::string_view> lines = SplitLines(path, text);
  std::map<std::pair<std::string, double>, size_t> rows;  // (entity, time) -> its sample
  PromLine p;
  for (size_t i = 0; i < lines.size(); ++i) {
    const int64_t line = static_cast<int64_t>(i) + 1;
    if (!SplitPromLine(path, line, lines[i], &p)) continue;
    if (!StartsWith(p.name, "DCGM_FI_")) continue;  // exporter's own metrics
    double time_s = file_time_s;
    if (!p.timestamp.empty()) {
      if (!ParseEpochSeconds(p.timestamp, &time_s)) {
        throw InputError(
            path, line, std::string(p.name),
            fmt::format("expected a timestamp in ms, got '{}'", std::string(p.timestamp)));
      }
      time_s /= 1000.0;
    } else if (std::isnan(file_time_s)) {
      throw InputError(path, line, std::string(p.name),
                       "no timestamp: give the scrapes as a directory of files named by their "
                       "time, or lines with a timestamp in ms");
    }
    const std::string uuid = LabelOr(p.labels, "UUID");
    const std::string gpu = LabelOr(p.labels, "gpu");
    const std::string mig = LabelOr(p.labels, "GPU_I_ID");
    if (uuid.empty() && gpu.empty()) {
      throw InputError(path, line, std::string(p.name), "no gpu or UUID label");
    }
    const std::string entity =
        (uuid.empty() ? "gpu " + gpu : uuid) + (mig.empty() ? "" : "/GPU_I_ID=" + mig);
    const int column = builder->Column(CanonicalColumn(p.name));
    FieldSeries& s = builder->Series(entity);
    auto it = rows.find({entity, time_s});
    if (it == rows.end()) {
      s.gpu = gpu;
      s.uuid = uuid;
      s.mig_instance = mig;
      builder->Sample(s, time_s, line);
      it = rows.emplace(std::make_pair(entity, time_s), s.values.size() - 1).first;
    }
    std::vector<double>& values = s.values[it->second];
    if (values.size() <= static_cast<size_t>(column)) values.resize(column + 1, kNaN);
    values[column] = ParseCell(path, line, std::string(p.name), p.value);
  }
}

// The time a scrape file's name gives: epoch seconds or an ISO-like timestamp; NaN when none.
double ScrapeTime(const std::filesystem::path& file, double utc_offset_h) {
  std::string stem = file.filename().string();
  for (const char* ext : {".prom", ".txt", ".metrics"}) {
    if (EndsWith(stem, ext)) stem.resize(stem.size() - std::string_view(ext).size());
  }
  double t = 0.0;
  if (ParseEpochSeconds(stem, &t)) return t;
  if (ParseSmiTimestamp(stem.data(), stem.size(), &t)) return t - utc_offset_h * 3600.0;
  return kNaN;
}

// std::filesystem, not Boost's: ingest/ is linked into wattcal-capture, whose binary is carried
// to bare GPU machines without Boost (DeviceRehearsal checks its ldd).
void ReadExporterDirectory(const std::string& dir, const FieldLogOptions& options,
                           LogBuilder* builder) {
  std::vector<std::pair<double, std::string>> scrapes;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (!std::filesystem::is_regular_file(e.path())) continue;
    const double t = ScrapeTime(e.path(), options.utc_offset_h);
    if (std::isnan(t)) {
      throw InputError(e.path().string(), 0, "",
                       "a scrape file's name must be its time (epoch seconds, or "
                       "YYYY-MM-DDTHH:MM:SS), e.g. 1764400000.5.prom");
    }
    scrapes.emplace_back(t, e.path().string());
  }
  if (scrapes.empty()) throw InputError(dir, 0, "", "the directory holds no scrape file");
  std::sort(scrapes.begin(), scrapes.end());
  for (const auto& [t, file] : scrapes) ParseExporterFile(file, t, builder);
}

}  // namespace

bool FieldLogOptions::Check(std::string* error) const {
  if (!std::isfinite(dmon_interval_ms) || dmon_interval_ms < 0) {
    *error = fmt::format("dmon_interval_ms = {} must be >= 0 (0: the lines carry timestamps)",
                         dmon_interval_ms);
    return false;
  }
  if (!std::isfinite(dmon_start_s) || !std::isfinite(utc_offset_h) ||
      std::fabs(utc_offset_h) > 26) {
    *error =
        fmt::format("dmon_start_s = {} and utc_offset_h = {} must be finite (|offset| <= 26 h)",
                    dmon_start_s, utc_offset_h);
    return false;
  }
  return true;
}

int FieldLog::FieldIndex(const std::string& field) const {
  const auto it = std::find(fields.begin(), fields.end(), field);
  return it == fields.end() ? -1 : static_cast<int>(it - fields.begin());
}

const FieldSeries* FieldLog::Find(const std::string& gpu, const std::string& mig_instance) const {
  for (const FieldSeries& s : series) {
    if (s.mig_instance != mig_instance) continue;
    if (!mig_instance.empty() && s.gpu.empty() && s.uuid.empty()) return &s;  // dmon GPU-I
    if (s.gpu == gpu || (!s.uuid.empty() && s.uuid == gpu)) return &s;
  }
  return nullptr;
}

FieldLog ReadFieldLog(const std::string& path, const FieldLogOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  FieldLog log;
  log.path = path;
  LogBuilder builder(&log);
  if (std::filesystem::is_directory(path)) {
    log.format = "dcgm-exporter";
    ReadExporterDirectory(path, options, &builder);
    builder.Finish();
    return log;
  }
  const std::string text = ReadFileText(path, "field log");
  const std::vector<std::string_view> lines = SplitLines(path, text);
  std::string_view first;
  for (std::string_view l : lines) {
    if (!TrimView(l).empty()) {
      first = TrimView(l);
      break;
    }
  }
  if (first.empty()) {
    throw InputError(path, 0, "",
                     "the field log is empty: expected a dcgmi dmon log, dcgm-exporter text or "
                     "wattcal-capture's gpm_fields.csv (timestamp_us,NVML_GPM_METRIC_...)");
  }
  if (StartsWith(first, "timestamp_us,")) {
    log.format = "gpm-csv";
    ParseGpmCsv(path, lines, &builder);
    builder.Finish();
    return log;
  }
  if (StartsWith(first, "DCGM_FI_") || StartsWith(first, "# HELP") || StartsWith(first, "# TYPE")) {
    log.format = "dcgm-exporter";
    ParseExporterFile(path, kNaN, &builder);
    builder.Finish();
    return log;
  }
  log.format = "dcgmi-dmon";
  DmonFieldParser(path, options, &log).Parse(lines);
  return log;
}

FieldWindowMeans AverageFieldWindow(const FieldLog& log, const FieldSeries& series, double start_s,
                                    double end_s, const std::vector<std::string>& wanted,
                                    int min_samples) {
  FieldWindowMeans out;
  std::vector<int> columns;
  for (const std::string& field : wanted) {
    const int c = log.FieldIndex(field);
    if (c < 0) {
      const KnownField* f = FindKnownField(field);
      throw InputError(log.path, 0, field,
                       fmt::format("the log has no column for this field{} (it has {})",
                                   f != nullptr && f->source == FieldSource::kDcgm
                                       ? fmt::format(": record it, dcgmi dmon -e {}", f->id)
                                       : "",
                                   power_log_internal::JoinNames(log.fields)));
    }
    columns.push_back(c);
  }
  std::vector<double> sums(wanted.size(), 0.0);
  std::vector<int> counts(wanted.size(), 0);
  for (size_t i = 0; i < series.time_s.size(); ++i) {
    if (series.time_s[i] < start_s || series.time_s[i] > end_s) continue;
    ++out.samples;
    for (size_t k = 0; k < wanted.size(); ++k) {
      const double v = series.values[i][columns[k]];
      if (std::isnan(v)) continue;
      sums[k] += v;
      ++counts[k];
    }
  }
  bool any_na = false;
  for (size_t k = 0; k < wanted.size(); ++k) {
    out.means[wanted[k]] = counts[k] > 0 ? sums[k] / counts[k] : kNaN;
    out.na_cells[wanted[k]] = out.samples - counts[k];
    any_na = any_na || counts[k] < out.samples;
  }
  if (out.samples < min_samples) out.flags.push_back(kFieldFlagFewSamples);
  if (any_na) out.flags.push_back(kFieldFlagNaCells);
  if (series.time_s.empty() || start_s < series.time_s.front() || end_s > series.time_s.back()) {
    out.flags.push_back(kFieldFlagOutsideLog);
  }
  return out;
}

}  // namespace wattcal
