// wattcal-check's comparison of run outputs with expected figures.
#include <gtest/gtest.h>

#include <boost/filesystem.hpp>

#include "report/results_check.h"
#include "test_support.h"
#include "util/errors.h"

namespace wattcal {
namespace {

using testing::ScratchDir;
using testing::WriteFile;

TEST(ResultsCheck, FindsWithinDiffersAndMissing) {
  const std::string dir = ScratchDir();
  boost::filesystem::create_directories(dir + "/reports/a/sub");
  WriteFile(dir + "/reports/a/m.json", R"({"mape_pct": 5.71, "models": [{"mape_pct": 1.3}]})");
  WriteFile(dir + "/reports/a/sub/m.json", R"({"x": "text"})");
  const std::string expected = WriteFile(dir + "/expected.csv",
                                         "# comment\n"
                                         "run,file,pointer,expected,tolerance,reference\n"
                                         "a,m.json,/mape_pct,5.7,0.02,target\n"
                                         "a,m.json,/models/0/mape_pct,1.0,0.1,paper\n"
                                         "a,sub/m.json,/x,1,0,not a number\n"
                                         "b,m.json,/mape_pct,1,0,no such run\n");
  const std::vector<CheckedFigure> c =
      CheckFigures(ReadExpectedFigures(expected), dir + "/reports", {});
  ASSERT_EQ(c.size(), 4u);
  EXPECT_TRUE(c[0].found && c[0].within);
  EXPECT_DOUBLE_EQ(c[0].obtained, 5.71);
  EXPECT_TRUE(c[1].found && !c[1].within);
  EXPECT_FALSE(c[2].found);
  EXPECT_FALSE(c[3].found);
  const std::string table = CheckTable(c);
  EXPECT_NE(table.find("| a | m.json/mape_pct | 5.7 ± 0.02 | 5.71 | ok | target |"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("DIFFERS"), std::string::npos);
  EXPECT_NE(table.find("MISSING"), std::string::npos);
  EXPECT_EQ(CheckFigures(ReadExpectedFigures(expected), dir + "/reports", {"b"}).size(), 1u);
}

TEST(ResultsCheck, ReadsACsvTablesCellByItsRowsFirstColumnAndItsColumnName) {
  const std::string dir = ScratchDir();
  boost::filesystem::create_directories(dir + "/reports/f");
  WriteFile(dir + "/reports/f/fleet.csv",
            "uuid,status,message,idle_w\n"
            "GPU-1,ok,\"a, quoted message\",71.91\n"
            "GPU-2,failed,no fit,\n"
            "a/b,ok,,3\n");
  const std::string expected = WriteFile(dir + "/expected.csv",
                                         "run,file,pointer,expected,tolerance,reference\n"
                                         "f,fleet.csv,/GPU-1/idle_w,71.9,0.05,x\n"
                                         "f,fleet.csv,/GPU-1/idle_w,70,0.05,x\n"
                                         "f,fleet.csv,/GPU-2/idle_w,0,1,empty cell\n"
                                         "f,fleet.csv,/GPU-1/status,0,1,not a number\n"
                                         "f,fleet.csv,/GPU-3/idle_w,0,1,no such row\n"
                                         "f,fleet.csv,/GPU-1/static_w,0,1,no such column\n"
                                         "f,fleet.csv,/GPU-1,0,1,no column named\n"
                                         "f,fleet.csv,/a~1b/idle_w,3,0,escaped slash\n"
                                         "f,none.csv,/GPU-1/idle_w,0,1,no such file\n");
  const std::vector<CheckedFigure> c =
      CheckFigures(ReadExpectedFigures(expected), dir + "/reports", {});
  ASSERT_EQ(c.size(), 9u);
  EXPECT_TRUE(c[0].found && c[0].within);
  EXPECT_DOUBLE_EQ(c[0].obtained, 71.91);
  EXPECT_TRUE(c[1].found && !c[1].within);
  for (int i = 2; i <= 6; ++i) EXPECT_FALSE(c[i].found) << c[i].expected.reference;
  EXPECT_TRUE(c[7].found && c[7].within);
  EXPECT_FALSE(c[8].found);
}

TEST(ResultsCheck, BadExpectedFileNamesLineAndField) {
  const std::string dir = ScratchDir();
  const std::string path = WriteFile(dir + "/e.csv",
                                     "run,file,pointer,expected,tolerance,reference\n"
                                     "a,m.json,mape_pct,5.7,0.02,x\n");
  try {
    ReadExpectedFigures(path);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.field(), "pointer");
  }
  WriteFile(path, "run,file,pointer,expected,tolerance,reference\na,m.json,/m,abc,0.02,x\n");
  try {
    ReadExpectedFigures(path);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "expected");
  }
}

}  // namespace
}  // namespace wattcal
