// What a comparison of two GPUs says, in sentences computed from its data alone (issue 24: no
// measured number written into a Makefile or the code): the averages and the direction agreement
// of the per-workload relative power (AccelWattch §7.1, Fig. 12), the benchmark groups whose
// measured change is largest, and, when both GPUs' models are given, the components whose
// bootstrap intervals of full-use watts do not overlap.
#pragma once

#include <string>
#include <vector>

#include "model/power_model.h"
#include "report/report_figures.h"

namespace wattcal {

// A benchmark's group: its first '_'-separated word, with "lane_sweep"/"sm_sweep"-style second
// words kept ("sm_sweep_int_add_001" -> "sm_sweep"), and trailing digits dropped ("mix003_f13"
// -> "mix"). "idle_sleep" -> "idle", "dram_ld" -> "dram".
std::string BenchmarkGroup(const std::string& name);

struct GroupChange {
  std::string group;
  int workloads = 0;
  double measured_mean_pct = 0.0;   // mean of 100 (P_B - P_A) / P_A, measured
  double estimated_mean_pct = 0.0;  // the same, estimated
  std::string largest;              // the member with the largest |measured change|
  double largest_measured_pct = 0.0;
};

// Groups by |measured mean change|, largest first.
std::vector<GroupChange> GroupChanges(const RelativePowerChart& chart);

// A component both models have, with both bootstrap intervals of its full-use watts (TPDS Eq. 9's
// term at U = 1 and the default pair) and whether they overlap.
struct ComponentDifference {
  std::string component;
  double a_w = 0.0, a_low_w = 0.0, a_high_w = 0.0;
  double b_w = 0.0, b_low_w = 0.0, b_high_w = 0.0;
};

// The components whose intervals do not overlap, in layout order of model `a`; components without
// an interval in either model are left out.
// `compared` (when not null) receives how many components had an interval in both.
std::vector<ComponentDifference> DisjointComponents(const PowerModel& a, const PowerModel& b,
                                                    int* compared = nullptr);

// The paragraphs: each a sentence or two, every number from `chart` (and from the models when both
// are given: `a` of chart.gpu_a, `b` of chart.gpu_b; null pointers leave the component sentence out).
std::vector<std::string> ComparisonFindings(const RelativePowerChart& chart, const PowerModel* a,
                                            const PowerModel* b);

}  // namespace wattcal
