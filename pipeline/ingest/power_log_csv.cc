// nvidia-smi --query-gpu CSV and raw NVML CSV logs (PowerLogReader::CsvParser).
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
#include "io/units.h"
#include "util/bounds.h"
#include "util/errors.h"
#include "util/logging.h"
#include "util/strings.h"
#include "util/text_input.h"

namespace wattcal {

using namespace power_log_internal;  // NOLINT: this file is one of the parsers

// ----------------------------------------------------------------------------- CSV logs

// nvidia-smi --query-gpu CSV and raw NVML CSV: both are read through CsvReader (libcsv).
class PowerLogReader::CsvParser : public PowerLogReader::Parser {
 public:
  CsvParser(const std::string& path, const PowerLogOptions& options, PowerLogSummary* stats,
            PowerLogFormat format, bool has_header)
      : Parser(path, options, stats), reader_(path, ReaderOptions(options)) {
    this->format = format;
    if (!has_header) {
      // nvidia-smi --format=csv,noheader: the names come from the options.
      std::vector<std::string> names(options.columns.begin(), options.columns.end());
      SetLayout(names, 0, /*from_options=*/true);
    }
  }

  bool NextRow(PowerSample* sample, ValueStatus* power_status) override {
    while (reader_.Next(&fields_)) {
      const int64_t line = reader_.line();
      if (!have_layout_) {
        SetLayout(Strings(fields_), line, /*from_options=*/false);
        continue;
      }
      double time_s = 0.0;
      const bool time_ok =
          fields_.size() == layout_.num_fields && ParseTime(fields_[layout_.time.index], &time_s);
      if (!time_ok) {
        if (LooksLikeHeader(fields_)) {
          SetLayout(Strings(fields_), line, /*from_options=*/false);
          ++stats_->repeated_headers;
          continue;
        }
        if (fields_.size() != layout_.num_fields) {
          reader_.Fail("", fmt::format("{} fields, but {} names {}{}", fields_.size(),
                                       layout_.source, layout_.num_fields,
                                       fields_.size() < layout_.num_fields
                                           ? " (a cut line: the log was truncated?)"
                                           : ""));
        }
        const std::string cell(fields_[layout_.time.index]);
        reader_.Fail(
            layout_.time.label,
            IsMissing(TrimView(cell))
                ? std::string("missing time: every reading needs its time")
                : fmt::format("expected {}, got '{}'", layout_.time_expected, Printable(cell)));
      }
      if (!layout_.id_columns.empty()) {
        std::string_view ids[3];
        size_t count = 0;
        for (int c : layout_.id_columns) ids[count++] = TrimView(fields_[c]);
        if (!SelectGpu(ids, count, line, layout_.id_label)) {
          ++stats_->other_gpu_rows;
          continue;
        }
      }
      sample->line = line;
      sample->time_s = time_s;
      ReadValue(layout_.power, Quantity::kPower, &sample->power_w, power_status);
      ReadOptional(layout_.core, Quantity::kFrequency, &sample->f_core_mhz);
      ReadOptional(layout_.mem, Quantity::kFrequency, &sample->f_mem_mhz);
      ReadOptional(layout_.temp, Quantity::kTemperature, &sample->temperature_c);
      ReadOptional(layout_.energy, Quantity::kEnergy, &sample->energy_j);
      ReadOptional(layout_.limit, Quantity::kPower, &sample->power_limit_w);
      ReadReasons(sample);
      return true;
    }
    return false;
  }

 private:
  struct Column {
    int index = -1;
    UnitFactor factor;  // to W, MHz or C for values without their own unit
    std::string label;  // "column 5 (power.draw [W])", for error messages
    mutable UnitCache unit_cache;
  };
  struct Layout {
    size_t num_fields = 0;
    Column time;
    UnitFactor time_factor;  // raw logs: to seconds
    std::string time_expected;
    Column power;
    std::string power_name;  // canonical
    PowerKind power_kind = PowerKind::kUnknown;
    Column core, mem, temp, energy, limit, reasons;
    std::vector<int> id_columns;
    std::string id_label;
    std::string source;  // "the header on line 3" / "PowerLogOptions::columns"
  };

  static CsvReader::Options ReaderOptions(const PowerLogOptions& options) {
    CsvReader::Options csv;
    csv.fast_path = options.csv_fast_path;
    return csv;
  }

  static std::vector<std::string> Strings(const std::vector<std::string_view>& views) {
    return std::vector<std::string>(views.begin(), views.end());
  }

  bool ParseTime(std::string_view cell, double* time_s) {
    if (format == PowerLogFormat::kNvidiaSmi) {
      if (!ParseSmiTimestampCached(cell, &date_cache_, time_s)) return false;
      *time_s -= options_.utc_offset_h * 3600.0;
      return true;
    }
    double v = 0.0;
    if (!ParseEpochSeconds(cell, &v)) return false;
    *time_s = layout_.time_factor.Apply(v);
    return true;
  }

  // Reads a value of `column`; false when it is missing (*status says how). Bad numbers and
  // units, and values outside their physical bound (util/bounds.h), throw.
  bool ReadValue(const Column& column, Quantity q, double* value,
                 ValueStatus* status = nullptr) const {
    const std::string_view cell = fields_[column.index];
    std::string_view unit;
    const ValueStatus parsed =
        ParseQuantity(cell, q, column.factor, value, &unit, &column.unit_cache);
    if (status != nullptr) *status = parsed;
    switch (parsed) {
      case ValueStatus::kOk:
        // The plain test first: BoundViolation builds a string, too slow for every cell.
        if (!WithinQuantityBound(q, *value)) {
          reader_.Fail(column.label, BoundViolation(BoundQuantity(q), *value));
        }
        return true;
      case ValueStatus::kMissing:
      case ValueStatus::kEmpty:
      case ValueStatus::kNaN: return false;
      case ValueStatus::kNotANumber:
        reader_.Fail(column.label, fmt::format("expected a {} value (a number, optionally with "
                                               "its unit) or [N/A], got '{}'",
                                               QuantityName(q), Printable(cell)));
      case ValueStatus::kUnknownUnit:
        reader_.Fail(column.label,
                     fmt::format("unknown {} unit '{}' in '{}' (expected {})", QuantityName(q),
                                 Printable(unit), Printable(cell), QuantityUnits(q)));
    }
    return false;
  }

  void ReadOptional(const Column& column, Quantity q, double* value) const {
    if (column.index < 0 || !ReadValue(column, q, value)) *value = kNaN;
  }

  void ReadReasons(PowerSample* sample) const {
    sample->clock_reasons = 0;
    sample->has_clock_reasons = false;
    if (layout_.reasons.index < 0) return;
    const std::string_view cell = fields_[layout_.reasons.index];
    switch (ParseClockReasons(cell, &sample->clock_reasons)) {
      case ValueStatus::kOk: sample->has_clock_reasons = true; return;
      case ValueStatus::kMissing: sample->clock_reasons = 0; return;
      default:
        reader_.Fail(layout_.reasons.label,
                     fmt::format("expected a clock event reasons bitmask (hex 0x... or a "
                                 "decimal number) or [N/A], got '{}'",
                                 Printable(cell)));
    }
  }

  static std::string Label(size_t index, const std::string& raw) {
    return fmt::format("column {} ({})", index + 1, raw);
  }

  // An nvidia-smi header: every field a lower-case query name, optionally with " [unit]".
  // A raw header: every field an identifier, one of them the time column.
  bool LooksLikeHeader(const std::vector<std::string_view>& fields) const {
    if (fields.empty()) return false;
    if (format == PowerLogFormat::kNvidiaSmi) {
      for (std::string_view f : fields) {
        if (!IsSmiHeaderName(TrimView(f))) return false;
      }
      return true;
    }
    bool has_time = false;
    for (std::string_view f : fields) {
      const std::string name = ToLower(TrimView(f));
      if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) {
        return false;
      }
      for (char c : name) {
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
      }
      if (StartsWith(name, "timestamp_") || StartsWith(name, "time_")) has_time = true;
    }
    return has_time;
  }

  // Canonical nvidia-smi query name of a header field (alias rewritten, unit removed).
  static std::string SmiCanonical(std::string_view name, std::string* unit) {
    name = TrimView(name);
    unit->clear();
    const size_t bracket = name.find(" [");
    if (bracket != std::string_view::npos && name.back() == ']') {
      *unit = std::string(name.substr(bracket + 2, name.size() - bracket - 3));
      name = TrimView(name.substr(0, bracket));
    }
    std::string lower = ToLower(name);
    static const std::pair<const char*, const char*> kAliases[] = {
        {"clocks.current.sm", "clocks.sm"},
        {"clocks.current.memory", "clocks.mem"},
        {"clocks.memory", "clocks.mem"},
        {"clocks.current.graphics", "clocks.gr"},
        {"clocks.graphics", "clocks.gr"},
        {"clocks.current.video", "clocks.video"},
        {"gpu_uuid", "uuid"},
        {"gpu_name", "name"},
        {"gpu_bus_id", "pci.bus_id"},
        {"power.draw.instantaneous", "power.draw.instant"},
    };
    for (const auto& [alias, canonical] : kAliases) {
      if (lower == alias) return canonical;
    }
    return lower;
  }

  // A header being laid out: its names as written, canonical (alias rewritten, unit removed,
  // lower case) and the units nvidia-smi printed beside them, and where it came from.
  struct Header {
    const std::vector<std::string>& raw;
    std::vector<std::string> canonical;
    std::vector<std::string> units;  // nvidia-smi: " [unit]"; raw logs: ""
    int64_t line = 0;
    bool from_options = false;

    // The index of the column named `name` (canonical), or -1.
    int Find(const std::string& name) const {
      for (size_t i = 0; i < canonical.size(); ++i) {
        if (canonical[i] == name) return static_cast<int>(i);
      }
      return -1;
    }
    // Points `column` at `index` (-1: absent) with its label for messages.
    void Set(Column* column, int index) const {
      column->index = index;
      if (index >= 0) column->label = Label(index, std::string(TrimView(raw[index])));
    }
  };

  // An InputError on the header's line; `field` is replaced by "columns" when the names came
  // from the options.
  [[noreturn]] void FailHeader(const Header& h, const std::string& field,
                               const std::string& message) const {
    throw InputError(path_, h.line, h.from_options ? "columns" : field, message);
  }

  // The factor of a header's " [unit]" (nvidia-smi) for a column used as `q`; identity for
  // none.
  UnitFactor HeaderFactor(const std::string& unit, Quantity q, const std::string& label,
                          int64_t line) const {
    if (unit.empty()) return UnitFactor();
    const Unit* found = FindWord(q, unit);
    if (found == nullptr) {
      throw InputError(path_, line, label,
                       fmt::format("unknown {} unit '[{}]' in the header (expected {})",
                                   QuantityName(q), unit, QuantityUnits(q)));
    }
    return found->to_canonical;
  }

  // Points `column` at `index` and takes its unit from the header (nvidia-smi).
  void SetSmi(const Header& h, Column* column, int index, Quantity q) const {
    h.Set(column, index);
    if (index >= 0) column->factor = HeaderFactor(h.units[index], q, column->label, h.line);
  }

  // The names of a header or of PowerLogOptions::columns, canonical; an empty one throws.
  Header ReadHeader(const std::vector<std::string>& raw_names, int64_t line,
                    bool from_options) const {
    Header h{raw_names, std::vector<std::string>(raw_names.size()),
             std::vector<std::string>(raw_names.size()), line, from_options};
    for (size_t i = 0; i < raw_names.size(); ++i) {
      if (format == PowerLogFormat::kNvidiaSmi) {
        h.canonical[i] = SmiCanonical(raw_names[i], &h.units[i]);
      } else {
        h.canonical[i] = ToLower(TrimView(raw_names[i]));
      }
      if (h.canonical[i].empty()) FailHeader(h, Label(i, raw_names[i]), "empty column name");
    }
    return h;
  }

  // nvidia-smi's power column: PowerLogOptions::power_field, else the first of
  // power.draw.instant, power.draw and power.draw.average.
  int SmiPowerColumn(const Header& h, const Layout& layout) const {
    if (!options_.power_field.empty()) {
      std::string ignored;
      const int power = h.Find(SmiCanonical(options_.power_field, &ignored));
      if (power < 0) {
        throw InputError(path_, h.line, "power_field",
                         fmt::format("no column '{}' in {} ({})", options_.power_field,
                                     layout.source, JoinNames(h.raw)));
      }
      return power;
    }
    for (const char* name : {"power.draw.instant", "power.draw", "power.draw.average"}) {
      const int power = h.Find(name);
      if (power >= 0) return power;
    }
    FailHeader(h, "",
               fmt::format("no power column (power.draw.instant, power.draw or "
                           "power.draw.average) in {} ({})",
                           layout.source, JoinNames(h.raw)));
  }

  // The columns of an nvidia-smi --query-gpu header, with the units in its brackets.
  void SmiLayout(const Header& h, Layout* layout) const {
    h.Set(&layout->time, h.Find("timestamp"));
    if (layout->time.index < 0) {
      FailHeader(h, "",
                 fmt::format("no timestamp column in {} ({}): add timestamp to --query-gpu; "
                             "wattcal never assumes a sampling period",
                             layout->source, JoinNames(h.raw)));
    }
    layout->time_expected = "a timestamp YYYY/MM/DD HH:MM:SS.mmm";
    const int power = SmiPowerColumn(h, *layout);
    SetSmi(h, &layout->power, power, Quantity::kPower);
    layout->power_name = h.canonical[power];
    int core = h.Find("clocks.sm");
    if (core < 0) core = h.Find("clocks.gr");
    SetSmi(h, &layout->core, core, Quantity::kFrequency);
    SetSmi(h, &layout->mem, h.Find("clocks.mem"), Quantity::kFrequency);
    SetSmi(h, &layout->temp, h.Find("temperature.gpu"), Quantity::kTemperature);
    if (layout->power_name == "power.draw.instant") {
      layout->power_kind = PowerKind::kInstant;
    } else if (layout->power_name == "power.draw" || layout->power_name == "power.draw.average") {
      layout->power_kind = PowerKind::kAveraged;  // 1-s averages on Ampere and newer
    }
    int limit = h.Find("enforced.power.limit");
    if (limit < 0) limit = h.Find("power.limit");
    SetSmi(h, &layout->limit, limit, Quantity::kPower);
    int reasons = h.Find("clocks_event_reasons.active");
    if (reasons < 0) reasons = h.Find("clocks_throttle_reasons.active");
    h.Set(&layout->reasons, reasons);
    for (const char* id : {"index", "uuid", "pci.bus_id"}) {
      const int c = h.Find(id);
      if (c >= 0) {
        if (layout->id_columns.empty()) layout->id_label = Label(c, h.raw[c]);
        layout->id_columns.push_back(c);
      }
    }
  }

  // A raw log's time column: the first named timestamp_<unit> or time_<unit>.
  void RawTimeColumn(const Header& h, Layout* layout) const {
    for (size_t i = 0; i < h.canonical.size(); ++i) {
      const std::string& n = h.canonical[i];
      for (const std::string stem : {"timestamp", "time"}) {
        if (layout->time.index >= 0 || !StartsWith(n, stem + "_")) continue;
        const Unit* unit = FindUnitSuffix(Dimension::kTime, n.substr(stem.size() + 1));
        if (unit == nullptr) {
          FailHeader(h, Label(i, h.raw[i]),
                     fmt::format("unknown time unit '{}' (expected {})", n.substr(stem.size() + 1),
                                 UnitColumnList(stem, Dimension::kTime)));
        }
        h.Set(&layout->time, static_cast<int>(i));
        layout->time_factor = unit->to_canonical;
      }
    }
    if (layout->time.index < 0) {
      FailHeader(h, "",
                 fmt::format("no time column (timestamp_us, timestamp_ms, timestamp_s, ...) "
                             "in {} ({})",
                             layout->source, JoinNames(h.raw)));
    }
    layout->time_expected = "a number (" + h.canonical[layout->time.index] + ")";
  }

  // Points `column` (if not yet set) at the first column named one of `stems` and a unit of
  // `q` (raw logs: units from the names' suffixes).
  static void Suffixed(const Header& h, const std::vector<std::string>& stems, Quantity q,
                       Column* column) {
    for (size_t i = 0; i < h.canonical.size() && column->index < 0; ++i) {
      for (const std::string& stem : stems) {
        if (!StartsWith(h.canonical[i], stem)) continue;
        const Unit* unit = FindSuffix(q, h.canonical[i].substr(stem.size()));
        if (unit == nullptr) continue;
        h.Set(column, static_cast<int>(i));
        column->factor = unit->to_canonical;
        break;
      }
    }
  }

  // A raw log's power column: PowerLogOptions::power_field (which must end in its unit), else
  // power_instant_<unit>, else power_<unit>; and whether it is the instant reading.
  void RawPowerColumn(const Header& h, Layout* layout) const {
    if (!options_.power_field.empty()) {
      const std::string wanted = ToLower(TrimView(options_.power_field));
      const int c = h.Find(wanted);
      if (c < 0) {
        throw InputError(path_, h.line, "power_field",
                         fmt::format("no column '{}' in {} ({})", options_.power_field,
                                     layout->source, JoinNames(h.raw)));
      }
      const size_t underscore = wanted.rfind('_');
      const Unit* unit = underscore == std::string::npos
                             ? nullptr
                             : FindSuffix(Quantity::kPower, wanted.substr(underscore + 1));
      if (unit == nullptr) {
        throw InputError(path_, h.line, "power_field",
                         fmt::format("the power column '{}' does not end in its unit ({})",
                                     options_.power_field, UnitColumnList("", Dimension::kPower)));
      }
      h.Set(&layout->power, c);
      layout->power.factor = unit->to_canonical;
    } else {
      Suffixed(h, {"power_instant_"}, Quantity::kPower, &layout->power);
      if (layout->power.index < 0) Suffixed(h, {"power_"}, Quantity::kPower, &layout->power);
      if (layout->power.index < 0) {
        FailHeader(h, "",
                   fmt::format("no power column (power_mw, power_w, ...) in {} ({})",
                               layout->source, JoinNames(h.raw)));
      }
    }
    layout->power_name = h.canonical[layout->power.index];
    Column instant;
    Suffixed(h, {"power_instant_"}, Quantity::kPower, &instant);
    if (StartsWith(layout->power_name, "power_instant_")) {
      layout->power_kind = PowerKind::kInstant;
    } else if (instant.index >= 0) {
      // nvmlDeviceGetPowerUsage beside NVML_FI_DEV_POWER_INSTANT: the averaged reading.
      layout->power_kind = PowerKind::kAveraged;
    }
  }

  // A column named for an energy counter whose unit wattcal does not know (energy_kwh,
  // total_energy): left unread, the log's counter would go unused without a word.
  void RefuseUnknownEnergyColumns(const Header& h) const {
    for (size_t i = 0; i < h.canonical.size(); ++i) {
      const std::string& n = h.canonical[i];
      for (const std::string stem : {"energy", "total_energy"}) {
        if (n != stem && !StartsWith(n, stem + "_")) continue;
        if (n.size() > stem.size() &&
            FindSuffix(Quantity::kEnergy, n.substr(stem.size() + 1)) != nullptr) {
          continue;
        }
        FailHeader(h, Label(i, h.raw[i]),
                   fmt::format("unknown energy column '{}': an energy counter's column names its "
                               "unit ({}; total_energy_<unit> likewise)",
                               h.raw[i], UnitColumnList("energy", Dimension::kEnergy)));
      }
    }
  }

  // The columns of a raw NVML log: units from the names' suffixes.
  void RawLayout(const Header& h, Layout* layout) const {
    RawTimeColumn(h, layout);
    RawPowerColumn(h, layout);
    RefuseUnknownEnergyColumns(h);
    Suffixed(h, {"energy_", "total_energy_"}, Quantity::kEnergy, &layout->energy);
    Suffixed(h, {"power_limit_", "enforced_power_limit_"}, Quantity::kPower, &layout->limit);
    for (const char* name : {"clocks_event_reasons", "clocks_throttle_reasons", "clock_reasons",
                             "clocks_event_reasons_active", "clocks_throttle_reasons_active"}) {
      if (layout->reasons.index < 0) h.Set(&layout->reasons, h.Find(name));
    }
    Suffixed(h, {"f_core_", "sm_clock_", "clock_sm_", "core_clock_", "f_sm_"}, Quantity::kFrequency,
             &layout->core);
    Suffixed(h, {"f_mem_", "mem_clock_", "clock_mem_", "memory_clock_"}, Quantity::kFrequency,
             &layout->mem);
    Suffixed(h, {"temperature_", "temp_", "gpu_temp_"}, Quantity::kTemperature, &layout->temp);
    for (const char* id : {"gpu", "index", "gpu_index", "device", "uuid"}) {
      const int c = h.Find(id);
      if (c >= 0) {
        if (layout->id_columns.empty()) layout->id_label = Label(c, h.raw[c]);
        layout->id_columns.push_back(c);
        if (layout->id_columns.size() == 3) break;
      }
    }
  }

  // The layout of a header (or of PowerLogOptions::columns): which column holds what, in
  // which unit. A repeated header may not change the power column.
  void SetLayout(const std::vector<std::string>& raw_names, int64_t line, bool from_options) {
    Layout layout;
    layout.num_fields = raw_names.size();
    layout.source = from_options ? std::string("PowerLogOptions::columns")
                                 : fmt::format("the header on line {}", line);
    const Header h = ReadHeader(raw_names, line, from_options);
    if (format == PowerLogFormat::kNvidiaSmi) {
      SmiLayout(h, &layout);
    } else {
      RawLayout(h, &layout);
    }
    if (layout.id_columns.size() > 3) layout.id_columns.resize(3);
    if (!options_.gpu.empty() && layout.id_columns.empty()) {
      throw InputError(path_, line, "gpu",
                       fmt::format("the gpu option is '{}' but {} has no column to tell GPUs "
                                   "apart (index, uuid or pci.bus_id)",
                                   options_.gpu, layout.source));
    }
    if (have_layout_ && layout.power_name != layout_.power_name) {
      FailHeader(h, layout.power.label,
                 fmt::format("{} changes the power column from '{}' to '{}': averaged and "
                             "instant readings are never mixed in one log",
                             layout.source, layout_.power_name, layout.power_name));
    }
    layout_ = std::move(layout);
    have_layout_ = true;
    power_field = layout_.power_name;
    power_kind = layout_.power_kind;
    has_core_clock = has_core_clock || layout_.core.index >= 0;
    has_memory_clock = has_memory_clock || layout_.mem.index >= 0;
    has_temperature = has_temperature || layout_.temp.index >= 0;
    has_energy_counter = has_energy_counter || layout_.energy.index >= 0;
    has_clock_reasons = has_clock_reasons || layout_.reasons.index >= 0;
    has_power_limit = has_power_limit || layout_.limit.index >= 0;
  }

  CsvReader reader_;
  std::vector<std::string_view> fields_;  // views into reader_, valid until its next row
  SmiDateCache date_cache_;
  Layout layout_;
  bool have_layout_ = false;
};

std::unique_ptr<PowerLogReader::Parser> PowerLogReader::MakeCsvParser(
    const std::string& path, const PowerLogOptions& options, PowerLogSummary* stats,
    PowerLogFormat format, bool has_header) {
  return std::make_unique<CsvParser>(path, options, stats, format, has_header);
}

}  // namespace wattcal
