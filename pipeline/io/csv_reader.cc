#include "io/csv_reader.h"

#include <csv.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "util/errors.h"
#include "util/sha256.h"
#include "util/text_input.h"

namespace wattcal {

struct CsvCallbacks {
  static void OnField(void* field, size_t length, void* data) {
    auto* reader = static_cast<CsvReader*>(data);
    if (!reader->in_record_) {
      reader->in_record_ = true;
      reader->pending_start_line_ = reader->current_line_;
    }
    // A plain buffer rather than std::string::append: this runs for every field of every row.
    if (reader->flat_size_ + length > reader->flat_.size()) {
      reader->flat_.resize(std::max(reader->flat_size_ + length, 2 * reader->flat_.size()));
    }
    if (length > 0) std::memcpy(reader->flat_.data() + reader->flat_size_, field, length);
    reader->flat_size_ += length;
    reader->ends_.push_back(reader->flat_size_);
  }
  static void OnRecord(int /*terminator*/, void* data) {
    auto* reader = static_cast<CsvReader*>(data);
    if (!reader->in_record_) {  // a record of one empty field
      reader->pending_start_line_ = reader->current_line_;
    }
    const size_t begin = reader->record_fields_begin_;
    reader->records_.push_back({reader->pending_start_line_, begin, reader->ends_.size() - begin});
    reader->record_fields_begin_ = reader->ends_.size();
    reader->in_record_ = false;
  }
};

CsvReader::CsvReader(const std::string& path) : CsvReader(path, Options()) {}

CsvReader::CsvReader(const std::string& path, const Options& options)
    : path_(path), options_(options) {
  file_ = std::fopen(path.c_str(), "rb");
  if (file_ == nullptr) {
    throw InputError(path, 0, "", std::string("cannot open file: ") + std::strerror(errno));
  }
  parser_ = new csv_parser;
  if (csv_init(parser_, CSV_APPEND_NULL) != 0) {
    delete parser_;
    parser_ = nullptr;
    std::fclose(file_);
    throw InputError(path, 0, "", "cannot initialise the CSV parser");
  }
  csv_set_delim(parser_, static_cast<unsigned char>(options_.delimiter));
  parser_idle_state_ = parser_->pstate;
  // libcsv skips blanks around a field only when they are not the delimiter; the plain split
  // knows only the other case.
  fast_path_ = options_.fast_path && options_.delimiter != ' ' && options_.delimiter != '\t' &&
               options_.delimiter != '"' && options_.delimiter != '\r' &&
               options_.delimiter != '\n';
  hasher_ = std::make_unique<FileReadHasher>(fileno(file_));
}

CsvReader::~CsvReader() {
  background_.reset();  // stops the hashing thread before the blocks it reads go
  if (parser_ != nullptr) {
    csv_free(parser_);
    delete parser_;
  }
  if (file_ != nullptr) std::fclose(file_);
}

bool CsvReader::NextLine(const char** data, size_t* size) {
  carry_.clear();
  for (;;) {
    const char* begin = block_ + block_pos_;
    const size_t available = block_end_ - block_pos_;
    const void* newline = available > 0 ? std::memchr(begin, '\n', available) : nullptr;
    if (newline != nullptr) {
      const size_t length = static_cast<size_t>(static_cast<const char*>(newline) - begin) + 1;
      block_pos_ += length;
      if (carry_.empty()) {
        *data = begin;
        *size = length;
      } else {
        carry_.append(begin, length);
        *data = carry_.data();
        *size = carry_.size();
      }
      return true;
    }
    if (available > 0) carry_.append(begin, available);
    block_pos_ = block_end_ = 0;
    if (file_eof_) {
      if (carry_.empty()) return false;
      *data = carry_.data();
      *size = carry_.size();
      return true;
    }
    ReadBlock();
  }
}

namespace {

// Options::HashThread: whether a second thread will hash the file. kWhenACoreIsFree: more than
// one online core and a 1-minute load average of at most the cores - 1 (measured on a 2-core
// machine at load 4-10, the second thread took the reading thread's share and was no faster).
bool HashOnSecondThread(CsvReader::Options::HashThread mode) {
  switch (mode) {
    case CsvReader::Options::HashThread::kAlways: return true;
    case CsvReader::Options::HashThread::kNever: return false;
    case CsvReader::Options::HashThread::kWhenACoreIsFree: break;
  }
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  double load = 0.0;
  if (cores < 2 || getloadavg(&load, 1) != 1) return false;
  return load <= static_cast<double>(cores - 1);
}

}  // namespace

void CsvReader::ReadBlock() {
  const uint64_t n = blocks_read_++;
  std::vector<char>& block = blocks_[n % kRingBlocks];
  // The buffer last held block n - kRingBlocks: it must be hashed before it is overwritten.
  if (background_ != nullptr && n >= kRingBlocks) background_->WaitUntilHashed(n - kRingBlocks + 1);
  if (block.empty()) block.resize(kBlockBytes);
  block_ = block.data();
  block_end_ = std::fread(block.data(), 1, block.size(), file_);
  if (block_end_ < block.size()) {
    if (std::ferror(file_)) {
      record_line_ = current_line_ + 1;
      Fail("", std::string("read error: ") + std::strerror(errno));
    }
    file_eof_ = true;
  }
  // Hash while reading (util/sha256.h): the manifest need not read the file again. A file of
  // more than one block is hashed on a second thread, in file order.
  if (n == 0 && !file_eof_ && HashOnSecondThread(options_.hash_thread)) {
    background_ = std::make_unique<BackgroundHasher>(hasher_.get());
  }
  if (background_ != nullptr) {
    background_->Submit(block.data(), block_end_);
  } else {
    hasher_->Update(block.data(), block_end_);
  }
  if (file_eof_) {
    if (background_ != nullptr) {
      background_->WaitUntilHashed(background_->submitted());
      background_.reset();
    }
    sha256_ = hasher_->Finish(fileno(file_));
  }
}

bool CsvReader::ReadMore(std::vector<std::string_view>* fields) {
  // Feed libcsv one physical line at a time so each record knows its starting line.
  const char* line = nullptr;
  size_t size = 0;
  if (!NextLine(&line, &size)) {
    eof_ = true;
    if (csv_fini(parser_, CsvCallbacks::OnField, CsvCallbacks::OnRecord, this) != 0) {
      Fail("", std::string("malformed CSV at end of file: ") + csv_strerror(csv_error(parser_)));
    }
    return false;
  }
  ++current_line_;
  if (current_line_ == 1) SkipUtf8ByteOrderMark(&line, &size);
  if (options_.comment != '\0' && !in_record_) {
    size_t first = 0;
    while (first < size && (line[first] == ' ' || line[first] == '\t')) ++first;
    if (first < size && line[first] == options_.comment) return false;
  }
  if (fast_path_ && parser_->pstate == parser_idle_state_) {
    switch (SplitPlainLine(line, size, fields)) {
      case PlainLine::kRecord: return true;
      case PlainLine::kBlank: return false;
      case PlainLine::kNeedsLibcsv: break;
    }
  }
  if (csv_parse(parser_, line, size, CsvCallbacks::OnField, CsvCallbacks::OnRecord, this) != size) {
    record_line_ = current_line_;
    Fail("", std::string("malformed CSV: ") + csv_strerror(csv_error(parser_)));
  }
  return false;
}

CsvReader::PlainLine CsvReader::SplitPlainLine(const char* line, size_t size,
                                               std::vector<std::string_view>* fields) {
  // libcsv's rules for unquoted fields (csv_parse, libcsv 3.0.3): a CR or LF ends the record,
  // blanks (space, tab) before a field are skipped and after it dropped, a line of blanks
  // is no record. A CR LF ending is the same as LF; any other CR, or a quote, is left to
  // libcsv.
  size_t end = size;
  if (end > 0 && line[end - 1] == '\n') --end;
  if (end > 0 && line[end - 1] == '\r') --end;
  size_t i = 0;
  while (i < end && (line[i] == ' ' || line[i] == '\t')) ++i;
  if (i == end) return PlainLine::kBlank;  // only blanks: libcsv gives no record either
  fields->clear();
  size_t field_begin = i;
  // One field, [field_begin, field_end) with its blanks trimmed.
  auto add_field = [&](size_t field_end) {
    size_t b = field_begin;
    while (b < field_end && (line[b] == ' ' || line[b] == '\t')) ++b;
    size_t e = field_end;
    while (e > b && (line[e - 1] == ' ' || line[e - 1] == '\t')) --e;
    fields->emplace_back(line + b, e - b);
    field_begin = field_end + 1;  // past the delimiter
  };
  // The delimiters, 16 bytes at a time with SSE2 where there is SSE2, then byte by byte; a
  // quote or CR sends the line to libcsv.
  const char delimiter = options_.delimiter;
  size_t k = i;
#if defined(__SSE2__)
  const __m128i want_delimiter = _mm_set1_epi8(delimiter);
  const __m128i want_quote = _mm_set1_epi8('"');
  const __m128i want_cr = _mm_set1_epi8('\r');
  for (; k + 16 <= end; k += 16) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(line + k));
    const int special = _mm_movemask_epi8(
        _mm_or_si128(_mm_cmpeq_epi8(bytes, want_quote), _mm_cmpeq_epi8(bytes, want_cr)));
    if (special != 0) return PlainLine::kNeedsLibcsv;
    unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(bytes, want_delimiter)));
    while (mask != 0) {
      add_field(k + static_cast<size_t>(__builtin_ctz(mask)));
      mask &= mask - 1;
    }
  }
#endif
  for (; k < end; ++k) {
    const char c = line[k];
    if (c == '"' || c == '\r') return PlainLine::kNeedsLibcsv;
    if (c == delimiter) add_field(k);
  }
  add_field(end);
  return PlainLine::kRecord;
}

void CsvReader::Compact() {
  // Every completed record was returned: keep only the fields of the record under
  // construction (a quoted field spanning lines), moved to the front.
  const size_t first_byte = record_fields_begin_ == 0 ? 0 : ends_[record_fields_begin_ - 1];
  if (first_byte > 0) {
    std::memmove(flat_.data(), flat_.data() + first_byte, flat_size_ - first_byte);
    flat_size_ -= first_byte;
  }
  ends_.erase(ends_.begin(), ends_.begin() + static_cast<std::ptrdiff_t>(record_fields_begin_));
  for (size_t& end : ends_) end -= first_byte;
  record_fields_begin_ = 0;
  records_.clear();
  records_head_ = 0;
}

bool CsvReader::Next(std::vector<std::string_view>* fields) {
  if (records_head_ == records_.size()) {
    Compact();
    while (records_.empty() && !eof_) {
      if (ReadMore(fields)) {
        record_line_ = current_line_;
        return true;
      }
    }
    if (records_.empty()) return false;
  }
  const Record& record = records_[records_head_++];
  record_line_ = record.line;
  fields->resize(record.field_count);
  size_t begin = record.field_begin == 0 ? 0 : ends_[record.field_begin - 1];
  for (size_t i = 0; i < record.field_count; ++i) {
    const size_t end = ends_[record.field_begin + i];
    (*fields)[i] = std::string_view(flat_.data() + begin, end - begin);
    begin = end;
  }
  return true;
}

bool CsvReader::Next(std::vector<std::string>* fields) {
  if (!Next(&views_)) return false;
  fields->resize(views_.size());
  for (size_t i = 0; i < views_.size(); ++i)
    (*fields)[i].assign(views_[i].data(), views_[i].size());
  return true;
}

void CsvReader::Fail(const std::string& field, const std::string& message) const {
  throw InputError(path_, record_line_, field, message);
}

bool ParseFiniteDouble(const std::string& text, double* value) {
  // strtod stops at a NUL byte: "1\0 83.1" would read as 1. A NUL is never part of a number.
  if (text.find('\0') != std::string::npos) return false;
  const char* begin = text.c_str();
  while (*begin == ' ' || *begin == '\t') ++begin;
  if (*begin == '\0') return false;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(begin, &end);
  if (end == begin) return false;
  while (*end == ' ' || *end == '\t' || *end == '\r') ++end;
  if (*end != '\0') return false;
  if (!std::isfinite(v)) return false;
  *value = v;
  return true;
}

double CsvReader::ParseNumber(const std::string& cell, const std::string& field) const {
  double value = 0.0;
  if (!ParseFiniteDouble(cell, &value)) {
    if (cell.empty()) Fail(field, "empty cell, expected a number");
    Fail(field, "expected a finite number, got '" + cell + "'");
  }
  return value;
}

double CsvReader::ParseBounded(const std::string& cell, const std::string& field,
                               PhysicalQuantity quantity, const UnitFactor& unit) const {
  // value x the factor as one double (1e-3 for mW), as this reader has always converted; not
  // UnitFactor::Apply's exact division, which may differ in the last bit (outputs stay
  // byte-identical).
  double value = ParseNumber(cell, field);
  if (!unit.IsIdentity()) value *= unit.multiply / unit.divide;
  CheckBound(value, field, quantity);
  return value;
}

void CsvReader::CheckBound(double value, const std::string& field,
                           PhysicalQuantity quantity) const {
  const std::string violation = BoundViolation(quantity, value);
  if (!violation.empty()) Fail(field, violation);
}

}  // namespace wattcal
