#include "accelwattch/orderings.h"

#include <cerrno>
#include <cstring>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <functional>
#include <numeric>
#include <set>

#include "util/errors.h"
#include "util/strings.h"
#include "util/text_input.h"

namespace wattcal {
namespace {

bool IsName(const std::string& s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
}

[[noreturn]] void FailOrdering(const Ordering& o, const std::string& message) {
  throw InputError(o.file.empty() ? "AccelWattch Eq. 14" : o.file, o.line, "ordering",
                   o.Text() + ": " + message);
}

std::string JoinPath(const std::vector<std::string>& names, const std::string& sep) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i > 0 ? sep : "") + names[i];
  return s;
}

}  // namespace

std::string Ordering::Source() const {
  return file.empty() ? "AccelWattch Eq. 14" : fmt::format("{}:{}", file, line);
}

std::vector<Ordering> PaperOrderings() {
  const auto paper = [](const std::string& lower, const std::string& upper) {
    Ordering o;
    o.lower = lower;
    o.upper = upper;
    return o;
  };
  std::vector<Ordering> o = {paper("INTP", "FPUP"), paper("FPUP", "DPUP"),
                             paper("INTP", "INT_MULP")};
  for (const char* upper :
       {"INT_MULP", "DP_MULP", "FP_SQRTP", "FP_LGP", "FP_SINP", "FP_EXP", "TENSORP", "TEXP"}) {
    o.push_back(paper("FP_MULP", upper));
  }
  return o;
}

const std::vector<std::string>& AccelWattchComponentNames() {
  static const std::vector<std::string> names = {
      "IBP",     "ICP",     "DCP",      "TCP",        "CCP",        "SHRDP",    "RFP",
      "INTP",    "FPUP",    "DPUP",     "INT_MUL24P", "INT_MUL32P", "INT_MULP", "INT_DIVP",
      "FP_MULP", "FP_DIVP", "FP_SQRTP", "FP_LGP",     "FP_SINP",    "FP_EXP",   "DP_MULP",
      "DP_DIVP", "TENSORP", "TEXP",     "SCHEDP",     "L2CP",       "DRAMP",    "PIPEP"};
  return names;
}

std::vector<Ordering> ReadOrderingsFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError(path, 0, "",
                     std::string("cannot open the orderings file") + ": " + std::strerror(errno));
  std::vector<Ordering> out;
  std::string text;
  int64_t line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (line == 1) StripUtf8ByteOrderMark(&text);
    const size_t hash = text.find('#');
    if (hash != std::string::npos) text.resize(hash);
    text = Trim(text);
    if (text.empty()) continue;
    std::vector<std::string> names;
    size_t start = 0;
    while (true) {
      const size_t op = text.find("<=", start);
      names.push_back(
          Trim(text.substr(start, op == std::string::npos ? std::string::npos : op - start)));
      if (op == std::string::npos) break;
      start = op + 2;
    }
    if (names.size() < 2) {
      throw InputError(path, line, "ordering",
                       fmt::format("expected 'A <= B' (or a chain 'A <= B <= C'), got '{}'", text));
    }
    for (const std::string& n : names) {
      if (!IsName(n)) {
        throw InputError(path, line, "ordering",
                         fmt::format("'{}' is not a component name (letters, digits, _ . -) in "
                                     "'{}'; write one 'A <= B' per line",
                                     n, text));
      }
    }
    for (size_t i = 0; i + 1 < names.size(); ++i)
      out.push_back({names[i], names[i + 1], path, line});
  }
  return out;
}

namespace {

// The orderings that name two distinct columns of the table, once each, with their (lower,
// upper) column indices; the others go to `dropped` with the reason, and a name that is neither
// a column nor an AccelWattch component is refused.
struct OrderingCandidates {
  std::vector<Ordering> orderings;
  std::vector<std::pair<int, int>> edges;
};

OrderingCandidates ScreenOrderings(const std::vector<std::string>& components,
                                   const std::vector<Ordering>& orderings,
                                   std::vector<DroppedOrdering>* dropped) {
  const auto index_of = [&](const std::string& name) {
    const auto it = std::find(components.begin(), components.end(), name);
    return it == components.end() ? -1 : static_cast<int>(it - components.begin());
  };
  const auto& known = AccelWattchComponentNames();
  OrderingCandidates c;
  std::set<std::pair<int, int>> seen;
  for (const Ordering& o : orderings) {
    const int a = index_of(o.lower), b = index_of(o.upper);
    bool absent = false;
    for (const auto& [name, idx] : {std::pair<std::string, int>{o.lower, a}, {o.upper, b}}) {
      if (idx >= 0) continue;
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        FailOrdering(o, fmt::format("unknown component '{}': neither a column of the table ({}) "
                                    "nor an AccelWattch component",
                                    name, JoinPath(components, ", ")));
      }
      if (!absent) dropped->push_back({o, fmt::format("the table has no {}_W column", name)});
      absent = true;
    }
    if (absent) continue;
    if (a == b) {
      dropped->push_back({o, "trivial (a component against itself)"});
      continue;
    }
    if (!seen.insert({a, b}).second) {
      dropped->push_back({o, "duplicate of an earlier constraint"});
      continue;
    }
    c.orderings.push_back(o);
    c.edges.push_back({a, b});
  }
  return c;
}

// A path from `from` to `to` along `succ` skipping the direct edge `skip` (-1: none), as
// component indices; empty when there is none.
std::vector<int> FindPath(const std::vector<std::vector<int>>& succ, int from, int to,
                          std::pair<int, int> skip) {
  const int n = static_cast<int>(succ.size());
  std::vector<int> prev(n, -2);
  std::vector<int> queue = {from};
  prev[from] = -1;
  for (size_t q = 0; q < queue.size(); ++q) {
    const int u = queue[q];
    for (int v : succ[u]) {
      if (std::make_pair(u, v) == skip || prev[v] != -2) continue;
      prev[v] = u;
      queue.push_back(v);
    }
  }
  std::vector<int> path;
  if (prev[to] == -2) return path;
  for (int v = to; v != -1; v = prev[v]) path.push_back(v);
  std::reverse(path.begin(), path.end());
  return path;
}

std::vector<std::string> NamesOf(const std::vector<std::string>& components,
                                 const std::vector<int>& path) {
  std::vector<std::string> names;
  for (int v : path) names.push_back(components[v]);
  return names;
}

// The candidates' directed graph (successors per component), refusing the first edge that
// closes a directed cycle, checked edge by edge so that the message names the closing one.
std::vector<std::vector<int>> AcyclicGraph(const std::vector<std::string>& components,
                                           const OrderingCandidates& c) {
  std::vector<std::vector<int>> succ(components.size());
  for (size_t e = 0; e < c.orderings.size(); ++e) {
    const auto [a, b] = c.edges[e];
    const std::vector<int> back = FindPath(succ, b, a, {-1, -1});
    if (!back.empty()) {
      FailOrdering(c.orderings[e],
                   fmt::format("closes the cycle {} <= {}, which would force these factors to be "
                               "equal; drop one constraint (or pin the factors with equal bounds)",
                               JoinPath(NamesOf(components, back), " <= "), components[b]));
    }
    succ[a].push_back(b);
  }
  return succ;
}

// Transitive reduction (unique for a DAG): which candidates a longer path implies; each goes to
// `dropped` with its path.
std::vector<bool> ImpliedEdges(const std::vector<std::string>& components,
                               const OrderingCandidates& c,
                               const std::vector<std::vector<int>>& succ,
                               std::vector<DroppedOrdering>* dropped) {
  std::vector<bool> implied(c.orderings.size(), false);
  for (size_t e = 0; e < c.orderings.size(); ++e) {
    const auto [a, b] = c.edges[e];
    const std::vector<int> path = FindPath(succ, a, b, {a, b});
    if (!path.empty()) {
      implied[e] = true;
      dropped->push_back(
          {c.orderings[e], "implied by " + JoinPath(NamesOf(components, path), " <= ")});
    }
  }
  return implied;
}

// Neighbours per component with directions ignored: (neighbour, neighbour is above).
using Adjacency = std::vector<std::vector<std::pair<int, bool>>>;

// The undirected path from a to b in the forest so far, as component names, for a message.
std::vector<std::string> UndirectedPath(const std::vector<std::string>& components,
                                        const Adjacency& adjacent, int a, int b) {
  std::vector<int> prev(components.size(), -2);
  std::vector<int> queue = {a};
  prev[a] = -1;
  for (size_t q = 0; q < queue.size(); ++q) {
    for (const auto& [v, up] : adjacent[queue[q]]) {
      if (prev[v] != -2) continue;
      prev[v] = queue[q];
      queue.push_back(v);
    }
  }
  std::vector<std::string> path;
  for (int v = b; v != -1; v = prev[v]) path.push_back(components[v]);
  std::reverse(path.begin(), path.end());
  return path;
}

// The candidates not implied must be a forest when directions are ignored: each joins two
// trees (a union-find), or is refused; the kept ones go to `used` and `edges`.
Adjacency BuildForest(const std::vector<std::string>& components, const OrderingCandidates& c,
                      const std::vector<bool>& implied, std::vector<Ordering>* used,
                      std::vector<std::pair<int, int>>* edges) {
  const int n = static_cast<int>(components.size());
  std::vector<int> root(n);
  std::iota(root.begin(), root.end(), 0);
  std::function<int(int)> find = [&](int v) { return root[v] == v ? v : root[v] = find(root[v]); };
  Adjacency adjacent(n);
  for (size_t e = 0; e < c.orderings.size(); ++e) {
    if (implied[e]) continue;
    const auto [a, b] = c.edges[e];
    if (find(a) == find(b)) {
      FailOrdering(c.orderings[e],
                   fmt::format("closes a cycle with the constraints linking {} (directions "
                               "ignored); wattcal encodes orderings whose graph is a forest "
                               "(chains, trees, several lower or upper bounds on one component) "
                               "and not diamonds such as a <= b, a <= c, b <= d, c <= d",
                               JoinPath(UndirectedPath(components, adjacent, a, b), " - ")));
    }
    root[find(a)] = find(b);
    adjacent[a].push_back({b, true});
    adjacent[b].push_back({a, false});
    used->push_back(c.orderings[e]);
    edges->push_back({a, b});
  }
  return adjacent;
}

// Tightens the bounds along the edges until nothing changes; a component left with no
// feasible value is refused.
void TightenBounds(const std::vector<std::string>& components,
                   const std::vector<std::pair<int, int>>& edges, std::vector<double>* lower,
                   std::vector<double>* upper) {
  const int n = static_cast<int>(components.size());
  const std::vector<double> given_lower = *lower, given_upper = *upper;
  for (int pass = 0; pass <= n; ++pass) {
    bool changed = false;
    for (const auto& [a, b] : edges) {
      if ((*lower)[a] > (*lower)[b]) (*lower)[b] = (*lower)[a], changed = true;
      if ((*upper)[b] < (*upper)[a]) (*upper)[a] = (*upper)[b], changed = true;
    }
    if (!changed) break;
  }
  for (int i = 0; i < n; ++i) {
    if ((*lower)[i] > (*upper)[i]) {
      throw OptionError(fmt::format(
          "bounds: the orderings leave {} no feasible value: its bounds [{}, {}] become [{}, {}] "
          "through the bounds of the components ordered below and above it",
          components[i], given_lower[i], given_upper[i], (*lower)[i], (*upper)[i]));
    }
  }
}

// Roots every tree at its first component in table order: each component's parent (-1 for a
// root) and whether it lies above it, and an order with parents before children.
void RootTrees(const Adjacency& adjacent, std::vector<int>* parent, std::vector<bool>* above,
               std::vector<int>* order) {
  const int n = static_cast<int>(adjacent.size());
  parent->assign(n, -1);
  above->assign(n, false);
  std::vector<bool> visited(n, false);
  for (int r = 0; r < n; ++r) {
    if (visited[r]) continue;
    visited[r] = true;
    const size_t begin = order->size();
    order->push_back(r);
    for (size_t q = begin; q < order->size(); ++q) {
      const int u = (*order)[q];
      std::vector<std::pair<int, bool>> next = adjacent[u];
      std::sort(next.begin(), next.end());
      for (const auto& [v, v_above] : next) {
        if (visited[v]) continue;
        visited[v] = true;
        (*parent)[v] = u;
        (*above)[v] = v_above;
        order->push_back(v);
      }
    }
  }
}

}  // namespace

OrderingForest::OrderingForest(const std::vector<std::string>& components,
                               const std::vector<Ordering>& orderings,
                               const std::vector<double>& lower, const std::vector<double>& upper)
    : lower_(lower), upper_(upper) {
  // 1. Names, trivial and duplicate constraints.
  const OrderingCandidates candidates = ScreenOrderings(components, orderings, &dropped_);
  // 2. Directed cycles.
  const std::vector<std::vector<int>> succ = AcyclicGraph(components, candidates);
  // 3. Transitive reduction: drop every edge implied by a longer path.
  const std::vector<bool> implied = ImpliedEdges(components, candidates, succ, &dropped_);
  // 4. The rest must be a forest when directions are ignored.
  const Adjacency adjacent = BuildForest(components, candidates, implied, &used_, &edges_);
  // 5. Tighten the bounds along the edges until nothing changes.
  TightenBounds(components, edges_, &lower_, &upper_);
  // 6. Root every tree at its first component in table order; parents before children.
  RootTrees(adjacent, &parent_, &above_, &order_);
}

double OrderingForest::ParameterLower(int i) const { return IsRoot(i) ? lower_[i] : 0.0; }
double OrderingForest::ParameterUpper(int i) const { return IsRoot(i) ? upper_[i] : 1.0; }

void OrderingForest::ToX(const double* theta, double* x, double* jacobian) const {
  const int n = size();
  if (jacobian != nullptr) std::fill(jacobian, jacobian + static_cast<size_t>(n) * n, 0.0);
  for (int v : order_) {
    double* row = jacobian != nullptr ? jacobian + static_cast<size_t>(v) * n : nullptr;
    const int p = parent_[v];
    if (p < 0) {
      x[v] = std::clamp(theta[v], lower_[v], upper_[v]);
      if (row != nullptr) row[v] = 1.0;
      continue;
    }
    const double s = theta[v];
    const double* parent_row =
        jacobian != nullptr ? jacobian + static_cast<size_t>(p) * n : nullptr;
    double lo, hi;
    bool follows_parent;  // the moving end of the interval is the parent's value
    if (above_[v]) {
      follows_parent = x[p] >= lower_[v];
      lo = follows_parent ? x[p] : lower_[v];
      hi = upper_[v];
      if (row != nullptr && follows_parent) {
        for (int j = 0; j < n; ++j) row[j] = (1.0 - s) * parent_row[j];
      }
    } else {
      follows_parent = x[p] <= upper_[v];
      lo = lower_[v];
      hi = follows_parent ? x[p] : upper_[v];
      if (row != nullptr && follows_parent) {
        for (int j = 0; j < n; ++j) row[j] = s * parent_row[j];
      }
    }
    // Clamped so that rounding can never break an ordering or a bound.
    x[v] = std::clamp(lo + s * (hi - lo), lo, hi);
    if (row != nullptr) row[v] = hi - lo;
  }
}

std::vector<double> OrderingForest::FromX(const std::vector<double>& x) const {
  const int n = size();
  std::vector<double> theta(n, 0.0), xc(n, 0.0);
  for (int v : order_) {
    const int p = parent_[v];
    if (p < 0) {
      theta[v] = xc[v] = std::clamp(x[v], lower_[v], upper_[v]);
      continue;
    }
    const double lo = above_[v] ? std::max(xc[p], lower_[v]) : lower_[v];
    const double hi = above_[v] ? upper_[v] : std::min(xc[p], upper_[v]);
    xc[v] = std::clamp(x[v], lo, hi);
    theta[v] = hi > lo ? std::clamp((xc[v] - lo) / (hi - lo), 0.0, 1.0) : 0.0;
  }
  return theta;
}

double OrderingForest::MaxViolation(const std::vector<double>& x) const {
  double worst = 0.0;
  for (int i = 0; i < size(); ++i) {
    worst = std::max({worst, lower_[i] - x[i], x[i] - upper_[i]});
  }
  for (const auto& [a, b] : edges_) worst = std::max(worst, x[a] - x[b]);
  return worst;
}

}  // namespace wattcal
