// The inputs of the stages that fit a sweep with P_const held (wattcal-static, wattcal-idle):
// --sweep, --description, --constant or --p-const-w, and --out. The CLI11 binding
// (AddSweepWithConstantOptions) is in stages/stage_common.h.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace wattcal {

struct SweepWithConstantFlags {
  // --sweep: sweep CSV (or wattcal-ingest's kernels CSV); required.
  std::string sweep_path;
  // --description: sweep description CSV (optional).
  std::string description_path;
  // --constant: wattcal-constant's output, whose p_const_w is P_const.
  std::string constant_path;
  // --out: the result to write (JSON); required.
  std::string out_path;
  // --p-const-w: P_const, W, when given (instead of --constant).
  std::optional<double> p_const_w;

  // OptionError naming the flag: --sweep or --out missing, neither or both of --constant and
  // --p-const-w.
  void Check() const;
};

// P_const, W: --p-const-w, or the p_const_w of --constant's file (InputError naming it).
double ResolveConstantPower(const SweepWithConstantFlags& flags);

// The files read (sweep, description, constant), for manifests.
std::vector<std::string> SweepWithConstantInputs(const SweepWithConstantFlags& flags);

}  // namespace wattcal
