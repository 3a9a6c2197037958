// Lines of the values of a JSON text, so that errors found after parsing (a missing key, a
// value of the wrong type or range) can still name FILE:LINE. Shared by the readers of
// wattcal's JSON files (power models, AccelWattch scaling-factor models).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "util/json_file.h"  // ParseJsonText

namespace wattcal {

// Line of every value of a (valid) JSON text, by path: "fit.iterations",
// "layout.domains[1].components[0]".
class JsonLineIndex {
 public:
  explicit JsonLineIndex(const std::string& text);

  // Line of `path`, or of its nearest enclosing value when it is absent (a missing key).
  int64_t LineOf(std::string path) const;

 private:
  bool AtEnd() const { return pos_ >= text_.size(); }
  void SkipSpace();
  std::string String();
  void Value(const std::string& path);

  const std::string& text_;
  size_t pos_ = 0;
  int64_t line_ = 1;
  std::map<std::string, int64_t> lines_;
};

// Typed access to the values of a parsed JSON file, every error an InputError naming
// FILE:LINE and the value's path. The base of wattcal's JSON file readers.
class JsonFieldReader {
 public:
  using Json = nlohmann::json;
  // `text` (the file's bytes) must outlive the reader.
  JsonFieldReader(const std::string& path, const std::string& text) : path_(path), lines_(text) {}

 protected:
  [[noreturn]] void Fail(const std::string& field, const std::string& message) const;
  // "parent.key", or "key" at the top level.
  static std::string Join(const std::string& parent, const std::string& key);
  // The value at `key` of `object` (which must be an object).
  const Json& Get(const Json& object, const std::string& parent, const std::string& key) const;
  std::string String(const Json& object, const std::string& parent, const std::string& key) const;
  int Int(const Json& object, const std::string& parent, const std::string& key) const;
  bool Bool(const Json& object, const std::string& parent, const std::string& key) const;
  // A finite number (or NaN for null when `allow_null`).
  double NumberValue(const Json& v, const std::string& path, bool allow_null = false) const;
  double Number(const Json& object, const std::string& parent, const std::string& key,
                bool allow_null = false) const;
  // A finite number, or unset when `key` is absent or null.
  std::optional<double> OptionalNumber(const Json& object, const std::string& parent,
                                       const std::string& key) const;
  // The array at `key`, with `count` elements (any number when count < 0).
  const Json& Array(const Json& object, const std::string& parent, const std::string& key,
                    int64_t count = -1) const;
  void CheckArray(const Json& v, const std::string& path, int64_t count) const;
  // The top level of a versioned wattcal file: an object whose "format" is `format` and whose
  // "version" is `version`; `kind` names it in the version message ("unsupported KIND
  // version V; this wattcal reads version W").
  void CheckFormatAndVersion(const Json& root, const std::string& format, int version,
                             const std::string& kind = "format") const;

  const std::string& path_;
  JsonLineIndex lines_;
};

}  // namespace wattcal
