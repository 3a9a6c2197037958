#include "port/technology_node.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "io/csv_reader.h"
#include "util/errors.h"
#include "util/option_rule.h"

namespace wattcal {
namespace {

bool PositiveFinite(double v) { return std::isfinite(v) && v > 0.0; }

}  // namespace

const TechnologyNode* NodeTable::Find(const std::string& name) const {
  for (const TechnologyNode& n : nodes) {
    if (n.node == name) return &n;
  }
  return nullptr;
}

NodeTable ReadNodeTable(const std::string& path) {
  CsvReader::Options csv_options;
  csv_options.comment = '#';
  CsvReader reader(path, csv_options);
  std::vector<std::string> header;
  if (!reader.Next(&header)) throw InputError(path, 0, "", "empty file (expected a CSV header)");
  const std::vector<std::string> known = {
      "node", "label", "vdd_v", "capacitance_rel", "leakage_current_rel", "source"};
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < header.size(); ++i) {
    if (std::find(known.begin(), known.end(), header[i]) == known.end()) {
      reader.Fail(header[i],
                  "unknown column; the columns are node, label (optional), vdd_v, "
                  "capacitance_rel, leakage_current_rel, source");
    }
    if (!at.emplace(header[i], i).second) reader.Fail(header[i], "column named twice");
  }
  for (const char* required :
       {"node", "vdd_v", "capacitance_rel", "leakage_current_rel", "source"}) {
    if (at.count(required) == 0) reader.Fail(required, "missing column");
  }
  NodeTable table;
  table.path = path;
  std::vector<std::string> fields;
  while (reader.Next(&fields)) {
    if (fields.size() != header.size()) {
      reader.Fail("", fmt::format("{} fields, the header has {}", fields.size(), header.size()));
    }
    TechnologyNode n;
    n.line = reader.line();
    n.node = fields[at["node"]];
    if (n.node.empty()) reader.Fail("node", "empty node name");
    if (table.Find(n.node) != nullptr) {
      reader.Fail("node", fmt::format("node \"{}\" appears twice", n.node));
    }
    if (at.count("label")) n.label = fields[at["label"]];
    const auto positive = [&](const char* field) {
      const double v = reader.ParseNumber(fields[at[field]], field);
      if (!PositiveFinite(v)) reader.Fail(field, fmt::format("{} must be > 0", v));
      return v;
    };
    n.vdd_v = positive("vdd_v");
    n.capacitance_rel = positive("capacitance_rel");
    n.leakage_current_rel = positive("leakage_current_rel");
    n.source = fields[at["source"]];
    if (n.source.empty()) reader.Fail("source", "every row must cite its source");
    table.nodes.push_back(n);
  }
  if (table.nodes.empty()) throw InputError(path, 0, "", "no nodes");
  return table;
}

bool NodePortOptions::Check(std::string* error) const {
  if (!PositiveFinite(board_constant_factor))
    return RejectOption(error, "board_constant_factor = {} must be a finite factor > 0",
                        board_constant_factor);
  const std::pair<const char*, double> factors[] = {{"dynamic_factor", dynamic_factor},
                                                    {"static_factor", static_factor},
                                                    {"idle_sm_factor", idle_sm_factor}};
  for (const auto& [name, v] : factors) {
    if (!std::isfinite(v) || v < 0.0)
      return RejectOption(error, "{} = {} must be a finite factor > 0 (or 0: from the node table)",
                          name, v);
  }
  return true;
}

NodeScaling MakeNodeScaling(const NodeTable* table, const NodePortOptions& options) {
  std::string error;
  if (!options.Check(&error)) throw OptionError(error);
  NodeScaling s;
  s.from_node = options.from_node;
  s.to_node = options.to_node;
  s.board_constant_factor = options.board_constant_factor;
  if (options.NeedsTable()) {
    if (table == nullptr || options.from_node.empty() || options.to_node.empty()) {
      throw OptionError(
          "a node table, from_node and to_node are needed unless dynamic_factor "
          "and static_factor are both given");
    }
    const TechnologyNode* from = table->Find(options.from_node);
    const TechnologyNode* to = table->Find(options.to_node);
    for (const auto& [name, node] :
         {std::make_pair(options.from_node, from), std::make_pair(options.to_node, to)}) {
      if (node != nullptr) continue;
      std::string list;
      for (const TechnologyNode& n : table->nodes) list += (list.empty() ? "" : ", ") + n.node;
      throw InputError(table->path, 0, "node",
                       fmt::format("no node \"{}\"; the table has {}", name, list));
    }
    const double v = to->vdd_v / from->vdd_v;
    s.dynamic_factor = (to->capacitance_rel / from->capacitance_rel) * v * v;
    s.static_factor = v * (to->leakage_current_rel / from->leakage_current_rel);
    s.dynamic_source = s.static_source = s.idle_sm_source = "node table";
  }
  if (options.dynamic_factor > 0.0) {
    s.dynamic_factor = options.dynamic_factor;
    s.dynamic_source = "given";
  }
  if (options.static_factor > 0.0) {
    s.static_factor = options.static_factor;
    s.static_source = "given";
  }
  s.idle_sm_factor = s.static_factor;
  s.idle_sm_source = s.static_source;
  if (options.idle_sm_factor > 0.0) {
    s.idle_sm_factor = options.idle_sm_factor;
    s.idle_sm_source = "given";
  }
  return s;
}

PowerModel ScaleModelToNode(const PowerModel& model, const NodeScaling& scaling) {
  if (scaling.board_constant_factor != 1.0) {
    throw OptionError(fmt::format(
        "board_constant_factor = {}: the TPDS model keeps static and board-constant power "
        "together in alpha0, so it has no separate constant term to scale",
        scaling.board_constant_factor));
  }
  PowerModel out = model;
  for (double& g : out.component_w_per_mhz) g *= scaling.dynamic_factor;
  for (double& a : out.idle_dyn_w_per_mhz) a *= scaling.dynamic_factor;
  for (double& a : out.static_w) a *= scaling.static_factor;
  out.gpu.clear();  // a GPU of another node: not the one the data came from
  // The bootstrap replicates and their errors are the base node's: no prediction interval.
  out.prediction_interval = PredictionIntervalData();
  out.trained_on =
      fmt::format("{}{}: dynamic x{:.17g}, static x{:.17g})", model.trained_on,
                  PowerModel::kScaledMarker, scaling.dynamic_factor, scaling.static_factor);
  if (!scaling.from_node.empty()) {
    out.trained_on += fmt::format(", {} -> {}", scaling.from_node, scaling.to_node);
  }
  return out;
}

void to_json(nlohmann::ordered_json& j, const NodeScaling& scaling) {
  j = nlohmann::ordered_json::object();
  j["from_node"] = scaling.from_node;
  j["to_node"] = scaling.to_node;
  j["dynamic_factor"] = scaling.dynamic_factor;
  j["dynamic_factor_from"] = scaling.dynamic_source;
  j["static_factor"] = scaling.static_factor;
  j["static_factor_from"] = scaling.static_source;
  j["idle_sm_factor"] = scaling.idle_sm_factor;
  j["idle_sm_factor_from"] = scaling.idle_sm_source;
  j["board_constant_factor"] = scaling.board_constant_factor;
}

void to_json(nlohmann::ordered_json& row, const TechnologyNode& n) {
  row = nlohmann::ordered_json::object();
  row["node"] = n.node;
  row["label"] = n.label;
  row["vdd_v"] = n.vdd_v;
  row["capacitance_rel"] = n.capacitance_rel;
  row["leakage_current_rel"] = n.leakage_current_rel;
  row["source"] = n.source;
  row["line"] = n.line;
}

nlohmann::ordered_json NodeScalingToJson(const NodeScaling& scaling, const NodeTable* table) {
  nlohmann::ordered_json j = scaling;
  if (table != nullptr) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const std::string& name : {scaling.from_node, scaling.to_node}) {
      const TechnologyNode* n = table->Find(name);
      if (n != nullptr) rows.push_back(nlohmann::ordered_json(*n));
    }
    j["node_table"] = table->path;
    j["nodes"] = rows;
  }
  return j;
}

}  // namespace wattcal
