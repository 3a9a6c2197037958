#include "io/csv_reader.h"

#include <csv.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "util/errors.h"

namespace wattcal {

struct CsvCallbacks {
  static void OnField(void* field, size_t length, void* data) {
    auto* reader = static_cast<CsvReader*>(data);
    if (!reader->in_record_) {
      reader->in_record_ = true;
      reader->pending_start_line_ = reader->current_line_;
    }
    reader->building_.emplace_back(static_cast<const char*>(field), length);
  }
  static void OnRecord(int /*terminator*/, void* data) {
    auto* reader = static_cast<CsvReader*>(data);
    if (!reader->in_record_) {  // a record of one empty field
      reader->pending_start_line_ = reader->current_line_;
    }
    reader->ready_.emplace_back(reader->pending_start_line_, std::move(reader->building_));
    reader->building_.clear();
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
}

CsvReader::~CsvReader() {
  if (parser_ != nullptr) {
    csv_free(parser_);
    delete parser_;
  }
  if (file_ != nullptr) std::fclose(file_);
}

void CsvReader::ReadMore() {
  // Feed libcsv one physical line at a time so each record knows its starting line.
  line_buffer_.clear();
  int c;
  while ((c = std::fgetc(file_)) != EOF) {
    line_buffer_.push_back(static_cast<char>(c));
    if (c == '\n') break;
  }
  if (line_buffer_.empty()) {
    eof_ = true;
    if (csv_fini(parser_, CsvCallbacks::OnField, CsvCallbacks::OnRecord, this) != 0) {
      Fail("", std::string("malformed CSV at end of file: ") + csv_strerror(csv_error(parser_)));
    }
    return;
  }
  ++current_line_;
  if (options_.comment != '\0' && !in_record_) {
    const size_t first = line_buffer_.find_first_not_of(" \t");
    if (first != std::string::npos && line_buffer_[first] == options_.comment) return;
  }
  if (csv_parse(parser_, line_buffer_.data(), line_buffer_.size(), CsvCallbacks::OnField,
                CsvCallbacks::OnRecord, this) != line_buffer_.size()) {
    record_line_ = current_line_;
    Fail("", std::string("malformed CSV: ") + csv_strerror(csv_error(parser_)));
  }
}

bool CsvReader::Next(std::vector<std::string>* fields) {
  while (ready_.empty() && !eof_) ReadMore();
  if (ready_.empty()) return false;
  record_line_ = ready_.front().first;
  *fields = std::move(ready_.front().second);
  ready_.pop_front();
  return true;
}

void CsvReader::Fail(const std::string& field, const std::string& message) const {
  throw InputError(path_, record_line_, field, message);
}

bool ParseFiniteDouble(const std::string& text, double* value) {
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

}  // namespace wattcal
