#include "perf/perf_models.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "io/csv_reader.h"
#include "perf/perf_csv.h"
#include "util/errors.h"

namespace wattcal {

const std::vector<PerfModelKind>& AllPerfModels() {
  static const std::vector<PerfModelKind> models = {
      PerfModelKind::kCrisp, PerfModelKind::kCrispL, PerfModelKind::kProportional,
      PerfModelKind::kStall, PerfModelKind::kLead,   PerfModelKind::kCrit,
      PerfModelKind::kMiss};
  return models;
}

const char* PerfModelName(PerfModelKind model) {
  switch (model) {
    case PerfModelKind::kCrisp: return "crisp";
    case PerfModelKind::kCrispL: return "crisp_l";
    case PerfModelKind::kProportional: return "proportional";
    case PerfModelKind::kStall: return "stall";
    case PerfModelKind::kLead: return "lead";
    case PerfModelKind::kCrit: return "crit";
    case PerfModelKind::kMiss: return "miss";
  }
  return "?";
}

const char* PerfModelCounterColumn(PerfModelKind model) {
  switch (model) {
    case PerfModelKind::kCrisp:
    case PerfModelKind::kProportional: return "";
    case PerfModelKind::kCrispL: return "load_outstanding_cycles";
    case PerfModelKind::kStall: return "stall_cycles";
    case PerfModelKind::kLead: return "lead_cycles";
    case PerfModelKind::kCrit: return "crit_cycles";
    case PerfModelKind::kMiss: return "miss_cycles";
  }
  return "";
}

namespace {

// The counter a model reads (NaN = absent); 0 for crisp and proportional.
double ModelCounter(PerfModelKind model, const CrispCounters& c) {
  switch (model) {
    case PerfModelKind::kCrisp:
    case PerfModelKind::kProportional: return 0.0;
    case PerfModelKind::kCrispL: return c.load_outstanding_cycles;
    case PerfModelKind::kStall: return c.stall_cycles;
    case PerfModelKind::kLead: return c.lead_cycles;
    case PerfModelKind::kCrit: return c.crit_cycles;
    case PerfModelKind::kMiss: return c.miss_cycles;
  }
  return 0.0;
}

}  // namespace

bool PerfModelApplies(PerfModelKind model, const CrispCounters& counters) {
  return !std::isnan(ModelCounter(model, counters));
}

double CrispCycles(double total_cycles, double lcp_cycles, double load_stall_cycles,
                   double store_stall_cycles, double s) {
  const double C = total_cycles, L = lcp_cycles, Sl = load_stall_cycles, Ss = store_stall_cycles;
  if (s >= 1.0) {
    // CRISP Eq. 4: the LCP is hidden memory time until its overlapped computation, stretched,
    // covers it. CRISP Eq. 5: store stalls shrink while the pure computation stretches.
    return std::max(L, s * (L - Sl)) + std::max(C - L, s * (C - L - Ss));
  }
  // CRISP §5.2, towards a higher frequency: only the pure computation shrinks.
  return L + Ss + s * (C - L - Ss);
}

double LinearModelCycles(double total_cycles, double memory_cycles, double s) {
  return memory_cycles + s * (total_cycles - memory_cycles);
}

double PredictCycles(PerfModelKind model, const CrispCounters& c, double target_mhz) {
  if (!PerfModelApplies(model, c)) {
    throw std::invalid_argument(fmt::format("model {} needs {} for kernel '{}'",
                                            PerfModelName(model), PerfModelCounterColumn(model),
                                            c.kernel));
  }
  if (!(target_mhz > 0.0)) {
    throw std::invalid_argument(fmt::format("target_mhz = {} must be > 0", target_mhz));
  }
  const double s = c.base_mhz / target_mhz;
  if (target_mhz == c.base_mhz) return c.total_cycles;  // s = 1 exactly, whatever rounding
  switch (model) {
    case PerfModelKind::kCrisp:
      return CrispCycles(c.total_cycles, c.lcp_cycles, c.load_stall_cycles, c.store_stall_cycles,
                         s);
    case PerfModelKind::kCrispL:
      return CrispCycles(c.total_cycles, c.load_outstanding_cycles, c.load_stall_cycles,
                         c.store_stall_cycles, s);
    case PerfModelKind::kProportional: return s * c.total_cycles;
    case PerfModelKind::kMiss:
      return LinearModelCycles(c.total_cycles, std::min(c.miss_cycles, c.total_cycles), s);
    case PerfModelKind::kStall:
    case PerfModelKind::kLead:
    case PerfModelKind::kCrit: return LinearModelCycles(c.total_cycles, ModelCounter(model, c), s);
  }
  return c.total_cycles;
}

double PredictTimeS(PerfModelKind model, const CrispCounters& c, double target_mhz) {
  return PredictCycles(model, c, target_mhz) / (c.base_mhz * 1e6);
}

bool TimePredictionOptions::Check(std::string* error) const {
  auto fail = [error](const std::string& m) {
    *error = m;
    return false;
  };
  if (targets_mhz.empty()) return fail("targets_mhz is empty; give at least one target frequency");
  for (size_t i = 0; i < targets_mhz.size(); ++i) {
    if (!(std::isfinite(targets_mhz[i]) && targets_mhz[i] > 0.0)) {
      return fail(
          fmt::format("targets_mhz[{}] = {} must be a finite frequency > 0", i, targets_mhz[i]));
    }
    if (i > 0 && !(targets_mhz[i] > targets_mhz[i - 1])) {
      return fail(
          fmt::format("targets_mhz must be strictly ascending: targets_mhz[{}] = {} "
                      "follows {}",
                      i, targets_mhz[i], targets_mhz[i - 1]));
    }
  }
  for (size_t i = 0; i < models.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (models[i] == models[j]) {
        return fail(fmt::format("models lists '{}' twice", PerfModelName(models[i])));
      }
    }
  }
  return true;
}

std::vector<TimePrediction> PredictTimes(const std::vector<CrispCounters>& counters,
                                         const TimePredictionOptions& options,
                                         const std::string& counters_path,
                                         std::vector<std::string>* skipped) {
  std::string error;
  if (!options.Check(&error)) throw OptionError("invalid time prediction options: " + error);
  // Models in AllPerfModels order; explicit ones must apply to every kernel.
  std::vector<PerfModelKind> models;
  for (PerfModelKind m : AllPerfModels()) {
    const bool explicit_model =
        std::find(options.models.begin(), options.models.end(), m) != options.models.end();
    if (!options.models.empty() && !explicit_model) continue;
    bool applies = true;
    for (const CrispCounters& c : counters) {
      if (PerfModelApplies(m, c)) continue;
      if (explicit_model) {
        throw InputError(counters_path, c.line, PerfModelCounterColumn(m),
                         fmt::format("model '{}' needs the column '{}' (kernel '{}')",
                                     PerfModelName(m), PerfModelCounterColumn(m), c.kernel));
      }
      applies = false;
    }
    if (applies) {
      models.push_back(m);
    } else if (skipped != nullptr) {
      skipped->push_back(PerfModelName(m));
    }
  }
  std::vector<TimePrediction> rows;
  rows.reserve(counters.size() * models.size() * options.targets_mhz.size());
  for (const CrispCounters& c : counters) {
    for (PerfModelKind m : models) {
      for (double f : options.targets_mhz) {
        rows.push_back({c.kernel, PerfModelName(m), f, PredictTimeS(m, c, f), 0});
      }
    }
  }
  return rows;
}

std::string TimesToCsv(const std::vector<TimePrediction>& rows) {
  std::string out = "kernel,model,target_mhz,predicted_time_s\n";
  for (const TimePrediction& r : rows) {
    out += PerfCsvField(r.kernel) + "," + PerfCsvField(r.model) + "," +
           PerfCsvNumber(r.target_mhz) + "," + PerfCsvNumber(r.predicted_time_s) + "\n";
  }
  return out;
}

namespace {

double PositiveTime(const CsvReader& reader, const PerfCsvColumns& columns,
                    const std::vector<std::string>& fields, const std::string& name) {
  const double t = reader.ParseNumber(columns.Cell(fields, name), columns.Spelling(name));
  if (!(t > 0.0))
    reader.Fail(columns.Spelling(name), fmt::format("expected a time > 0 s, got {}", t));
  reader.CheckBound(t, columns.Spelling(name), PhysicalQuantity::kDuration);
  return t;
}

}  // namespace

std::vector<TimePrediction> ReadTimes(const std::string& path) {
  CsvReader reader(path);
  std::vector<std::string> fields;
  if (!reader.Next(&fields)) throw InputError(path, 1, "", "the file is empty");
  const PerfCsvColumns columns(reader, fields,
                               {"kernel", "model", "target_mhz", "predicted_time_s"}, {});
  std::vector<TimePrediction> rows;
  std::map<std::tuple<std::string, std::string, double>, int64_t> seen;
  while (reader.Next(&fields)) {
    columns.CheckWidth(reader, fields);
    TimePrediction r;
    r.line = reader.line();
    r.kernel = columns.Cell(fields, "kernel");
    r.model = columns.Cell(fields, "model");
    if (r.kernel.empty()) reader.Fail("kernel", "empty kernel name");
    if (r.model.empty()) reader.Fail("model", "empty model name");
    r.target_mhz = columns.FrequencyMhz(reader, fields, "target_mhz");
    r.predicted_time_s = PositiveTime(reader, columns, fields, "predicted_time_s");
    const auto [it, inserted] =
        seen.emplace(std::make_tuple(r.kernel, r.model, r.target_mhz), r.line);
    if (!inserted) {
      reader.Fail(columns.Spelling("target_mhz"),
                  fmt::format("kernel '{}', model '{}' at {} MHz appears twice (first on line {})",
                              r.kernel, r.model, r.target_mhz, it->second));
    }
    rows.push_back(std::move(r));
  }
  if (rows.empty()) throw InputError(path, reader.line(), "", "no rows after the header");
  return rows;
}

std::vector<ActualTime> ReadActualTimes(const std::string& path) {
  CsvReader reader(path);
  std::vector<std::string> fields;
  if (!reader.Next(&fields)) throw InputError(path, 1, "", "the file is empty");
  const PerfCsvColumns columns(reader, fields, {"kernel", "target_mhz", "actual_time_s"}, {});
  std::vector<ActualTime> rows;
  std::map<std::pair<std::string, double>, int64_t> seen;
  while (reader.Next(&fields)) {
    columns.CheckWidth(reader, fields);
    ActualTime r;
    r.line = reader.line();
    r.kernel = columns.Cell(fields, "kernel");
    if (r.kernel.empty()) reader.Fail("kernel", "empty kernel name");
    r.target_mhz = columns.FrequencyMhz(reader, fields, "target_mhz");
    r.actual_time_s = PositiveTime(reader, columns, fields, "actual_time_s");
    const auto [it, inserted] = seen.emplace(std::make_pair(r.kernel, r.target_mhz), r.line);
    if (!inserted) {
      reader.Fail(columns.Spelling("target_mhz"),
                  fmt::format("kernel '{}' at {} MHz appears twice (first on line {})", r.kernel,
                              r.target_mhz, it->second));
    }
    rows.push_back(std::move(r));
  }
  if (rows.empty()) throw InputError(path, reader.line(), "", "no rows after the header");
  return rows;
}

std::string ActualTimesToCsv(const std::vector<ActualTime>& rows) {
  std::string out = "kernel,target_mhz,actual_time_s\n";
  for (const ActualTime& r : rows) {
    out += PerfCsvField(r.kernel) + "," + PerfCsvNumber(r.target_mhz) + "," +
           PerfCsvNumber(r.actual_time_s) + "\n";
  }
  return out;
}

}  // namespace wattcal
