// Streaming CSV reader over libcsv that knows the line each record starts on, so that
// every parse error can name FILE:LINE and the field.
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <string>
#include <vector>

struct csv_parser;

namespace wattcal {

class CsvReader {
 public:
  struct Options {
    // Field delimiter.
    char delimiter = ',';
    // Lines whose first non-blank character is this are skipped ('\0': none).
    char comment = '\0';
  };

  // Opens `path` (throws InputError if it cannot be opened).
  explicit CsvReader(const std::string& path);
  CsvReader(const std::string& path, const Options& options);
  ~CsvReader();
  CsvReader(const CsvReader&) = delete;
  CsvReader& operator=(const CsvReader&) = delete;

  // Reads the next non-empty record into `fields`. Returns false at end of file.
  // Leading/trailing spaces of unquoted fields are trimmed (libcsv's default).
  bool Next(std::vector<std::string>* fields);

  // 1-based line on which the last record returned by Next() starts.
  int64_t line() const { return record_line_; }
  const std::string& path() const { return path_; }

  // Throws InputError(path, line(), field, message).
  [[noreturn]] void Fail(const std::string& field, const std::string& message) const;

  // Parses a finite number from `cell`; throws InputError naming this file, line() and
  // `field` when the cell is empty, not a number, NaN or infinite.
  double ParseNumber(const std::string& cell, const std::string& field) const;

 private:
  friend struct CsvCallbacks;
  void ReadMore();

  std::string path_;
  Options options_;
  std::FILE* file_ = nullptr;
  csv_parser* parser_ = nullptr;
  bool eof_ = false;
  int64_t current_line_ = 0;        // line being fed to libcsv
  int64_t pending_start_line_ = 0;  // line on which the record under construction started
  bool in_record_ = false;
  std::vector<std::string> building_;
  std::deque<std::pair<int64_t, std::vector<std::string>>> ready_;
  int64_t record_line_ = 0;
  std::string line_buffer_;
};

// Parses a finite double from the whole of `text` (surrounding spaces allowed).
// Returns false for empty text, trailing garbage, NaN or infinity.
bool ParseFiniteDouble(const std::string& text, double* value);

}  // namespace wattcal
