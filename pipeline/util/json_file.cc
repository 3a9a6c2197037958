#include "util/json_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "util/errors.h"

namespace wattcal {

nlohmann::json ReadJsonFile(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) throw InputError(path, 0, "", "cannot open " + what + ": " + std::strerror(errno));
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(path, 0, "", std::string("not valid JSON: ") + e.what());
  }
}

nlohmann::json ReadJsonFileOrDiscarded(const std::string& path) {
  std::ifstream in(path);
  if (!in) return nlohmann::json(nlohmann::json::value_t::discarded);
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

}  // namespace wattcal
