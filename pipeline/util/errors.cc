#include "util/errors.h"

#include "util/strings.h"

namespace wattcal {
namespace {

std::string Compose(const std::string& file, int64_t line, const std::string& field,
                    const std::string& message) {
  std::string s = file;
  if (line > 0) s += ":" + std::to_string(line);
  if (!s.empty()) s += ": ";  // data from memory (no file): "FIELD: MESSAGE"
  if (!field.empty()) s += field + ": ";
  return EscapeControlBytes(s + message);
}

}  // namespace

OptionError::OptionError(const std::string& message)
    : std::runtime_error(EscapeControlBytes(message)) {}

FitError::FitError(const std::string& message) : std::runtime_error(EscapeControlBytes(message)) {}

InputError::InputError(std::string file, int64_t line, std::string field,
                       const std::string& message)
    : std::runtime_error(Compose(file, line, field, message)),
      file_(std::move(file)),
      line_(line),
      field_(std::move(field)),
      message_(message) {}

}  // namespace wattcal
