// Error types shared by every stage (STYLE.md house rule 6).
//
//   OptionError  invalid command-line options          -> exit 1
//   InputError   bad input data, thrown by the I/O layer -> exit 2
//   FitError     a fit that did not converge / a validation below its threshold -> exit 3
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace wattcal {

enum ExitCode : int {
  kExitOk = 0,
  kExitOptions = 1,
  kExitInput = 2,
  kExitFit = 3,
};

// Bad input data. what() reads "FILE:LINE: FIELD: MESSAGE" (LINE omitted when 0,
// FIELD omitted when empty), so a user can jump straight to the offending cell. Control bytes
// in any part are escaped as \xNN (EscapeControlBytes, util/strings.h).
class InputError : public std::runtime_error {
 public:
  InputError(std::string file, int64_t line, std::string field, const std::string& message);

  const std::string& file() const { return file_; }
  int64_t line() const { return line_; }
  const std::string& field() const { return field_; }
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  int64_t line_;
  std::string field_;
  std::string message_;
};

// Invalid options (a field of an Options struct, or a command-line flag).
class OptionError : public std::runtime_error {
 public:
  explicit OptionError(const std::string& message);
};

// A fit that produced no usable solution.
class FitError : public std::runtime_error {
 public:
  explicit FitError(const std::string& message);
};

}  // namespace wattcal
