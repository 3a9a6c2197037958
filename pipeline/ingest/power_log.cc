#include "ingest/power_log.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string_view>

#include "ingest/log_number.h"
#include "ingest/internal/power_log_parser.h"
#include "io/csv_reader.h"
#include "util/bounds.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/option_rule.h"
#include "util/strings.h"
#include "util/text_input.h"

namespace wattcal {

using namespace power_log_internal;  // NOLINT: the reader of the parsers' helpers

bool ParseLogNumberPrefix(const char* begin, const char* end, double* value, const char** stop) {
  return ParseNumberPrefix(begin, end, value, stop);
}

bool ParseSmiTimestamp(const char* text, size_t length, double* epoch_s) {
  const char* p = text;
  const char* end = text + length;
  while (p < end && (*p == ' ' || *p == '\t')) ++p;
  while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r')) --end;
  int64_t days = 0;
  if (!ParseSmiDate(p, end, &days)) return false;
  if (p >= end || (*p != ' ' && *p != 'T')) return false;
  ++p;
  int64_t whole = 0;
  double fraction = 0.0;
  if (!ParseSmiTimeOfDay(p, end, &whole, &fraction)) return false;
  *epoch_s = static_cast<double>(days * 86400 + whole) + fraction;
  return true;
}

const char* PowerKindName(PowerKind kind) {
  switch (kind) {
    case PowerKind::kInstant: return "instant";
    case PowerKind::kAveraged: return "averaged";
    case PowerKind::kUnknown: return "unknown";
  }
  return "unknown";
}

const char* PowerLogFormatName(PowerLogFormat format) {
  switch (format) {
    case PowerLogFormat::kNvidiaSmi: return "nvidia-smi";
    case PowerLogFormat::kNvmlRaw: return "nvml-raw";
    case PowerLogFormat::kDcgmiDmon: return "dcgmi-dmon";
  }
  return "unknown";
}

bool PowerLogOptions::Check(std::string* error) const {
  if (!std::isfinite(utc_offset_h) || std::fabs(utc_offset_h) > 26.0)
    return RejectOption(error,
                        "PowerLogOptions.utc_offset_h = {} must be a finite number of hours "
                        "within [-26, 26]",
                        utc_offset_h);
  if (!(dmon_interval_ms >= 0.0) || !std::isfinite(dmon_interval_ms))
    return RejectOption(error, "PowerLogOptions.dmon_interval_ms = {} must be >= 0 (0 = none)",
                        dmon_interval_ms);
  if (!std::isfinite(dmon_start_s))
    return RejectOption(error, "PowerLogOptions.dmon_start_s = {} must be finite", dmon_start_s);
  for (size_t i = 0; i < columns.size(); ++i) {
    if (TrimView(columns[i]).empty())
      return RejectOption(error, "PowerLogOptions.columns[{}] is empty: every column needs a name",
                          i);
  }
  return true;
}

namespace {

struct Probe {
  std::string first_line;  // first line that is not blank
  int64_t first_line_number = 0;
};

// Opens `path`, rejects empty files and a cut last line, and returns the first non-blank line.
Probe ProbeLog(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    throw InputError(path, 0, "", std::string("cannot open file: ") + std::strerror(errno));
  }
  struct Closer {
    std::FILE* f;
    ~Closer() { std::fclose(f); }
  } closer{file};
  if (std::fseek(file, 0, SEEK_END) != 0) {
    throw InputError(path, 0, "", "cannot seek: not a regular file?");
  }
  const long size = std::ftell(file);
  if (size == 0) throw InputError(path, 0, "", "empty power log (0 bytes)");
  if (size > 0) {
    std::fseek(file, size - 1, SEEK_SET);
    const int last = std::fgetc(file);
    if (last != '\n' && last != '\r') {
      // Name the cut line: count the lines before it.
      std::rewind(file);
      int64_t lines = 0;
      char block[1 << 16];
      size_t n;
      while ((n = std::fread(block, 1, sizeof(block), file)) > 0) {
        lines += std::count(block, block + n, '\n');
      }
      throw InputError(path, lines + 1, "",
                       "the last line has no end-of-line: the log was cut (truncated, or "
                       "still being written)");
    }
  }
  std::rewind(file);
  Probe probe;
  std::string line;
  int64_t number = 0;
  int c;
  while (true) {
    line.clear();
    while ((c = std::fgetc(file)) != EOF && c != '\n') line.push_back(static_cast<char>(c));
    if (c == EOF && line.empty()) break;
    ++number;
    if (number == 1) StripUtf8ByteOrderMark(&line);
    if (!TrimView(line).empty()) {
      probe.first_line = line;
      probe.first_line_number = number;
      return probe;
    }
    if (c == EOF) break;
  }
  throw InputError(path, 0, "", "empty power log: only blank lines");
}

bool IsSmiHeaderLine(std::string_view line) {
  size_t start = 0;
  while (start <= line.size()) {
    size_t comma = line.find(',', start);
    if (comma == std::string_view::npos) comma = line.size();
    if (!IsSmiHeaderName(TrimView(line.substr(start, comma - start)))) return false;
    start = comma + 1;
  }
  return true;
}

bool IsRawHeaderLine(std::string_view line) {
  size_t start = 0;
  while (start <= line.size()) {
    size_t comma = line.find(',', start);
    if (comma == std::string_view::npos) comma = line.size();
    const std::string name = ToLower(TrimView(line.substr(start, comma - start)));
    for (const char* prefix : {"timestamp_", "time_"}) {
      if (StartsWith(name, prefix) && name.find(' ') == std::string::npos) return true;
    }
    start = comma + 1;
  }
  return false;
}

}  // namespace

PowerLogReader::PowerLogReader(const std::string& path, const PowerLogOptions& options)
    : path_(path) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  const Probe probe = ProbeLog(path);
  bool has_time = false;
  bool is_epoch = false;
  double ignored = 0.0;
  const std::string_view rest =
      SplitDmonTimestamp(probe.first_line, &has_time, &ignored, &is_epoch);
  if (StartsWith(rest, "#")) {
    parser_ = MakeDmonParser(path, options, &stats_);
  } else if (IsRawHeaderLine(probe.first_line)) {
    parser_ = MakeCsvParser(path, options, &stats_, PowerLogFormat::kNvmlRaw,
                            /*has_header=*/true);
  } else if (IsSmiHeaderLine(probe.first_line)) {
    parser_ = MakeCsvParser(path, options, &stats_, PowerLogFormat::kNvidiaSmi,
                            /*has_header=*/true);
  } else {
    if (options.columns.empty()) {
      throw InputError(
          path, probe.first_line_number, "",
          fmt::format("no header line (the log starts with '{}'): for an nvidia-smi "
                      "--format=csv,noheader log give the column names "
                      "(PowerLogOptions::columns, the --query-gpu list); other logs need "
                      "their header (nvidia-smi, timestamp_us,power_mw or dcgmi dmon)",
                      probe.first_line.substr(0, 60)));
    }
    parser_ = MakeCsvParser(path, options, &stats_, PowerLogFormat::kNvidiaSmi,
                            /*has_header=*/false);
  }
}

PowerLogReader::~PowerLogReader() = default;

bool PowerLogReader::Next(PowerSample* sample) {
  if (done_) return false;
  ValueStatus power_status = ValueStatus::kOk;
  while (parser_->NextRow(sample, &power_status)) {
    if (!WithinBound(PhysicalQuantity::kTime, sample->time_s)) {
      throw InputError(path_, sample->line, "time",
                       BoundViolation(PhysicalQuantity::kTime, sample->time_s));
    }
    if (have_time_ && sample->time_s < last_time_s_) {
      throw InputError(path_, sample->line, "time",
                       fmt::format("time goes backwards: {:.6f} s here, {:.6f} s on line {} "
                                   "(times must be non-decreasing)",
                                   sample->time_s, last_time_s_, last_time_line_));
    }
    have_time_ = true;
    last_time_s_ = sample->time_s;
    last_time_line_ = sample->line;
    if (power_status != ValueStatus::kOk) {
      if (power_status == ValueStatus::kEmpty) {
        if (stats_.empty_power_rows++ == 0) stats_.first_empty_power_line = sample->line;
      } else if (power_status == ValueStatus::kNaN) {
        if (stats_.nan_power_rows++ == 0) stats_.first_nan_power_line = sample->line;
      } else {
        ++stats_.missing_power_rows;
      }
      continue;
    }
    if (stats_.samples++ == 0) stats_.first_time_s = sample->time_s;
    stats_.last_time_s = sample->time_s;
    return true;
  }
  done_ = true;
  parser_->Finish();
  const int64_t skipped =
      stats_.missing_power_rows + stats_.empty_power_rows + stats_.nan_power_rows;
  if (stats_.samples == 0) {
    throw InputError(path_, 0, "",
                     skipped > 0 ? fmt::format("no power readings: all {} rows have a missing "
                                               "power value ({} [N/A] or [Not Supported], {} "
                                               "empty, {} NaN)",
                                               skipped, stats_.missing_power_rows,
                                               stats_.empty_power_rows, stats_.nan_power_rows)
                                 : std::string("no power readings in the log (header only?)"));
  }
  const std::string note = EmptyOrNanPowerNote(path_, stats_);
  if (!note.empty()) LogWarning(note);
  return false;
}

std::string EmptyOrNanPowerNote(const std::string& path, const PowerLogSummary& stats) {
  if (stats.empty_power_rows == 0 && stats.nan_power_rows == 0) return "";
  std::string first;
  if (stats.empty_power_rows > 0) first = fmt::format("{}:{}", path, stats.first_empty_power_line);
  if (stats.nan_power_rows > 0) {
    first +=
        fmt::format("{}{}:{}", first.empty() ? "" : ", NaN at ", path, stats.first_nan_power_line);
  }
  return fmt::format("{} rows with an empty power cell and {} with NaN were skipped ({} first)",
                     stats.empty_power_rows, stats.nan_power_rows, first);
}

PowerLogFormat PowerLogReader::format() const { return parser_->format; }
const std::string& PowerLogReader::power_field() const { return parser_->power_field; }
bool PowerLogReader::has_core_clock() const { return parser_->has_core_clock; }
bool PowerLogReader::has_memory_clock() const { return parser_->has_memory_clock; }
bool PowerLogReader::has_temperature() const { return parser_->has_temperature; }
PowerKind PowerLogReader::power_kind() const { return parser_->power_kind; }
bool PowerLogReader::has_energy_counter() const { return parser_->has_energy_counter; }
bool PowerLogReader::has_clock_reasons() const { return parser_->has_clock_reasons; }
bool PowerLogReader::has_power_limit() const { return parser_->has_power_limit; }
const std::string& PowerLogReader::path() const { return path_; }
const PowerLogSummary& PowerLogReader::stats() const { return stats_; }

}  // namespace wattcal