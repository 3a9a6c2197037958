// The string helpers every reader shares (one definition each): ASCII case folding and
// case-insensitive comparison, trimming of blanks (space, tab, CR, LF, VT, FF), prefix and suffix
// tests, control bytes spelled out for messages. (A byte order mark: util/text_input.h; a number
// for a CSV cell: util/csv_field.h.)
#pragma once

#include <string>
#include <string_view>

namespace wattcal {

// `s` with ASCII letters lowered (other bytes as they are).
std::string ToLower(std::string_view s);
// `s` without leading and trailing blanks: a view into `s` (for hot loops over a buffer) ...
std::string_view TrimView(std::string_view s);
// ... and a copy.
std::string Trim(std::string_view s);
bool StartsWith(std::string_view s, std::string_view prefix);
bool EndsWith(std::string_view s, std::string_view suffix);
// Whether `a` and `b` are equal but for the case of ASCII letters.
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// How EscapeControlBytes writes a line feed (0x0a) and a carriage return (0x0d).
enum class LineBreaks {
  kHex,    // as \x0a and \x0d, like every other control byte
  kKeep,   // the line feed as it is (a multi-line log message), the carriage return as \x0d
  kNamed,  // as \n and \r (a cell quoted in a one-line parse error)
};

// `text` with every control byte (0x00-0x1f and 0x7f) written as \xNN (lower-case hex), line
// breaks as `line_breaks` says, so that bytes read from an input file cannot reach a terminal as
// escape sequences or cut a message short (a NUL). Other bytes (UTF-8 included) stay as they are.
std::string EscapeControlBytes(std::string_view text, LineBreaks line_breaks = LineBreaks::kHex);

}  // namespace wattcal
