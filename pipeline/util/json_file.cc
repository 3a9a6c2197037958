#include "util/json_file.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>

#include "util/errors.h"

namespace wattcal {

std::string ReadFileText(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, 0, "", "cannot open " + what + ": " + std::strerror(errno));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

nlohmann::json ParseJsonText(const std::string& path, const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    const size_t end = std::min<size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
    const int64_t line =
        1 + std::count(text.begin(), text.begin() + static_cast<ptrdiff_t>(end), '\n');
    std::string what = e.what();
    const size_t detail = what.find("parse error");
    throw InputError(path, line, "",
                     "invalid JSON: " + (detail == std::string::npos ? what : what.substr(detail)));
  }
}

nlohmann::json ReadJsonFile(const std::string& path, const std::string& what) {
  return ParseJsonText(path, ReadFileText(path, what));
}

nlohmann::json ReadJsonFileOrDiscarded(const std::string& path) {
  std::ifstream in(path);
  if (!in) return nlohmann::json(nlohmann::json::value_t::discarded);
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

}  // namespace wattcal
