#include "usecases/sweep_flags.h"

#include "io/sweep.h"
#include "util/errors.h"

namespace wattcal {

void SweepWithConstantFlags::Check() const {
  if (sweep_path.empty()) throw OptionError("--sweep is required");
  if (out_path.empty()) throw OptionError("--out is required");
  if (!constant_path.empty() && p_const_w.has_value()) {
    throw OptionError("--constant excludes --p-const-w");
  }
  if (constant_path.empty() && !p_const_w.has_value()) {
    throw OptionError("give --constant CONSTANT.json or --p-const-w");
  }
}

double ResolveConstantPower(const SweepWithConstantFlags& flags) {
  if (!flags.constant_path.empty()) return ReadConstantPowerW(flags.constant_path);
  if (!flags.p_const_w.has_value()) {
    throw OptionError("give --constant CONSTANT.json or --p-const-w");
  }
  return *flags.p_const_w;
}

std::vector<std::string> SweepWithConstantInputs(const SweepWithConstantFlags& flags) {
  std::vector<std::string> inputs = {flags.sweep_path};
  if (!flags.description_path.empty()) inputs.push_back(flags.description_path);
  if (!flags.constant_path.empty()) inputs.push_back(flags.constant_path);
  return inputs;
}

}  // namespace wattcal
