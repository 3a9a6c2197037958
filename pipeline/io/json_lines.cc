#include "io/json_lines.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>

#include "util/errors.h"

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

void JsonFieldReader::Fail(const std::string& field, const std::string& message) const {
  throw InputError(path_, lines_.LineOf(field), field, message);
}

void JsonFieldReader::CheckFormatAndVersion(const Json& root, const std::string& format,
                                            int version, const std::string& kind) const {
  if (!root.is_object()) Fail("", "expected a JSON object at the top level");
  const std::string f = String(root, "", "format");
  if (f != format) Fail("format", fmt::format("expected \"{}\", got \"{}\"", format, f));
  const int v = Int(root, "", "version");
  if (v != version) {
    Fail("version",
         fmt::format("unsupported {} version {}; this wattcal reads version {}", kind, v, version));
  }
}

std::string JsonFieldReader::Join(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

const JsonFieldReader::Json& JsonFieldReader::Get(const Json& object, const std::string& parent,
                                                  const std::string& key) const {
  if (!object.is_object())
    Fail(parent, fmt::format("expected an object, got {}", object.type_name()));
  const auto it = object.find(key);
  if (it == object.end()) Fail(Join(parent, key), fmt::format("missing key \"{}\"", key));
  return *it;
}

std::string JsonFieldReader::String(const Json& object, const std::string& parent,
                                    const std::string& key) const {
  const Json& v = Get(object, parent, key);
  if (!v.is_string())
    Fail(Join(parent, key), fmt::format("expected a string, got {}", v.type_name()));
  return v.get<std::string>();
}

int JsonFieldReader::Int(const Json& object, const std::string& parent,
                         const std::string& key) const {
  const Json& v = Get(object, parent, key);
  if (!v.is_number_integer()) {
    Fail(Join(parent, key), fmt::format("expected a whole number, got {}", v.dump()));
  }
  return v.get<int>();
}

bool JsonFieldReader::Bool(const Json& object, const std::string& parent,
                           const std::string& key) const {
  const Json& v = Get(object, parent, key);
  if (!v.is_boolean())
    Fail(Join(parent, key), fmt::format("expected true or false, got {}", v.dump()));
  return v.get<bool>();
}

double JsonFieldReader::NumberValue(const Json& v, const std::string& path, bool allow_null) const {
  if (allow_null && v.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (!v.is_number()) Fail(path, fmt::format("expected a finite number, got {}", v.type_name()));
  const double x = v.get<double>();
  if (!std::isfinite(x)) Fail(path, "expected a finite number");
  return x;
}

double JsonFieldReader::Number(const Json& object, const std::string& parent,
                               const std::string& key, bool allow_null) const {
  return NumberValue(Get(object, parent, key), Join(parent, key), allow_null);
}

std::optional<double> JsonFieldReader::OptionalNumber(const Json& object, const std::string& parent,
                                                      const std::string& key) const {
  if (!object.contains(key) || object.at(key).is_null()) return std::nullopt;
  return Number(object, parent, key);
}

const JsonFieldReader::Json& JsonFieldReader::Array(const Json& object, const std::string& parent,
                                                    const std::string& key, int64_t count) const {
  const Json& v = Get(object, parent, key);
  CheckArray(v, Join(parent, key), count);
  return v;
}

void JsonFieldReader::CheckArray(const Json& v, const std::string& path, int64_t count) const {
  if (!v.is_array()) Fail(path, fmt::format("expected an array, got {}", v.type_name()));
  if (count >= 0 && static_cast<int64_t>(v.size()) != count) {
    Fail(path, fmt::format("expected {} elements, got {}", count, v.size()));
  }
}

}  // namespace wattcal
