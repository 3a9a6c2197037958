// Ordering constraints between AccelWattch scaling factors (MICRO'21 Eq. 14) and their
// exact encoding through box bounds alone (Ceres supports nothing else, FORMATS.md §6.1).
//
// The paper's constraints, in the per_kernel tables' column names:
//   x_ALU <= x_FPU <= x_DPU          INTP <= FPUP <= DPUP
//   x_ALU <= x_imul                  INTP <= INT_MULP
//   x_fpmul <= {x_imul, x_dpmul, x_sqrt, x_log, x_sin, x_exp, x_tensor, x_tex}
//                                    FP_MULP <= INT_MULP, DP_MULP, FP_SQRTP, FP_LGP,
//                                               FP_SINP, FP_EXP, TENSORP, TEXP
//
// Supported graph shapes. Take the components as nodes and each constraint a <= b as an edge.
// Duplicates, trivial a <= a and constraints implied by the others through transitivity
// (a <= b, b <= c make a <= c redundant) are dropped and reported. What remains must be a
// forest when edge directions are ignored: chains, trees, a component with several lower
// bounds (INT_MULP above both INTP and FP_MULP, as in AccelWattch Eq. 14) or several upper bounds.
// Rejected with an InputError naming the constraint that closes it: a cycle, directed (a <= b <= a,
// which would force equality; pin the factors with equal bounds instead) or not (the diamond
// a <= b, a <= c, b <= d, c <= d).
//
// Encoding. Bounds are first tightened along the edges (for a <= b: L_b >= L_a, U_a <= U_b).
// Each tree of the forest is rooted at its first component in table order; the root's
// parameter is x itself within [L, U]. Every other component v hangs off its tree parent p:
//   x_v >= x_p:  x_v = lo + s_v (U_v - lo),  lo = max(x_p, L_v)
//   x_v <= x_p:  x_v = L_v + s_v (hi - L_v), hi = min(x_p, U_v)
// with 0 <= s_v <= 1: a fraction of the room the parent leaves, so every ordering and every
// bound holds exactly for any parameters inside their boxes, and every feasible x has
// parameters. The map is smooth when ordered components have equal bounds (the default
// 0.001..1000 for all); with unequal bounds it has a kink where a parent crosses its child's
// bound. A component in no constraint is a root of its own.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace wattcal {

// One constraint x_lower <= x_upper, with where it came from.
struct Ordering {
  std::string lower;
  std::string upper;
  std::string file;  // orderings file; empty for the paper's defaults
  int64_t line = 0;  // line in `file`

  // "AccelWattch Eq. 14" or "FILE:LINE".
  std::string Source() const;
  // "INTP <= FPUP".
  std::string Text() const { return lower + " <= " + upper; }
};

// The paper's constraints (see the top of this file), in the per_kernel column names.
std::vector<Ordering> PaperOrderings();

// Every dynamic component AccelWattch's sheets name (Table 1 of the paper and the PTX
// sheets' extra ones): a constraint naming one of these that a table lacks is dropped with
// a note; a name outside this list and the table is an error (a typo).
const std::vector<std::string>& AccelWattchComponentNames();

// Reads a constraints file: one `A <= B` per line, or a chain `A <= B <= C`; `#` starts a
// comment (to the end of the line); blank lines are skipped. Names are component names as in
// the table's columns without the unit (INTP, FP_MULP, ...). Throws InputError naming
// FILE:LINE on anything else.
std::vector<Ordering> ReadOrderingsFile(const std::string& path);

// A dropped constraint and why.
struct DroppedOrdering {
  Ordering ordering;
  std::string reason;
};

// The constraints resolved against a table's components, and their encoding.
class OrderingForest {
 public:
  // Resolves `orderings` (in order: earlier ones win when a later one closes a cycle)
  // against `components`: drops those naming a known AccelWattch component the table lacks,
  // duplicates, trivial and transitively implied ones (each with a reason); throws InputError
  // (naming the constraint's file and line, or "AccelWattch Eq. 14") for an unknown component
  // name or a cycle. `lower` and `upper` are the per-component bounds (0 <= lower <= upper);
  // throws OptionError when the orderings leave some component no feasible value.
  OrderingForest(const std::vector<std::string>& components, const std::vector<Ordering>& orderings,
                 const std::vector<double>& lower, const std::vector<double>& upper);

  const std::vector<Ordering>& used() const { return used_; }
  const std::vector<DroppedOrdering>& dropped() const { return dropped_; }
  int size() const { return static_cast<int>(lower_.size()); }
  // Bounds after tightening along the orderings.
  const std::vector<double>& tight_lower() const { return lower_; }
  const std::vector<double>& tight_upper() const { return upper_; }

  // Parameter i's box: [L, U] of component i for a root, [0, 1] otherwise.
  double ParameterLower(int i) const;
  double ParameterUpper(int i) const;
  bool IsRoot(int i) const { return parent_[i] < 0; }
  // True when parameter i cannot move (a root with L == U).
  bool ParameterFixed(int i) const { return IsRoot(i) && lower_[i] == upper_[i]; }

  // x from the parameters (both indexed by component); when `jacobian` is not null it
  // receives dx/dtheta, row-major size() x size().
  void ToX(const double* theta, double* x, double* jacobian) const;
  // Parameters whose x is as close to `x` as the constraints allow: each component, in tree
  // order, is clamped into the interval its (already clamped) parent leaves it. The result
  // satisfies every bound and ordering; x itself when it already does.
  std::vector<double> FromX(const std::vector<double>& x) const;

  // The largest violation of any bound or used ordering by `x` (0 when all hold).
  double MaxViolation(const std::vector<double>& x) const;

 private:
  std::vector<Ordering> used_;
  std::vector<DroppedOrdering> dropped_;
  std::vector<std::pair<int, int>> edges_;  // (lower, upper) of each used ordering
  std::vector<double> lower_, upper_;
  std::vector<int> parent_;  // -1 for roots
  std::vector<bool> above_;  // x_v >= x_parent (else <=)
  std::vector<int> order_;   // every component, parents before children
};

}  // namespace wattcal
