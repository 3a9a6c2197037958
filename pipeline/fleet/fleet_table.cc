#include "fleet/fleet_table.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "model/model_summary.h"
#include "util/csv_field.h"

namespace wattcal {

std::string FleetModelName(const FleetDescription& d) {
  return std::filesystem::path(d.path).stem().string();
}

std::vector<std::string> FleetComponents(const FleetResult& fleet) {
  std::vector<std::string> names;
  for (const FleetGpu& g : fleet.gpus) {
    if (g.member.status != FleetStatus::kOk) continue;
    for (const std::string& c : g.fit.components)
      if (std::find(names.begin(), names.end(), c) == names.end()) names.push_back(c);
  }
  return names;
}

std::string FleetCsv(const FleetResult& fleet) {
  const std::vector<std::string> components = FleetComponents(fleet);
  std::string s =
      "uuid,name,model,status,message,captures,counters_from,windows,idle_w,static_w,static_w_lo,"
      "static_w_hi,cv_mape_pct,pooled_mape_pct";
  for (const std::string& c : components) {
    const std::string n = ColumnSafeName(c);
    s += fmt::format(",{}_w,{}_w_lo,{}_w_hi", n, n, n);
  }
  s += "\n";
  for (const FleetGpu& g : fleet.gpus) {
    const FleetMember& m = g.member;
    const bool ok = m.status == FleetStatus::kOk;
    s += fmt::format(
        "{},{},{},{},{},{},{},{}", CsvField(m.uuid), CsvField(m.name),
        m.model < 0 ? std::string() : CsvField(FleetModelName(fleet.descriptions[m.model])),
        FleetStatusName(m.status), CsvField(m.message),
        CsvField(fmt::format("{}", fmt::join(m.captures, ";"))),
        ok ? CsvField(g.fit.counters_from) : std::string(), m.windows);
    if (!ok) {
      s += std::string(6 + 3 * components.size(), ',') + "\n";
      continue;
    }
    const GpuFit& f = g.fit;
    s += fmt::format(",{},{},{},{},{},{}", CsvFixed(f.idle_w, 3), CsvFixed(f.static_w.w, 3),
                     CsvFixed(f.static_w.lo_w, 3), CsvFixed(f.static_w.hi_w, 3),
                     CsvFixed(f.cv_mape_pct, 3), CsvFixed(g.pooled_mape_pct, 3));
    for (const std::string& c : components) {
      const auto it = std::find(f.components.begin(), f.components.end(), c);
      if (it == f.components.end()) {
        s += ",,,";
        continue;
      }
      const TermEstimate& t = f.component_w[it - f.components.begin()];
      s += fmt::format(",{},{},{}", CsvFixed(t.w, 3), CsvFixed(t.lo_w, 3), CsvFixed(t.hi_w, 3));
    }
    s += "\n";
  }
  return s;
}

std::string CrossPredictionCsv(const FleetResult& fleet) {
  std::string s = "model,from_uuid,to_uuid,common_benchmarks,mape_pct\n";
  for (const FleetModel& m : fleet.models) {
    const std::string model = CsvField(FleetModelName(fleet.descriptions[m.model]));
    const CrossPrediction& x = m.cross;
    for (size_t a = 0; a < x.gpus.size(); ++a) {
      for (size_t b = 0; b < x.gpus.size(); ++b) {
        const FleetMember& from = fleet.gpus[m.gpus[x.gpus[a]]].member;
        const FleetMember& to = fleet.gpus[m.gpus[x.gpus[b]]].member;
        s += fmt::format("{},{},{},{},{}\n", model, CsvField(FleetMemberName(from)),
                         CsvField(FleetMemberName(to)), x.common_benchmarks(a, b),
                         CsvFixed(x.mape_pct(a, b), 3));
      }
    }
  }
  return s;
}

}  // namespace wattcal
