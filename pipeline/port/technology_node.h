// Carrying power estimates or a model to another technology node (AccelWattch, MICRO'21 §7.1
// and Fig. 1-3: "after we collect power estimates for Pascal ... we apply technology scaling
// based on published IRDS parameters"; "we also set the constant power for Turing at 1.7x
// higher than Volta's").
//
// A node table (microbench_specs/technology_nodes.csv) gives per node the nominal supply
// voltage Vdd, the switched capacitance and the leakage current of the same design relative
// to a reference node, each row with its source. From node `from` to node `to`:
//
//   dynamic power  x (C_to / C_from) (V_to / V_from)^2        (P_dyn ~ C V^2 f, same f)
//   static power   x (V_to / V_from) (I_to / I_from)          (P_static ~ V I_leak)
//   idle-SM power  x the static factor (it is leakage of idle SMs)
//   board constant x a given factor (fans, regulators: not a property of the node)
//
// Any factor may instead be given explicitly (NodePortOptions), e.g. to apply a published
// sheet's factors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/power_model.h"

namespace wattcal {

struct TechnologyNode {
  std::string node;                  // e.g. "16nm"
  std::string label;                 // roadmap label, e.g. "16/14" (optional column)
  double vdd_v = 0.0;                // nominal supply voltage, V (> 0)
  double capacitance_rel = 0.0;      // switched capacitance of the same design, relative (> 0)
  double leakage_current_rel = 0.0;  // leakage current of the same design, relative (> 0)
  std::string source;                // citation
  int64_t line = 0;
};

struct NodeTable {
  std::string path;
  std::vector<TechnologyNode> nodes;
  // The node named `name`, or nullptr.
  const TechnologyNode* Find(const std::string& name) const;
};

// Reads a node table: '#' lines are comments; header with the columns node, vdd_v,
// capacitance_rel, leakage_current_rel, source (required) and label (optional), in any order.
// Throws InputError naming FILE:LINE and the field for an unknown or missing column, a
// repeated node, a number that is not finite and > 0, or an empty source.
NodeTable ReadNodeTable(const std::string& path);

// Factors that carry power from one node to another.
struct NodeScaling {
  std::string from_node;
  std::string to_node;
  double dynamic_factor = 1.0;
  double static_factor = 1.0;
  double idle_sm_factor = 1.0;
  double board_constant_factor = 1.0;
  // Where each factor came from: "node table" or "given".
  std::string dynamic_source = "given";
  std::string static_source = "given";
  std::string idle_sm_source = "given";
};

struct NodePortOptions {
  // Node names in the table (needed unless every factor below is given).
  std::string from_node;
  std::string to_node;
  // Factor on the board's constant power (AccelWattch used 1.7 for Turing vs. Volta), > 0.
  double board_constant_factor = 1.0;
  // Explicit factors, used instead of the table's when > 0 (0 = from the table).
  double dynamic_factor = 0.0;
  double static_factor = 0.0;
  // 0 = the static factor.
  double idle_sm_factor = 0.0;

  bool Check(std::string* error) const;
  // True when the dynamic and static factors both come from the table.
  bool NeedsTable() const { return dynamic_factor == 0.0 || static_factor == 0.0; }
};

// The factors for `options` (see the top of this file). `table` may be nullptr when
// !options.NeedsTable(). Throws InputError naming the table and the `node` field for an
// unknown node, OptionError when `options` fails Check() or when the table, from_node or
// to_node is missing while a factor must come from the table.
NodeScaling MakeNodeScaling(const NodeTable* table, const NodePortOptions& options);

// The model at the other node: component coefficients gamma_i and alpha1 (component-
// independent dynamic power) x dynamic_factor, alpha0 (static) x static_factor. The TPDS model
// keeps static and board-constant power together in alpha0, so a board_constant_factor other
// than 1 is refused (OptionError).
PowerModel ScaleModelToNode(const PowerModel& model, const NodeScaling& scaling);

// The factors as JSON (from_node, to_node, each factor and where it came from).
void to_json(nlohmann::ordered_json& j, const NodeScaling& scaling);
// One row of the node table (node, label, vdd_v, capacitance_rel, leakage_current_rel, source,
// line).
void to_json(nlohmann::ordered_json& j, const TechnologyNode& node);
// The factors and, when `table` is given, its path and the two nodes' rows.
nlohmann::ordered_json NodeScalingToJson(const NodeScaling& scaling, const NodeTable* table);

}  // namespace wattcal
