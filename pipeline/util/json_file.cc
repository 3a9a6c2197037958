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

namespace {

// 1-based line of byte `offset` of `text`.
int64_t LineOfByte(const std::string& text, size_t offset) {
  const size_t end = std::min(offset, text.size());
  return 1 + std::count(text.begin(), text.begin() + static_cast<ptrdiff_t>(end), '\n');
}

}  // namespace

nlohmann::json ParseJsonText(const std::string& path, const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();
    const size_t detail = what.find("parse error");
    throw InputError(path, LineOfByte(text, e.byte > 0 ? e.byte - 1 : 0), "",
                     "invalid JSON: " + (detail == std::string::npos ? what : what.substr(detail)));
  } catch (const nlohmann::json::exception& e) {
    // A number too large for a double ("number overflow parsing '1e4649'"): the line of the
    // number the message quotes.
    std::string what = e.what();
    const size_t detail = what.find("] ");
    what = detail == std::string::npos ? what : what.substr(detail + 2);
    const size_t open = what.find('\''), close = what.rfind('\'');
    const size_t at = open != std::string::npos && close > open
                          ? text.find(what.substr(open + 1, close - open - 1))
                          : std::string::npos;
    throw InputError(path, at == std::string::npos ? 0 : LineOfByte(text, at), "",
                     "invalid JSON: " + what);
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
