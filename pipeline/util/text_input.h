// Text input helpers shared by every reader: a UTF-8 byte order mark (EF BB BF, written by
// Excel's "CSV UTF-8", Notepad and PowerShell's Out-File) at the very start of a file is not
// part of its first line. Every reader strips it where it reads its first line: CsvReader (all
// CSV readers: corpora, tidy files, kernel windows, perf CSVs, AccelWattch tables, power logs),
// the power-log line reader and probe, the counter readers, the line-based readers (ubench
// cfg, orderings, tidy preambles) and the JSON readers (nlohmann::json skips it itself).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace wattcal {

// The UTF-8 encoding of U+FEFF.
inline constexpr std::string_view kUtf8ByteOrderMark = "\xEF\xBB\xBF";

// Removes a leading byte order mark from `text`; true when there was one.
bool StripUtf8ByteOrderMark(std::string* text);

// `text` without a leading byte order mark.
std::string_view StripUtf8ByteOrderMark(std::string_view text);

// Advances `*data`/`*size` past a leading byte order mark (a first line handed over as bytes).
void SkipUtf8ByteOrderMark(const char** data, size_t* size);

}  // namespace wattcal
