// AccelWattch inputs: activity tables, per-kernel component tables, energy-estimate files and
// scaling-factor model files (pipeline/accelwattch/), each parser on every input.
#include "accelwattch/activity.h"
#include "accelwattch/component_table.h"
#include "accelwattch/model_terms.h"
#include "accelwattch/scaling_model.h"
#include "fuzz_support.h"

namespace {

template <typename F>
void Parse(F&& parse) {
  try {
    parse();
  } catch (const ::wattcal::InputError&) {
  } catch (const ::wattcal::OptionError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = wattcal::fuzz::WriteInput(data, size);
  Parse([&] { wattcal::ReadActivityTable(path); });
  Parse([&] { wattcal::ReadComponentTable(path); });
  Parse([&] { wattcal::ReadAccelWattchEnergies(path); });
  Parse([&] { wattcal::ReadAccelWattchModel(path); });
  return 0;
}
