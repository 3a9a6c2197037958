// dcgmi dmon logs (PowerLogReader::DmonParser).
#include "ingest/power_log.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string_view>

#include "ingest/internal/power_log_parser.h"
#include "io/csv_reader.h"
#include "util/bounds.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/strings.h"
#include "util/text_input.h"

namespace wattcal {

using namespace power_log_internal;  // NOLINT: this file is one of the parsers

// ----------------------------------------------------------------------------- dcgmi dmon

// Reads lines in 64 KiB blocks (constant memory but for one line).
class LineReader {
 public:
  explicit LineReader(const std::string& path) : path_(path) {
    file_ = std::fopen(path.c_str(), "rb");
    if (file_ == nullptr) {
      throw InputError(path, 0, "", std::string("cannot open file: ") + std::strerror(errno));
    }
    buffer_.resize(1 << 16);
  }
  ~LineReader() {
    if (file_ != nullptr) std::fclose(file_);
  }
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line without its end-of-line; false at the end of the file.
  bool Next(std::string_view* line) {
    for (;;) {
      const char* begin = buffer_.data() + pos_;
      const char* nl = static_cast<const char*>(std::memchr(begin, '\n', end_ - pos_));
      if (nl != nullptr) {
        const size_t length = static_cast<size_t>(nl - begin);
        ++line_number_;
        pos_ += length + 1;
        if (!carry_.empty()) {
          carry_.append(begin, length);
          current_.swap(carry_);
          carry_.clear();
          *line = StripCr(current_);
        } else {
          *line = StripCr(std::string_view(begin, length));
        }
        if (line_number_ == 1) *line = StripUtf8ByteOrderMark(*line);
        return true;
      }
      carry_.append(begin, end_ - pos_);
      pos_ = end_ = 0;
      if (eof_) {
        if (carry_.empty()) return false;
        ++line_number_;
        current_.swap(carry_);
        carry_.clear();
        *line = StripCr(current_);
        if (line_number_ == 1) *line = StripUtf8ByteOrderMark(*line);
        return true;
      }
      end_ = std::fread(buffer_.data(), 1, buffer_.size(), file_);
      if (end_ < buffer_.size()) eof_ = true;
    }
  }
  int64_t line() const { return line_number_; }

 private:
  static std::string_view StripCr(std::string_view s) {
    while (!s.empty() && s.back() == '\r') s.remove_suffix(1);
    return s;
  }
  std::string path_;
  std::FILE* file_ = nullptr;
  std::vector<char> buffer_;
  size_t pos_ = 0;
  size_t end_ = 0;
  bool eof_ = false;
  std::string carry_;
  std::string current_;
  int64_t line_number_ = 0;
};

class PowerLogReader::DmonParser : public PowerLogReader::Parser {
 public:
  DmonParser(const std::string& path, const PowerLogOptions& options, PowerLogSummary* stats)
      : Parser(path, options, stats), lines_(path) {
    format = PowerLogFormat::kDcgmiDmon;
  }

  bool NextRow(PowerSample* sample, ValueStatus* power_status) override {
    std::string_view raw;
    while (lines_.Next(&raw)) {
      const int64_t line = lines_.line();
      bool has_time = false;
      bool is_epoch = false;
      double time_s = 0.0;
      const std::string_view rest = SplitDmonTimestamp(raw, &has_time, &time_s, &is_epoch);
      if (rest.empty()) continue;
      if (StartsWith(rest, "#")) {
        SetHeader(rest, line);
        continue;
      }
      if (StartsWith(rest, "ID") && (rest.size() == 2 || rest[2] == ' ' || rest[2] == '\t')) {
        if (last_header_line_ == line - 1) SetUnits(rest, line);
        continue;
      }
      if (StartsWith(rest, "dmon was stopped")) continue;  // dcgmi's message on Ctrl-C
      if (!have_header_) {
        throw InputError(path_, line, "",
                         fmt::format("expected the dcgmi dmon header '#Entity ...' before the "
                                     "first row, got '{}'",
                                     std::string(rest.substr(0, 60))));
      }
      tokens_ = SplitWhitespace(rest);
      if (tokens_.size() < 2) {
        throw InputError(path_, line, "",
                         fmt::format("expected a row 'GPU <id> <values>', got '{}'",
                                     std::string(rest.substr(0, 60))));
      }
      const std::string_view entity = tokens_[0];
      const std::string_view id = tokens_[1];
      if (id.empty() || !std::isdigit(static_cast<unsigned char>(id[0]))) {
        throw InputError(path_, line, "#Entity",
                         fmt::format("expected an entity like 'GPU 0', got '{} {}'",
                                     std::string(entity), std::string(id)));
      }
      if (tokens_.size() - 2 != names_.size()) {
        throw InputError(
            path_, line, "",
            fmt::format(
                "{} values after '{} {}', but the header on line {} names {} fields{}",
                tokens_.size() - 2, std::string(entity), std::string(id), last_header_line_,
                names_.size(),
                tokens_.size() - 2 < names_.size() ? " (a cut line: the log was truncated?)" : ""));
      }
      if (entity != "GPU") {  // GPU-I, GPU-CI, Switch, ...: no board power
        ++stats_->other_gpu_rows;
        continue;
      }
      if (!SelectGpu(&id, 1, line, "#Entity")) {
        ++stats_->other_gpu_rows;
        continue;
      }
      // Time: the line's own timestamp, or the declared -d interval.
      if (rows_ == 0) timed_ = has_time;
      if (has_time != timed_) {
        throw InputError(path_, line, "",
                         timed_ ? "this row has no leading timestamp but the earlier ones do"
                                : "this row has a leading timestamp but the earlier ones do not");
      }
      if (timed_) {
        sample->time_s = is_epoch ? time_s : time_s - options_.utc_offset_h * 3600.0;
      } else {
        if (options_.dmon_interval_ms <= 0.0) {
          throw InputError(path_, line, "",
                           "dcgmi dmon rows carry no timestamps: give the -d delay "
                           "(PowerLogOptions::dmon_interval_ms) or prefix each line with a "
                           "timestamp (e.g. | ts '%Y-%m-%dT%H:%M:%.S')");
        }
        sample->time_s =
            options_.dmon_start_s + static_cast<double>(rows_) * options_.dmon_interval_ms * 1e-3;
      }
      ++rows_;
      sample->line = line;
      ReadValue(power_, Quantity::kPower, line, &sample->power_w, power_status);
      ReadOptional(core_, Quantity::kFrequency, line, &sample->f_core_mhz);
      ReadOptional(mem_, Quantity::kFrequency, line, &sample->f_mem_mhz);
      ReadOptional(temp_, Quantity::kTemperature, line, &sample->temperature_c);
      sample->energy_j = kNaN;  // dmon logs carry no energy counter or reasons here
      sample->clock_reasons = 0;
      sample->has_clock_reasons = false;
      sample->power_limit_w = kNaN;
      return true;
    }
    return false;
  }

 private:
  bool ReadValue(int field, Quantity q, int64_t line, double* value,
                 ValueStatus* status = nullptr) const {
    const std::string_view cell = tokens_[2 + field];
    std::string_view unit;
    const ValueStatus parsed = ParseQuantity(cell, q, factors_[field], value, &unit);
    if (status != nullptr) *status = parsed;
    switch (parsed) {
      case ValueStatus::kOk:
        if (!WithinQuantityBound(q, *value)) {
          throw InputError(path_, line, names_[field], BoundViolation(BoundQuantity(q), *value));
        }
        return true;
      case ValueStatus::kMissing:
      case ValueStatus::kEmpty:
      case ValueStatus::kNaN: return false;
      case ValueStatus::kNotANumber:
        throw InputError(path_, line, names_[field],
                         fmt::format("expected a {} value or N/A, got '{}'", QuantityName(q),
                                     std::string(cell)));
      case ValueStatus::kUnknownUnit:
        throw InputError(path_, line, names_[field],
                         fmt::format("unknown {} unit '{}' (expected {})", QuantityName(q),
                                     std::string(unit), QuantityUnits(q)));
    }
    return false;
  }
  void ReadOptional(int field, Quantity q, int64_t line, double* value) const {
    if (field < 0 || !ReadValue(field, q, line, value)) *value = kNaN;
  }

  // `#Entity   POWER     POWINST   SMCLK ...` (possibly `# Entity`).
  void SetHeader(std::string_view text, int64_t line) {
    std::string_view body = TrimView(text.substr(1));
    if (!StartsWith(body, "Entity")) {
      throw InputError(path_, line, "",
                       fmt::format("expected the dcgmi dmon header '#Entity ...', got '{}'",
                                   std::string(text.substr(0, 60))));
    }
    // Field names and their offsets from the '#' (the units line aligns with them).
    std::vector<std::string> names;
    std::vector<size_t> offsets;
    const size_t entity_end = static_cast<size_t>(body.data() - text.data()) + 6;
    size_t i = entity_end;
    while (i < text.size()) {
      while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
      const size_t b = i;
      while (i < text.size() && text[i] != ' ' && text[i] != '\t') ++i;
      if (i > b) {
        names.emplace_back(text.substr(b, i - b));
        offsets.push_back(b);
      }
    }
    if (names.empty()) {
      throw InputError(path_, line, "", "the dcgmi dmon header names no field");
    }
    if (have_header_ && names == names_) {
      ++stats_->repeated_headers;
      last_header_line_ = line;
      return;
    }
    int power = -1;
    auto find = [&](std::initializer_list<const char*> keys) {
      for (const char* key : keys) {
        for (size_t k = 0; k < names.size(); ++k) {
          if (EqualsIgnoreCase(names[k], key)) return static_cast<int>(k);
        }
      }
      return -1;
    };
    if (!options_.power_field.empty()) {
      std::string wanted(TrimView(options_.power_field));
      if (wanted == "155" || EqualsIgnoreCase(wanted, "power_usage")) wanted = "POWER";
      if (wanted == "157" || EqualsIgnoreCase(wanted, "power_usage_instant")) wanted = "POWINST";
      power = find({wanted.c_str()});
      if (power < 0) {
        throw InputError(path_, line, "power_field",
                         fmt::format("no field '{}' in the dcgmi dmon header ({})",
                                     options_.power_field, JoinNames(names)));
      }
    } else {
      power = find({"POWINST", "POWER"});
      if (power < 0) {
        throw InputError(path_, line, "",
                         fmt::format("no power field in the dcgmi dmon header ({}): monitor "
                                     "field 157 (POWINST) or 155 (POWER), e.g. dmon -e 157",
                                     JoinNames(names)));
      }
    }
    const std::string power_name = Upper(names[power]);
    if (have_header_ && power_name != power_field) {
      throw InputError(path_, line, names[power],
                       fmt::format("the header on line {} changes the power field from '{}' "
                                   "to '{}': averaged and instant readings are never mixed",
                                   line, power_field, power_name));
    }
    if (have_header_) ++stats_->repeated_headers;
    core_ = find({"SMCLK"});
    mem_ = find({"MMCLK"});
    temp_ = find({"TMPTR"});
    names_ = std::move(names);
    offsets_ = std::move(offsets);
    power_ = power;
    power_field = power_name;
    power_kind = power_name == "POWINST" ? PowerKind::kInstant
                 : power_name == "POWER" ? PowerKind::kAveraged
                                         : PowerKind::kUnknown;
    has_core_clock = has_core_clock || core_ >= 0;
    has_memory_clock = has_memory_clock || mem_ >= 0;
    has_temperature = has_temperature || temp_ >= 0;
    // DCGM's documented units until the units line says otherwise: W, MHz, C.
    factors_.assign(names_.size(), UnitFactor());
    have_header_ = true;
    last_header_line_ = line;
  }

  // `ID        W         W         MHz` aligned under the header's names.
  void SetUnits(std::string_view text, int64_t line) {
    for (size_t k = 0; k < names_.size(); ++k) {
      const int field = static_cast<int>(k);
      Quantity q = Quantity::kPower;
      if (field == core_ || field == mem_) {
        q = Quantity::kFrequency;
      } else if (field == temp_) {
        q = Quantity::kTemperature;
      } else if (field != power_) {
        continue;  // a field wattcal does not read
      }
      const size_t o = offsets_[k];
      if (o >= text.size() || text[o] == ' ' || text[o] == '\t') continue;  // no unit printed
      size_t e = o;
      while (e < text.size() && text[e] != ' ' && text[e] != '\t') ++e;
      const std::string_view unit = text.substr(o, e - o);
      const Unit* found = FindWord(q, unit);
      if (found == nullptr) {
        throw InputError(path_, line, names_[k],
                         fmt::format("unknown {} unit '{}' in the units line (expected {})",
                                     QuantityName(q), std::string(unit), QuantityUnits(q)));
      }
      factors_[k] = found->to_canonical;
    }
  }

  static std::string Upper(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
  }

  LineReader lines_;
  std::vector<std::string_view> tokens_;
  std::vector<std::string> names_;
  std::vector<size_t> offsets_;
  std::vector<UnitFactor> factors_;  // to W, MHz or C, from the units line
  int power_ = -1, core_ = -1, mem_ = -1, temp_ = -1;
  bool have_header_ = false;
  int64_t last_header_line_ = 0;
  bool timed_ = false;
  int64_t rows_ = 0;
};

// ============================================================================= reader

std::unique_ptr<PowerLogReader::Parser> PowerLogReader::MakeDmonParser(
    const std::string& path, const PowerLogOptions& options, PowerLogSummary* stats) {
  return std::make_unique<DmonParser>(path, options, stats);
}

}  // namespace wattcal
