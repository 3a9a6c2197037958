// Lines of the values of a JSON text, so that errors found after parsing (a missing key, a
// value of the wrong type or range) can still name FILE:LINE. Shared by the readers of
// wattcal's JSON files (power models, AccelWattch scaling-factor models).
#pragma once

#include <cstdint>
#include <map>
#include <string>

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

}  // namespace wattcal
