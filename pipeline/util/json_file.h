// Reading a whole JSON file, the one way every layer does it: strict (an InputError naming the
// file) or tolerant (a discarded value for a file that is absent or not JSON).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace wattcal {

// Reads and parses a JSON file whose errors need no line (specs, stage outputs): InputError
// at line 0, "cannot open WHAT: <reason>" or "not valid JSON: <the parser's message>".
nlohmann::json ReadJsonFile(const std::string& path, const std::string& what);

// Reads and parses a JSON file that may be absent or not JSON (a capture's capture.json, a
// provenance record found by search): the parsed value, or a discarded value
// (`is_discarded()`, and not an object) when the file cannot be opened or parsed.
nlohmann::json ReadJsonFileOrDiscarded(const std::string& path);

}  // namespace wattcal
