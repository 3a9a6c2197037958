// util/strings, util/text_input, util/csv_field and util/option_rule: the text helpers every
// reader and writer shares, with their edge cases (empty text, control bytes, non-finite numbers).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "util/csv_field.h"
#include "util/option_rule.h"
#include "util/strings.h"
#include "util/text_input.h"

namespace wattcal {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(Strings, EqualsIgnoreCaseFoldsAsciiLettersOnly) {
  EXPECT_TRUE(EqualsIgnoreCase("POWER_usage", "power_USAGE"));
  EXPECT_TRUE(EqualsIgnoreCase("", ""));
  EXPECT_FALSE(EqualsIgnoreCase("power", "powers"));
  EXPECT_FALSE(EqualsIgnoreCase("mW", "mV"));
  // Bytes outside ASCII compare as they are.
  EXPECT_FALSE(EqualsIgnoreCase("\xC3\xA9", "\xC3\x89"));
}

TEST(Strings, EscapeControlBytesWritesHexByDefault) {
  EXPECT_EQ(EscapeControlBytes(""), "");
  EXPECT_EQ(EscapeControlBytes("plain text, \xC3\xA9"), "plain text, \xC3\xA9");
  EXPECT_EQ(EscapeControlBytes(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(EscapeControlBytes("\x1b[31mred\x7f"), "\\x1b[31mred\\x7f");
  EXPECT_EQ(EscapeControlBytes("one\ntwo\r"), "one\\x0atwo\\x0d");
}

TEST(Strings, EscapeControlBytesKeepsOrNamesLineBreaksWhenAsked) {
  EXPECT_EQ(EscapeControlBytes("one\ntwo\r\t", LineBreaks::kKeep), "one\ntwo\\x0d\\x09");
  EXPECT_EQ(EscapeControlBytes("one\ntwo\r\t", LineBreaks::kNamed), "one\\ntwo\\r\\x09");
}

TEST(TextInput, ByteOrderMarkIsStrippedOnlyAtTheStart) {
  std::string text = "\xEF\xBB\xBFname,value";
  EXPECT_TRUE(StripUtf8ByteOrderMark(&text));
  EXPECT_EQ(text, "name,value");
  EXPECT_FALSE(StripUtf8ByteOrderMark(&text));
  std::string empty;
  EXPECT_FALSE(StripUtf8ByteOrderMark(&empty));
  EXPECT_EQ(StripUtf8ByteOrderMark(std::string_view("a\xEF\xBB\xBF")), "a\xEF\xBB\xBF");
  EXPECT_EQ(StripUtf8ByteOrderMark(std::string_view("\xEF\xBB")), "\xEF\xBB");
}

TEST(CsvFields, QuotedOnlyWhenTheyMustBe) {
  EXPECT_EQ(CsvField(""), "");
  EXPECT_EQ(CsvField("plain"), "plain");
  EXPECT_EQ(CsvField("a,b"), "\"a,b\"");
  EXPECT_EQ(CsvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(CsvField("two\rlines"), "\"two\rlines\"");
  EXPECT_EQ(CsvField(" edge "), " edge ");
  EXPECT_EQ(CsvFieldKeepingEdgeSpaces(" edge"), "\" edge\"");
  EXPECT_EQ(CsvFieldKeepingEdgeSpaces("edge "), "\"edge \"");
  EXPECT_EQ(CsvFieldKeepingEdgeSpaces("in side"), "in side");
  EXPECT_EQ(CsvFieldKeepingEdgeSpaces(""), "");
  EXPECT_EQ(CsvFieldKeepingEdgeSpaces("a,b"), "\"a,b\"");
}

TEST(CsvNumbers, NonFiniteIsAnEmptyCell) {
  EXPECT_EQ(CsvNumber(1.0 / 3.0), "0.333333333");
  EXPECT_EQ(CsvNumber(kNaN), "");
  EXPECT_EQ(CsvNumber(kInf), "");
  EXPECT_EQ(CsvFixed(2.5, 6), "2.500000");
  EXPECT_EQ(CsvFixed(-0.126, 2), "-0.13");
  EXPECT_EQ(CsvFixed(kNaN, 6), "");
  EXPECT_EQ(CsvFixed(-kInf, 6), "");
  EXPECT_EQ(CsvExactNumber(0.1), "0.10000000000000001");
  EXPECT_EQ(CsvExactNumber(kNaN), "");
}

TEST(CsvNumbers, ExactNumberReadsBackExactly) {
  for (double v : {0.1, 1.0 / 3.0, 6.02214076e23, -2.5e-300}) {
    EXPECT_EQ(std::stod(ExactNumber(v)), v) << ExactNumber(v);
  }
  EXPECT_EQ(ExactNumber(kNaN), "nan");
  EXPECT_EQ(ExactNumber(-kInf), "-inf");
}

TEST(OptionRule, RejectOptionWritesTheMessageAndFails) {
  std::string error;
  EXPECT_FALSE(RejectOption(&error, "num_sms = {} must be >= 0 (0: from the sweep)", -3));
  EXPECT_EQ(error, "num_sms = -3 must be >= 0 (0: from the sweep)");
  EXPECT_FALSE(RejectOption(&error, "perf_models has an empty name"));
  EXPECT_EQ(error, "perf_models has an empty name");
}

}  // namespace
}  // namespace wattcal
