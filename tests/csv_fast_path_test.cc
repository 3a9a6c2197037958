// CsvReader's fast path (quote-free lines split without libcsv) against libcsv itself: both
// paths read every sample (../shared/samples), every fuzz seed (fuzz/seeds), every test
// fixture, the capture datasets' CSV files, variants of each (CR LF endings, a quote, a NUL
// byte, a stray CR, blanks around the delimiters, no last end-of-line) and hand-written edge
// cases, and must give the same records on the same lines and the same errors. PowerLogReader
// then reads every power log both ways and must give the same readings, stats and errors.
// Also: the hash CsvReader computes while reading is the file's SHA-256 (on the second thread
// and in the reading thread), and Sha256OfFile reads a file again once it changed; the power
// log's number parser gives std::from_chars's and strtod's doubles, bit for bit, for every
// number in every sample and fuzz seed and for random decimals; nvidia-smi timestamps read at
// fixed positions give the general parser's seconds.
#include <boost/filesystem.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "ingest/log_number.h"
#include "ingest/power_log.h"
#include "io/csv_reader.h"
#include "test_support.h"
#include "util/errors.h"
#include "util/output.h"
#include "util/sha256.h"

namespace wattcal {
namespace {

namespace fs = boost::filesystem;
using ::wattcal::testing::DatasetsDir;
using ::wattcal::testing::ReadFile;
using ::wattcal::testing::ScratchDir;
using ::wattcal::testing::WriteFile;

// Regular files under `dir` (recursively), sorted; none when `dir` is "" or absent.
std::vector<std::string> FilesUnder(const std::string& dir, const std::string& name_has = "") {
  std::vector<std::string> files;
  if (dir.empty() || !fs::is_directory(dir)) return files;
  for (fs::recursive_directory_iterator it(dir), end; it != end; ++it) {
    if (!fs::is_regular_file(it->path())) continue;
    const std::string name = it->path().filename().string();
    if (!name_has.empty() && name.find(name_has) == std::string::npos) continue;
    files.push_back(it->path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Every record (its line and fields) and the error that ended the reading, if any.
std::string ReadAll(const std::string& path, CsvReader::Options options, bool fast) {
  options.fast_path = fast;
  std::string out;
  try {
    CsvReader reader(path, options);
    std::vector<std::string_view> fields;
    while (reader.Next(&fields)) {
      out += std::to_string(reader.line()) + ":" + std::to_string(fields.size());
      for (std::string_view f : fields) {
        out += "|";
        out.append(f.data(), f.size());
      }
      out += "\n";
    }
  } catch (const InputError& e) {
    out += std::string("error: ") + e.what() + "\n";
  }
  return out;
}

void ExpectSameRecords(const std::string& path) {
  for (const char delimiter : {',', ';'}) {
    for (const char comment : {'\0', '#'}) {
      CsvReader::Options options;
      options.delimiter = delimiter;
      options.comment = comment;
      const std::string fast = ReadAll(path, options, true);
      const std::string libcsv = ReadAll(path, options, false);
      ASSERT_EQ(fast, libcsv) << path << " (delimiter '" << delimiter << "', comment "
                              << (comment == '\0' ? "none" : "'#'") << ")";
    }
  }
}

// Variants of `text` that the fast path must hand to libcsv or treat as libcsv does.
std::vector<std::string> Variants(const std::string& text) {
  std::vector<std::string> out;
  std::string crlf;
  for (char c : text) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  out.push_back(crlf);
  const size_t middle = text.size() / 2;
  out.push_back(text.substr(0, middle) + "\"" + text.substr(middle));
  out.push_back(text.substr(0, middle) + std::string(1, '\0') + text.substr(middle));
  out.push_back(text.substr(0, middle) + "\r" + text.substr(middle));
  std::string blanks;
  for (char c : text) {
    if (c == ',') {
      blanks += " \t,\t ";
    } else {
      blanks += c;
    }
  }
  out.push_back(blanks);
  if (!text.empty() && text.back() == '\n') out.push_back(text.substr(0, text.size() - 1));
  // A quoted field spanning two lines in the first line: the rest follows libcsv's state.
  const size_t first_newline = text.find('\n');
  if (first_newline != std::string::npos) {
    out.push_back("\"a\nb\"," + text.substr(0, first_newline) + "\n" +
                  text.substr(first_newline + 1));
  }
  return out;
}

std::vector<std::string> AllInputs() {
  std::vector<std::string> files = FilesUnder(::wattcal::testing::SamplesDir());
  for (const std::string& f : FilesUnder(std::string(WATTCAL_SOURCE_DIR) + "/fuzz/seeds")) {
    files.push_back(f);
  }
  for (const std::string& f : FilesUnder(std::string(WATTCAL_SOURCE_DIR) + "/tests/fixtures")) {
    files.push_back(f);
  }
  const std::string datasets = DatasetsDir();
  if (!datasets.empty()) {
    for (const char* capture : {"h100_capture", "h200_capture"}) {
      for (const std::string& f : FilesUnder(datasets + "/" + capture, ".csv")) {
        files.push_back(f);
      }
    }
  }
  return files;
}

TEST(CsvFastPath, SameRecordsAndErrorsAsLibcsvOnEveryInput) {
  WATTCAL_REQUIRE_SAMPLES();
  WATTCAL_REQUIRE_DATASETS();  // the H100 and H200 captures' CSVs are among the inputs
  const std::vector<std::string> files = AllInputs();
  ASSERT_GT(files.size(), 40u);
  const std::string scratch = ScratchDir();
  int variants = 0;
  for (const std::string& path : files) {
    ExpectSameRecords(path);
    if (::testing::Test::HasFatalFailure()) return;
    if (fs::file_size(path) > (1u << 20)) continue;  // variants of the small files only
    const std::string text = ReadFile(path);
    for (const std::string& variant : Variants(text)) {
      const std::string copy =
          WriteFile(scratch + "/variant_" + std::to_string(variants++) + ".csv", variant);
      ExpectSameRecords(copy);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  EXPECT_GT(variants, 200);
}

TEST(CsvFastPath, SameRecordsOnEdgeCases) {
  const std::string scratch = ScratchDir();
  const std::vector<std::string> cases = {
      "",
      "\n",
      "a\n",
      "a,b\n",
      "a,b",
      "a,b\r\n",
      "a,b\r",
      "a,b\r\r\n",
      "a\rb,c\n",
      " \t \n\r\n\n",
      " , \n",
      ",\n",
      ",,\n",
      "a,\n",
      ",a\n",
      " a b , c\t\n",
      "\ta\t,\t\tb \n",
      "\xEF\xBB\xBF"
      "a,b\n",
      "\xEF\xBB\xBF\n",
      std::string("a,\0b,c\n", 7),
      std::string("\0\n", 2),
      "\"a\",b\n",
      "a,\"b\nc\",d\ne,f\n",
      "a,\"b\"\"c\"\n",
      "a,b\"c\n",
      "\"unterminated\nx,y\n",
      "# comment\na,b\n  # indented comment\n",
      "a;b,c;d\n",
      "\x01,\x1f,\x7f\n",
      "0123456789abcdef,0123456789abcdef,0123456789abcdef,0123456789abcdef,\"q\"\n",
      "0123456789abcdef0123456789abcdef,0123456789abcdef0123456789abcdef\r\n",
      "0123456789abcdef0123456789abcdef,0123456789abcdef\r0123456789abcdef\n",
      "x,y\n\n\nz\n",
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    ExpectSameRecords(WriteFile(scratch + "/case_" + std::to_string(i) + ".csv", cases[i]));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Everything PowerLogReader returns, bit for bit, and its stats or its error.
std::string ReadPowerLog(const std::string& path, PowerLogOptions options, bool fast) {
  options.csv_fast_path = fast;
  std::string out;
  auto bits = [](double v) {
    uint64_t b = 0;
    std::memcpy(&b, &v, sizeof b);
    return std::to_string(b);
  };
  try {
    PowerLogReader reader(path, options);
    PowerSample s;
    while (reader.Next(&s)) {
      out += std::to_string(s.line) + " " + bits(s.time_s) + " " + bits(s.power_w) + " " +
             bits(s.f_core_mhz) + " " + bits(s.f_mem_mhz) + " " + bits(s.temperature_c) + " " +
             bits(s.energy_j) + " " + std::to_string(s.clock_reasons) + " " +
             std::to_string(s.has_clock_reasons) + " " + bits(s.power_limit_w) + "\n";
    }
    const PowerLogSummary& st = reader.stats();
    out += "stats " + std::to_string(st.samples) + " " + std::to_string(st.missing_power_rows) +
           " " + std::to_string(st.empty_power_rows) + " " +
           std::to_string(st.first_empty_power_line) + " " + std::to_string(st.nan_power_rows) +
           " " + std::to_string(st.first_nan_power_line) + " " +
           std::to_string(st.repeated_headers) + " " + std::to_string(st.other_gpu_rows) + " " +
           reader.power_field() + "\n";
  } catch (const InputError& e) {
    out += std::string("error: ") + e.what() + "\n";
  }
  return out;
}

TEST(CsvFastPath, SamePowerReadingsAsLibcsvOnEveryPowerLog) {
  WATTCAL_REQUIRE_SAMPLES();
  const std::string samples = ::wattcal::testing::SamplesDir();
  std::vector<std::string> logs = FilesUnder(samples + "/nvidia-smi");
  for (const std::string& f :
       FilesUnder(std::string(WATTCAL_SOURCE_DIR) + "/fuzz/seeds/fuzz_power_log")) {
    logs.push_back(f);
  }
  const std::string datasets = DatasetsDir();
  for (const char* capture : {"h100_capture", "h200_capture"}) {
    for (const std::string& f :
         FilesUnder(datasets.empty() ? "" : datasets + "/" + capture, "_power.csv")) {
      logs.push_back(f);
    }
  }
  ASSERT_GE(logs.size(), 11u);
  const std::string scratch = ScratchDir();
  int readings_logs = 0;
  int variants = 0;
  for (const std::string& path : logs) {
    std::vector<std::string> inputs = {path};
    if (fs::file_size(path) < (1u << 20)) {
      for (const std::string& v : Variants(ReadFile(path))) {
        inputs.push_back(WriteFile(scratch + "/log_" + std::to_string(variants++) + ".csv", v));
      }
    }
    for (const std::string& input : inputs) {
      std::vector<PowerLogOptions> option_sets(1);
      option_sets.emplace_back();
      option_sets.back().gpu = "0";
      option_sets.emplace_back();  // the no-header sample's query list
      option_sets.back().columns = {"timestamp",   "utilization.gpu", "utilization.memory",
                                    "memory.used", "memory.total",    "temperature.gpu",
                                    "power.draw"};
      for (const PowerLogOptions& options : option_sets) {
        const std::string fast = ReadPowerLog(input, options, true);
        const std::string libcsv = ReadPowerLog(input, options, false);
        ASSERT_EQ(fast, libcsv) << input << " (from " << path << ")";
        if (input == path && fast.rfind("error: ", 0) != 0) ++readings_logs;
      }
    }
  }
  EXPECT_GE(readings_logs, 10);  // most logs are read, not refused
}

// "." and `value` with `width` digits.
std::string fmt_ms(int value, int width) {
  std::string digits = std::to_string(value);
  return "." + std::string(static_cast<size_t>(width) - digits.size(), '0') + digits;
}

// Bits of a double (so -0.0 differs from 0.0 and NaN equals itself).
uint64_t Bits(double v) {
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// ParseLogNumberPrefix against std::from_chars (the old path) and strtod at [begin, end):
// same success, same end, same bits. "" when they agree, else what differs.
std::string CompareNumberParsers(const char* begin, const char* end) {
  double fast = 0.0, reference = 0.0;
  const char* fast_stop = nullptr;
  const bool fast_ok = ParseLogNumberPrefix(begin, end, &fast, &fast_stop);
  const std::from_chars_result r = std::from_chars(begin, end, reference);
  const bool reference_ok = r.ec == std::errc() && r.ptr != begin;
  const std::string text(begin, end);
  if (fast_ok != reference_ok) return "'" + text + "': parsed by one path only";
  if (!fast_ok) return "";
  if (fast_stop != r.ptr || Bits(fast) != Bits(reference)) {
    return "'" + text + "': " + std::to_string(fast) + " vs from_chars " +
           std::to_string(reference);
  }
  // strtod reads the same decimals (it also takes hex, inf and nan, which from_chars does not
  // read the same way: those are left out).
  const std::string lower = [&] {
    std::string l = text;
    for (char& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return l;
  }();
  if (lower.find('x') != std::string::npos || lower.find("inf") != std::string::npos ||
      lower.find("nan") != std::string::npos) {
    return "";
  }
  char* strtod_end = nullptr;
  errno = 0;
  const double by_strtod = std::strtod(text.c_str(), &strtod_end);
  if (errno == 0 &&
      (strtod_end - text.c_str() != fast_stop - begin || Bits(by_strtod) != Bits(fast))) {
    return "'" + text + "': " + std::to_string(fast) + " vs strtod " + std::to_string(by_strtod);
  }
  return "";
}

bool NumberChar(char c) {
  return (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E';
}

TEST(CsvFastPath, LogNumbersAreFromCharsAndStrtodBitForBit) {
  // Every number in every sample and fuzz seed: each place a number may start (a digit, '-'
  // or '.' after a character that cannot be inside a number), up to 40 bytes or the line end.
  WATTCAL_REQUIRE_SAMPLES();
  std::vector<std::string> files = FilesUnder(::wattcal::testing::SamplesDir());
  for (const std::string& f : FilesUnder(std::string(WATTCAL_SOURCE_DIR) + "/fuzz/seeds")) {
    files.push_back(f);
  }
  ASSERT_GE(files.size(), 20u);
  size_t compared = 0;
  for (const std::string& path : files) {
    const std::string text = ReadFile(path);
    for (size_t i = 0; i < text.size(); ++i) {
      const char c = text[i];
      if (!((c >= '0' && c <= '9') || c == '-' || c == '.')) continue;
      if (i > 0 && NumberChar(text[i - 1])) continue;
      size_t end = i;
      while (end < text.size() && end - i < 40 && text[end] != '\n' && text[end] != ',') ++end;
      const std::string differs = CompareNumberParsers(text.data() + i, text.data() + end);
      ASSERT_EQ(differs, "") << path << " at byte " << i;
      ++compared;
    }
  }
  EXPECT_GT(compared, 100000u);
  // Random decimals around the fast path's limit of 15 digits, with and without a sign, a
  // dot in every place, an exponent, a unit after them.
  std::mt19937_64 rng(20261125);
  const char* tails[] = {"", " W", "e3", "E-2", ".", " MHz", "x"};
  for (int n = 0; n < 200000; ++n) {
    const int digits = 1 + static_cast<int>(rng() % 19);
    std::string s = (rng() % 4 == 0) ? "-" : "";
    const int dot = static_cast<int>(rng() % (digits + 2)) - 1;  // -1: no dot
    for (int d = 0; d < digits; ++d) {
      if (d == dot) s += '.';
      s += static_cast<char>('0' + rng() % 10);
    }
    s += tails[rng() % (sizeof tails / sizeof tails[0])];
    ASSERT_EQ(CompareNumberParsers(s.data(), s.data() + s.size()), "");
  }
  for (const char* s : {"0",
                        "-0",
                        "-0.0",
                        "0.",
                        ".5",
                        "-.5",
                        "1.",
                        "-",
                        ".",
                        "-.",
                        "",
                        "999999999999999",
                        "9999999999999999",
                        "0.000000000000001",
                        "123456789012345.6",
                        "1e400",
                        "4.9e-324",
                        "2.2250738585072011e-308",
                        "+1",
                        " 1",
                        "00000000000000000001.5"}) {
    ASSERT_EQ(CompareNumberParsers(s, s + std::strlen(s)), "") << s;
  }
}

TEST(CsvFastPath, SmiTimestampsAtFixedPositionsAreTheGeneralParsersSeconds) {
  // nvidia-smi's "YYYY/MM/DD HH:MM:SS.mmm" is read at fixed positions; a fraction of other
  // lengths by the general loop. Both must give days * 86400 + seconds of the day + fraction.
  std::mt19937 rng(14);
  for (int n = 0; n < 20000; ++n) {
    const int64_t t = 1500000000 + static_cast<int64_t>(rng() % 400000000);
    const int ms = static_cast<int>(rng() % 1000);
    const time_t tt = static_cast<time_t>(t);
    std::tm tm{};
    gmtime_r(&tt, &tm);
    char text[64];
    std::strftime(text, sizeof text, "%Y/%m/%d %H:%M:%S", &tm);
    const std::string whole = text;
    const std::string three = whole + fmt_ms(ms, 3);
    const std::string four = whole + fmt_ms(ms * 10, 4);  // the same instant, general path
    double a = 0.0, b = 0.0, c = 0.0;
    ASSERT_TRUE(ParseSmiTimestamp(three.data(), three.size(), &a)) << three;
    ASSERT_TRUE(ParseSmiTimestamp(four.data(), four.size(), &b)) << four;
    ASSERT_TRUE(ParseSmiTimestamp(whole.data(), whole.size(), &c)) << whole;
    EXPECT_EQ(Bits(a), Bits(static_cast<double>(t) + ms / 1000.0)) << three;
    EXPECT_EQ(Bits(b), Bits(static_cast<double>(t) + (ms * 10) / 10000.0)) << four;
    EXPECT_EQ(Bits(c), Bits(static_cast<double>(t))) << whole;
  }
  // Each digit of the fixed layout replaced by a non-digit, and out-of-range fields: refused.
  const std::string good = "2023/08/24 22:20:16.285";
  for (size_t i = 11; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = bad[i] == ':' || bad[i] == '.' ? '5' : 'x';
    double v = 0.0;
    EXPECT_FALSE(ParseSmiTimestamp(bad.data(), bad.size(), &v)) << bad;
  }
  for (const char* bad : {"2023/08/24 24:00:00.000", "2023/08/24 23:60:00.000",
                          "2023/08/24 23:59:61.000", "2023/08/24 2:20:16.2850"}) {
    double v = 0.0;
    EXPECT_FALSE(ParseSmiTimestamp(bad, std::strlen(bad), &v)) << bad;
  }
  double leap = 0.0;
  ASSERT_TRUE(ParseSmiTimestamp("2016/12/31 23:59:60.500", 23, &leap));
  EXPECT_EQ(leap, 1483228799.0 + 1.0 + 0.5);
}

TEST(CsvFastPath, HashWhileReadingIsTheFileSha256) {
  const std::string scratch = ScratchDir();
  std::string text = "timestamp_us,power_mw\n";
  for (int i = 0; i < 40000; ++i) {
    text += std::to_string(1693491403874000LL + 1000LL * i) + "," + std::to_string(70000 + i % 97) +
            "\n";
  }
  const std::string path = WriteFile(scratch + "/log.csv", text);
  ForgetFileSha256s();
  const std::string by_second_pass = Sha256OfFile(path);  // nothing remembered yet: reads it
  // On the second thread (the log is several blocks) and in the reading thread: same digest.
  for (bool background : {true, false}) {
    CsvReader::Options options;
    options.hash_thread = background ? CsvReader::Options::HashThread::kAlways
                                     : CsvReader::Options::HashThread::kNever;
    CsvReader reader(path, options);
    std::vector<std::string_view> fields;
    EXPECT_EQ(reader.sha256(), "");
    while (reader.Next(&fields)) {
    }
    EXPECT_EQ(reader.sha256(), by_second_pass) << background;
  }
  // Files of 0 .. 40 blocks and a byte either side of a multiple of the block (256 KiB), more
  // blocks than the ring holds: the digest is the second pass's.
  for (size_t size : {size_t{1}, (size_t{1} << 18) - 1, size_t{1} << 18, (size_t{1} << 18) + 1,
                      size_t{5} << 18, (size_t{17} << 18) + 7, size_t{40} << 18}) {
    std::string bytes(size, 'x');
    for (size_t i = 0; i < size; ++i)
      bytes[i] = i % 61 == 60 ? '\n' : static_cast<char>('0' + i % 10);
    const std::string sized = WriteFile(scratch + "/sized_" + std::to_string(size) + ".csv", bytes);
    const std::string expected = Sha256OfFile(sized);  // a new file: read and hashed
    CsvReader::Options options;
    options.hash_thread = CsvReader::Options::HashThread::kAlways;
    CsvReader reader(sized, options);
    std::vector<std::string_view> fields;
    int64_t records = 0;
    while (reader.Next(&fields)) ++records;
    EXPECT_EQ(reader.sha256(), expected) << size;
    EXPECT_EQ(records, static_cast<int64_t>((size + 60) / 61)) << size;
  }
  std::string remembered;
  ASSERT_TRUE(RememberedFileSha256(path, &remembered));
  EXPECT_EQ(remembered, by_second_pass);
  // Changed after it was read: the remembered hash no longer applies.
  WriteFile(path, text + "1693491443874000,70001\n");
  EXPECT_FALSE(RememberedFileSha256(path, &remembered));
  EXPECT_NE(Sha256OfFile(path), by_second_pass);
  // A reader that stops early remembers nothing.
  ForgetFileSha256s();
  {
    CsvReader::Options options;  // the hashing thread is stopped with blocks still queued
    options.hash_thread = CsvReader::Options::HashThread::kAlways;
    CsvReader reader(path, options);
    std::vector<std::string_view> fields;
    ASSERT_TRUE(reader.Next(&fields));
  }
  EXPECT_FALSE(RememberedFileSha256(path, &remembered));
  // The empty file's hash is the well-known one.
  const std::string empty = WriteFile(scratch + "/empty.csv", "");
  CsvReader reader(empty);
  std::vector<std::string_view> fields;
  EXPECT_FALSE(reader.Next(&fields));
  EXPECT_EQ(reader.sha256(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

}  // namespace
}  // namespace wattcal
