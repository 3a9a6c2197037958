// Reading a whole file, and a whole JSON file, the one way every layer does it: strict (an
// InputError naming the file, and the line of a syntax error) or tolerant (a discarded value for
// a file that is absent or not JSON).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace wattcal {

// The bytes of `path`; InputError at line 0, "cannot open WHAT: <reason>", when it cannot be
// opened.
std::string ReadFileText(const std::string& path, const std::string& what);

// Parses `text` (the bytes of `path`); a syntax error is an InputError naming the line of
// the offending byte: "invalid JSON: parse error at line ...".
nlohmann::json ParseJsonText(const std::string& path, const std::string& text);

// ParseJsonText(path, ReadFileText(path, what)), for JSON files read as a whole (specs, stage
// outputs); the readers that name the line of a field after parsing keep the text themselves
// (io/json_lines.h JsonFieldReader).
nlohmann::json ReadJsonFile(const std::string& path, const std::string& what);

// Reads and parses a JSON file that may be absent or not JSON (a capture's capture.json, a
// provenance record found by search): the parsed value, or a discarded value
// (`is_discarded()`, and not an object) when the file cannot be opened or parsed.
nlohmann::json ReadJsonFileOrDiscarded(const std::string& path);

}  // namespace wattcal
