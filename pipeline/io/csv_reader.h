// Streaming CSV reader over libcsv (a leading UTF-8 byte order mark is skipped) that knows the line each record starts on, so that
// every parse error can name FILE:LINE and the field.
//
// The file is read in 256 KiB blocks and handed to libcsv one physical line at a time (so
// each record knows its line); fields are collected in one flat buffer, so reading allocates
// nothing per field once the buffers have grown. Constant memory but for the longest record.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "util/bounds.h"

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

  // The same without copying: `fields` view the reader's buffer and stay valid until the next
  // call to Next(). For hot loops (power logs of hundreds of MB).
  bool Next(std::vector<std::string_view>* fields);

  // 1-based line on which the last record returned by Next() starts.
  int64_t line() const { return record_line_; }
  const std::string& path() const { return path_; }

  // Throws InputError(path, line(), field, message).
  [[noreturn]] void Fail(const std::string& field, const std::string& message) const;

  // Parses a finite number from `cell`; throws InputError naming this file, line() and
  // `field` when the cell is empty, not a number, NaN or infinite.
  double ParseNumber(const std::string& cell, const std::string& field) const;

  // ParseNumber(cell, field) x scale (a unit conversion to the canonical unit), checked against
  // the physical bound of `quantity` (util/bounds.h); throws InputError naming this file, line()
  // and `field`, the value and the bound when it is outside.
  double ParseBounded(const std::string& cell, const std::string& field, PhysicalQuantity quantity,
                      double scale = 1.0) const;

  // Throws InputError naming this file, line() and `field` when `value` is outside the
  // physical bound of `quantity`.
  void CheckBound(double value, const std::string& field, PhysicalQuantity quantity) const;

 private:
  friend struct CsvCallbacks;
  void ReadMore();
  // The next physical line, its end-of-line included (the last line may lack one); false at
  // the end of the file. The bytes stay valid until the next call.
  bool NextLine(const char** data, size_t* size);

  // A completed record: fields field_begin .. field_begin + field_count - 1 of ends_.
  struct Record {
    int64_t line = 0;
    size_t field_begin = 0;
    size_t field_count = 0;
  };
  // Drops the records already returned (and their bytes) from the buffers.
  void Compact();

  std::string path_;
  Options options_;
  std::FILE* file_ = nullptr;
  csv_parser* parser_ = nullptr;
  bool eof_ = false;
  int64_t current_line_ = 0;        // line being fed to libcsv
  int64_t pending_start_line_ = 0;  // line on which the record under construction started
  bool in_record_ = false;
  // Field bytes back to back; ends_[i] is the end offset of field i in flat_ (field i starts
  // at ends_[i - 1], or 0). Fields from record_fields_begin_ on belong to the record under
  // construction.
  std::vector<char> flat_;
  size_t flat_size_ = 0;  // bytes of flat_ in use
  std::vector<size_t> ends_;
  size_t record_fields_begin_ = 0;
  // Completed records not yet returned: records_[records_head_..].
  std::vector<Record> records_;
  size_t records_head_ = 0;
  int64_t record_line_ = 0;
  // Scratch for Next(std::vector<std::string>*).
  std::vector<std::string_view> views_;
  // Block input: a line spanning two blocks is copied to carry_.
  std::vector<char> block_;
  size_t block_pos_ = 0;
  size_t block_end_ = 0;
  bool file_eof_ = false;
  std::string carry_;
};

// Parses a finite double from the whole of `text` (surrounding spaces allowed).
// Returns false for empty text, trailing garbage (a NUL byte included), NaN or infinity.
bool ParseFiniteDouble(const std::string& text, double* value);

}  // namespace wattcal
