// Streaming CSV reader over libcsv (a leading UTF-8 byte order mark is skipped) that knows the line each record starts on, so that
// every parse error can name FILE:LINE and the field.
//
// The file is read in 256 KiB blocks and handed over one physical line at a time (so each
// record knows its line). A line without a double quote and without a carriage return before
// its end (every line of an nvidia-smi or NVML log) is split by the reader itself, with
// libcsv's rules for unquoted fields: fields split at the delimiter, spaces and tabs trimmed at
// both ends, a blank line no record, a CR LF ending the same as LF. Every other line, and
// every line while a quoted field is open, goes to libcsv. The results are the same either way
// (tests/csv_fast_path_test.cc runs both over every sample and fuzz seed). Fields are collected
// in one flat buffer, so reading allocates nothing per field once the buffers have grown.
// Constant memory but for the longest record.
//
// The bytes are hashed (SHA-256) as they are read: a reader that reaches the end of the file
// remembers the file's hash (RememberFileSha256, util/output.h), so the manifest of an output
// made from it does not read the file a second time. A file larger than one block is hashed
// on a second thread (BackgroundHasher, util/sha256.h) when a core is free for it, fed from a
// ring of 16 reused blocks (4 MiB in all), so hashing is off the parsing thread's critical
// path; same digest.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "io/units.h"
#include "util/bounds.h"

struct csv_parser;

namespace wattcal {

class BackgroundHasher;
class FileReadHasher;

class CsvReader {
 public:
  struct Options {
    // Field delimiter.
    char delimiter = ',';
    // Lines whose first non-blank character is this are skipped ('\0': none).
    char comment = '\0';
    // Quote-free lines are split by the reader rather than libcsv (same results). False sends
    // every line to libcsv: for tests comparing the two.
    bool fast_path = true;
    // Where a file larger than one block is hashed (same digest either way): on a second
    // thread when a core is free for it (the 1-minute load average is at most the online
    // cores - 1; on a busy machine the second thread only takes the reading thread's share and
    // measured no faster), always on a second thread, or always in the reading thread (tests).
    enum class HashThread { kWhenACoreIsFree, kAlways, kNever };
    HashThread hash_thread = HashThread::kWhenACoreIsFree;
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

  // Hex SHA-256 of the whole file, once Next() has returned false (the end was reached);
  // "" before.
  const std::string& sha256() const { return sha256_; }

  // 1-based line on which the last record returned by Next() starts.
  int64_t line() const { return record_line_; }
  const std::string& path() const { return path_; }

  // Throws InputError(path, line(), field, message).
  [[noreturn]] void Fail(const std::string& field, const std::string& message) const;

  // Parses a finite number from `cell`; throws InputError naming this file, line() and
  // `field` when the cell is empty, not a number, NaN or infinite.
  double ParseNumber(const std::string& cell, const std::string& field) const;

  // ParseNumber(cell, field) in the canonical unit (`unit`: the column's factor from the unit
  // table, io/units.h), checked against the physical bound of `quantity` (util/bounds.h);
  // throws InputError naming this file, line() and `field`, the value and the bound when it is
  // outside.
  double ParseBounded(const std::string& cell, const std::string& field, PhysicalQuantity quantity,
                      const UnitFactor& unit = UnitFactor()) const;

  // Throws InputError naming this file, line() and `field` when `value` is outside the
  // physical bound of `quantity`.
  void CheckBound(double value, const std::string& field, PhysicalQuantity quantity) const;

 private:
  friend struct CsvCallbacks;
  // Reads the next physical line. A quote-free line is split straight into `fields` (true
  // when it made a record; they view the line, valid until the next call); any other line
  // goes to libcsv, whose records are queued in records_ (false).
  bool ReadMore(std::vector<std::string_view>* fields);
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
  // Splits a quote-free line (libcsv idle, between records) into `fields` (views of `line`).
  enum class PlainLine { kRecord, kBlank, kNeedsLibcsv };
  PlainLine SplitPlainLine(const char* line, size_t size, std::vector<std::string_view>* fields);
  // Reads the next block of the file into the ring and hands it to the hasher; at the end of
  // the file finishes the hash (sha256_) and remembers it.
  void ReadBlock();

  std::string path_;
  Options options_;
  std::FILE* file_ = nullptr;
  csv_parser* parser_ = nullptr;
  int parser_idle_state_ = 0;  // libcsv's state between records (after csv_init)
  bool fast_path_ = true;      // Options::fast_path and a delimiter that is no blank
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
  // Block input: a ring of kRingBlocks reused blocks of kBlockBytes (allocated once, as
  // needed), block n read into blocks_[n % kRingBlocks]; the current one is block_. A line
  // spanning two blocks is copied to carry_.
  static constexpr size_t kBlockBytes = size_t{1} << 18;
  static constexpr size_t kRingBlocks = 16;
  std::vector<char> blocks_[kRingBlocks];
  const char* block_ = nullptr;
  uint64_t blocks_read_ = 0;
  size_t block_pos_ = 0;
  size_t block_end_ = 0;
  bool file_eof_ = false;
  std::string carry_;
  // SHA-256 of the bytes read so far and the hex digest at the end; background_ hashes on a
  // second thread once the file proves larger than a block (declared last: it goes first).
  std::unique_ptr<FileReadHasher> hasher_;
  std::string sha256_;
  std::unique_ptr<BackgroundHasher> background_;
};

// Parses a finite double from the whole of `text` (surrounding spaces allowed).
// Returns false for empty text, trailing garbage (a NUL byte included), NaN or infinity.
bool ParseFiniteDouble(const std::string& text, double* value);

}  // namespace wattcal
