// Field sets (io/field_set.h): the shipped DCGM / GPM descriptions, their ncu equivalents, the
// field catalogue and the utilisations a window's means give.
#include <gtest/gtest.h>

#include <boost/filesystem.hpp>
#include <cmath>

#include "io/field_set.h"
#include "io/gpu_description.h"
#include "test_support.h"
#include "util/errors.h"

namespace wattcal {
namespace {

using testing::ScratchDir;
using testing::WriteFile;

const std::string kFieldsDir = std::string(WATTCAL_SOURCE_DIR) + "/microbench_specs/gpus/fields";

std::vector<std::string> FilesEndingWith(const std::string& suffix) {
  std::vector<std::string> out;
  for (const auto& e : boost::filesystem::directory_iterator(kFieldsDir)) {
    const std::string name = e.path().filename().string();
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(FieldSet, KnownFieldsAreFoundByNameTagAndId) {
  const KnownField* sm = FindKnownField("DCGM_FI_PROF_SM_ACTIVE");
  ASSERT_NE(sm, nullptr);
  EXPECT_EQ(sm->id, 1002);  // dcgm_fields.h
  EXPECT_EQ(FindKnownField("smact"), sm);
  EXPECT_EQ(FindKnownField("1002"), sm);
  const KnownField* gpm = FindKnownField("gpm:2");
  ASSERT_NE(gpm, nullptr);
  EXPECT_STREQ(gpm->name, "NVML_GPM_METRIC_SM_UTIL");  // nvml.h: NVML_GPM_METRIC_SM_UTIL = 2
  EXPECT_EQ(FindKnownField("NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC")->id, 61);
  EXPECT_EQ(FindKnownField("POWINST")->id, 157);
  EXPECT_EQ(FindKnownField("NO_SUCH_FIELD"), nullptr);
  EXPECT_EQ(FindKnownField("gpm:8"), nullptr);  // no GPM metric 8 in nvml.h
}

TEST(FieldSet, EveryShippedSetPassesCheckAndCitesItsFields) {
  const std::vector<std::string> sets = FilesEndingWith("_dcgm.json");
  const std::vector<std::string> gpm = FilesEndingWith("_gpm.json");
  ASSERT_EQ(sets.size(), 3u);  // H100, H200, V100
  ASSERT_EQ(gpm.size(), 2u);   // H100, H200
  for (const std::string& path : {sets[0], sets[1], sets[2], gpm[0], gpm[1]}) {
    SCOPED_TRACE(path);
    const FieldSet set = ReadFieldSet(path);
    std::string error;
    EXPECT_TRUE(set.Check(&error)) << error;
    for (const char* cited : {"default_core_mhz", "default_mem_mhz", "fields", "components"}) {
      EXPECT_EQ(set.sources.count(cited), 1u) << cited;
    }
  }
}

// A model calibrated on the ncu field-equivalents predicts from DCGM or GPM fields: the layouts
// (component names, domains, default clocks) are the same.
TEST(FieldSet, DcgmGpmAndNcuEquivalentHaveOneLayout) {
  for (const std::string variant : {"h100_sxm_from_ncu", "h100_sxm_from_ncu_instr",
                                    "h200_sxm_from_ncu", "h200_sxm_from_ncu_instr"}) {
    SCOPED_TRACE(variant);
    const std::string gpu = variant.substr(0, 4);
    const GpuDescription ncu = ReadGpuDescription(kFieldsDir + "/" + variant + ".json");
    std::string error;
    EXPECT_TRUE(ncu.Check(&error)) << error;
    for (const ComponentCounters& c : ncu.components) {
      const std::string key = c.kind == UtilisationKind::kComputeUnit
                                  ? "components[" + c.component + "].units_per_sm"
                                  : "components[" + c.component + "].peak_bytes_per_s";
      EXPECT_EQ(ncu.sources.count(key), 1u) << key;
    }
    const Layout layout = ncu.ToLayout();
    EXPECT_EQ(ReadFieldSet(kFieldsDir + "/" + gpu + "_sxm_dcgm.json").ToLayout().Mismatch(layout),
              "");
    EXPECT_EQ(ReadFieldSet(kFieldsDir + "/" + gpu + "_sxm_gpm.json").ToLayout().Mismatch(layout),
              "");
  }
}

// The fleet reduce matches a field set to a capture's GPU by the GPU its name names.
TEST(FieldSet, ItsNameNamesItsGpuWithoutTheSourceWords) {
  const FieldSet gpm = ReadFieldSet(kFieldsDir + "/h100_sxm_gpm.json");
  EXPECT_EQ(FieldSetGpuName(gpm), "h100-sxm");
  EXPECT_EQ(FieldSetGpuName(ReadFieldSet(kFieldsDir + "/h200_sxm_dcgm.json")), "h200-sxm");
  EXPECT_EQ(FieldSetGpuName(ReadFieldSet(kFieldsDir + "/v100_pcie_dcgm.json")), "v100-pcie");
  GpuDescription d;
  d.name = FieldSetGpuName(gpm);
  EXPECT_TRUE(DescriptionDescribes(d, "NVIDIA H100 80GB HBM3"));
  EXPECT_FALSE(DescriptionDescribes(d, "NVIDIA H200"));
}

TEST(FieldSet, UtilisationsFromRatiosPercentsAndRates) {
  FieldSet set;
  set.name = "t";
  set.source = FieldSource::kGpm;
  set.default_core_mhz = 1000;
  set.default_mem_mhz = 2000;
  set.components = {
      {"SM", "core", {"NVML_GPM_METRIC_SM_UTIL"}, 0.0},
      {"LINK",
       "core",
       {"NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC", "NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC"},
       4.0 * 1048576},
      {"DRAM", "mem", {"NVML_GPM_METRIC_DRAM_BW_UTIL"}, 0.0}};
  std::string error;
  ASSERT_TRUE(set.Check(&error)) << error;
  std::vector<std::string> missing;
  const std::vector<double> u =
      FieldUtilisations(set,
                        {{"NVML_GPM_METRIC_SM_UTIL", 50.0},
                         {"NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC", 1.0},  // MiB/s
                         {"NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC", 2.0},
                         {"NVML_GPM_METRIC_DRAM_BW_UTIL", std::nan("")}},
                        &missing);
  ASSERT_EQ(u.size(), 3u);
  EXPECT_DOUBLE_EQ(u[0], 0.5);
  EXPECT_DOUBLE_EQ(u[1], 0.75);  // 3 MiB/s of a 4 MiB/s peak
  EXPECT_TRUE(std::isnan(u[2]));
  EXPECT_EQ(missing, std::vector<std::string>{"NVML_GPM_METRIC_DRAM_BW_UTIL"});
}

TEST(FieldSet, ErrorsNameTheJsonPath) {
  const std::string dir = ScratchDir();
  auto problem = [&](const std::string& components) {
    const std::string path = WriteFile(dir + "/set.json",
                                       R"({"name": "x", "source": "dcgm", "default_core_mhz": 1000,
                                           "default_mem_mhz": 1000, "components": )" +
                                           components + "}");
    try {
      ReadFieldSet(path);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(problem(R"([{"component": "A", "fields": ["DCGM_FI_PROF_NOPE"]}])")
                .find("components[0].fields[0] = \"DCGM_FI_PROF_NOPE\" is not a dcgm field"),
            std::string::npos);
  EXPECT_NE(problem(R"([{"component": "A", "fields": ["NVML_GPM_METRIC_SM_UTIL"]}])")
                .find("is not a dcgm field"),
            std::string::npos);
  EXPECT_NE(problem(R"([{"component": "A", "fields": ["PCITX"]}])")
                .find("components[0].peak_bytes_per_s = 0 must be > 0"),
            std::string::npos);
  EXPECT_NE(
      problem(R"([{"component": "A", "fields": [1002]}, {"component": "B", "fields": ["SMACT"]}])")
          .find("components[1].fields[0] = \"DCGM_FI_PROF_SM_ACTIVE\" already feeds component A"),
      std::string::npos);
  EXPECT_NE(problem(R"([{"component": "A", "fields": ["POWER"]}])").find("is not a dcgm field"),
            std::string::npos);
  EXPECT_NE(problem(R"([{"component": "A", "fields": ["SMACT"], "units": 3}])")
                .find("components[0].units: unknown field"),
            std::string::npos);
}

}  // namespace
}  // namespace wattcal
