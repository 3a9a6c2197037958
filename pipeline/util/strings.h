// The string helpers every reader shares (one definition each): ASCII case folding, trimming of
// blanks (space, tab, CR, LF, VT, FF), prefix and suffix tests.
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

}  // namespace wattcal
