// CsvReader's fast path (quote-free lines split without libcsv) against libcsv itself: both
// paths read every sample (../shared/samples), every fuzz seed (fuzz/seeds), every test
// fixture, the capture datasets' CSV files, variants of each (CR LF endings, a quote, a NUL
// byte, a stray CR, blanks around the delimiters, no last end-of-line) and hand-written edge
// cases, and must give the same records on the same lines and the same errors. PowerLogReader
// then reads every power log both ways and must give the same readings, stats and errors.
// Also: the hash CsvReader computes while reading is the file's SHA-256, and Sha256OfFile
// reads a file again once it changed.
#include <boost/filesystem.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

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

std::string SharedDir(const char* name) {
  const fs::path candidate = fs::path(WATTCAL_SOURCE_DIR) / ".." / "shared" / name;
  return fs::is_directory(candidate) ? fs::canonical(candidate).string() : std::string();
}

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
  std::vector<std::string> files = FilesUnder(SharedDir("samples"));
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
  const std::vector<std::string> files = AllInputs();
  if (SharedDir("samples").empty()) GTEST_SKIP() << "../shared/samples not found";
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
      "\xEF\xBB\xBF" "a,b\n",
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
    const PowerLogStats& st = reader.stats();
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
  const std::string samples = SharedDir("samples");
  if (samples.empty()) GTEST_SKIP() << "../shared/samples not found";
  std::vector<std::string> logs = FilesUnder(samples + "/nvidia-smi");
  for (const std::string& f :
       FilesUnder(std::string(WATTCAL_SOURCE_DIR) + "/fuzz/seeds/fuzz_power_log")) {
    logs.push_back(f);
  }
  const std::string datasets = DatasetsDir();
  for (const char* capture : {"h100_capture", "h200_capture"}) {
    for (const std::string& f : FilesUnder(datasets.empty() ? "" : datasets + "/" + capture,
                                           "_power.csv")) {
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
  {
    CsvReader reader(path);
    std::vector<std::string_view> fields;
    EXPECT_EQ(reader.sha256(), "");
    while (reader.Next(&fields)) {
    }
    EXPECT_EQ(reader.sha256(), by_second_pass);
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
    CsvReader reader(path);
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
