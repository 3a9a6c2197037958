#include "io/json_lines.h"

#include <fmt/format.h>

#include <cctype>
#include <cstring>

namespace wattcal {

JsonLineIndex::JsonLineIndex(const std::string& text) : text_(text) { Value(""); }

int64_t JsonLineIndex::LineOf(std::string path) const {
  while (true) {
    const auto it = lines_.find(path);
    if (it != lines_.end()) return it->second;
    if (path.empty()) return 1;
    const size_t cut = path.find_last_of(".[");
    path = cut == std::string::npos ? "" : path.substr(0, cut);
  }
}

void JsonLineIndex::SkipSpace() {
  while (!AtEnd() && std::isspace(static_cast<unsigned char>(text_[pos_]))) {
    if (text_[pos_] == '\n') ++line_;
    ++pos_;
  }
}

std::string JsonLineIndex::String() {
  std::string s;
  ++pos_;  // opening quote
  while (!AtEnd() && text_[pos_] != '"') {
    if (text_[pos_] == '\\') ++pos_;
    if (!AtEnd()) s += text_[pos_++];
  }
  ++pos_;  // closing quote
  return s;
}

void JsonLineIndex::Value(const std::string& path) {
  SkipSpace();
  if (AtEnd()) return;
  lines_[path] = line_;
  const char c = text_[pos_];
  if (c == '{' || c == '[') {
    const char close = c == '{' ? '}' : ']';
    ++pos_;
    for (int index = 0;; ++index) {
      SkipSpace();
      if (AtEnd()) return;
      if (text_[pos_] == close) break;
      if (c == '{') {
        const std::string key = String();
        SkipSpace();
        ++pos_;  // ':'
        Value(path.empty() ? key : path + "." + key);
      } else {
        Value(fmt::format("{}[{}]", path, index));
      }
      SkipSpace();
      if (!AtEnd() && text_[pos_] == ',') ++pos_;
    }
    ++pos_;  // closing bracket
  } else if (c == '"') {
    String();
  } else {
    while (!AtEnd() && std::strchr(",]} \t\r\n", text_[pos_]) == nullptr) ++pos_;
  }
}

}  // namespace wattcal
