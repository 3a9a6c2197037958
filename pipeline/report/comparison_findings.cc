#include "report/comparison_findings.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "model/component_trust.h"

namespace wattcal {

namespace {

std::string Signed(double pct) { return fmt::format("{:+.1f}%", pct); }

}  // namespace

std::string BenchmarkGroup(const std::string& name) {
  const size_t cut = name.find('_');
  std::string group = name.substr(0, cut);
  if (cut != std::string::npos && name.compare(cut + 1, 6, "sweep_") == 0) return group + "_sweep";
  // An index of three or more digits ("mix003") is not part of the group; "fp32" and "l2" keep theirs.
  size_t digits = 0;
  while (digits < group.size() &&
         std::isdigit(static_cast<unsigned char>(group[group.size() - 1 - digits])))
    ++digits;
  if (digits >= 3 && digits < group.size()) group.erase(group.size() - digits);
  return group;
}

std::vector<GroupChange> GroupChanges(const RelativePowerChart& chart) {
  std::map<std::string, GroupChange> by_group;
  std::vector<std::string> order;
  for (const RelativePowerBar& b : chart.bars) {
    const std::string g = BenchmarkGroup(b.workload);
    auto [it, added] = by_group.try_emplace(g);
    if (added) order.push_back(g);
    GroupChange& c = it->second;
    c.group = g;
    ++c.workloads;
    c.measured_mean_pct += b.measured_pct;
    c.estimated_mean_pct += b.estimated_pct;
    if (c.largest.empty() || std::abs(b.measured_pct) > std::abs(c.largest_measured_pct)) {
      c.largest = b.workload;
      c.largest_measured_pct = b.measured_pct;
    }
  }
  std::vector<GroupChange> out;
  for (const std::string& g : order) {
    GroupChange c = by_group[g];
    c.measured_mean_pct /= c.workloads;
    c.estimated_mean_pct /= c.workloads;
    out.push_back(c);
  }
  std::stable_sort(out.begin(), out.end(), [](const GroupChange& x, const GroupChange& y) {
    return std::abs(x.measured_mean_pct) > std::abs(y.measured_mean_pct);
  });
  return out;
}

std::vector<ComponentDifference> DisjointComponents(const PowerModel& a, const PowerModel& b,
                                                    int* compared) {
  if (compared != nullptr) *compared = 0;
  const std::vector<ComponentTrust> ta = ComponentTrustTable(a);
  const std::vector<ComponentTrust> tb = ComponentTrustTable(b);
  std::vector<ComponentDifference> out;
  for (const ComponentTrust& x : ta) {
    const auto y = std::find_if(tb.begin(), tb.end(), [&](const ComponentTrust& t) {
      return t.component == x.component && t.domain == x.domain;
    });
    if (y == tb.end() || !x.has_ci || !y->has_ci) continue;
    if (compared != nullptr) ++*compared;
    if (x.ci_high_w < y->ci_low_w || y->ci_high_w < x.ci_low_w) {
      out.push_back({x.component, x.full_use_w, x.ci_low_w, x.ci_high_w, y->full_use_w, y->ci_low_w,
                     y->ci_high_w});
    }
  }
  return out;
}

std::vector<std::string> ComparisonFindings(const RelativePowerChart& chart, const PowerModel* a,
                                            const PowerModel* b) {
  std::vector<std::string> out;
  const size_t n = chart.bars.size();
  if (n == 0) return out;
  double measured = 0.0, estimated = 0.0;
  size_t same = 0;
  for (const RelativePowerBar& bar : chart.bars) {
    measured += bar.measured_pct;
    estimated += bar.estimated_pct;
    same += SameDirection(bar) ? 1 : 0;
  }
  measured /= static_cast<double>(n);
  estimated /= static_cast<double>(n);
  out.push_back(
      fmt::format("Over the {} workloads both GPUs ran, {}'s power differs from {}'s by {} on "
                  "average as measured and by "
                  "{} as estimated (a difference of {:.1f} points); the estimate points the same "
                  "way as the measurement "
                  "for {} of them ({:.0f}%).",
                  n, chart.gpu_b, chart.gpu_a, Signed(measured), Signed(estimated),
                  std::abs(estimated - measured), same,
                  100.0 * static_cast<double>(same) / static_cast<double>(n)));
  const std::vector<GroupChange> groups = GroupChanges(chart);
  if (groups.size() > 1) {
    std::string list;
    const size_t shown = std::min<size_t>(3, groups.size());
    for (size_t i = 0; i < shown; ++i) {
      const GroupChange& g = groups[i];
      list += fmt::format(
          "{}{} ({} workload{}: {} measured, {} estimated{})",
          i == 0 ? "" : (i + 1 == shown ? " and " : ", "), g.group, g.workloads,
          g.workloads == 1 ? "" : "s", Signed(g.measured_mean_pct), Signed(g.estimated_mean_pct),
          g.workloads > 1 ? fmt::format("; {} {}", g.largest, Signed(g.largest_measured_pct)) : "");
    }
    const GroupChange& least = groups.back();
    out.push_back(
        fmt::format("By benchmark group (the name's first word), the largest measured changes are "
                    "in {}. The smallest is "
                    "{} ({} measured over {} workload{}).",
                    list, least.group, Signed(least.measured_mean_pct), least.workloads,
                    least.workloads == 1 ? "" : "s"));
  }
  if (a != nullptr && b != nullptr) {
    int compared = 0;
    const std::vector<ComponentDifference> d = DisjointComponents(*a, *b, &compared);
    if (compared == 0) {
      out.push_back(fmt::format(
          "The {} and {} models have no bootstrap intervals to compare (calibrate --bootstrap).",
          chart.gpu_a, chart.gpu_b));
    } else if (d.empty()) {
      out.push_back(fmt::format(
          "The two models' bootstrap 95% intervals of full-use watts overlap for every one of "
          "the {} components both estimate: no component's power differs beyond the "
          "fits' uncertainty.",
          compared));
    } else {
      std::string list;
      for (size_t i = 0; i < d.size(); ++i) {
        list +=
            fmt::format("{}{} ({:.0f} W [{:.0f}, {:.0f}] on {}, {:.0f} W [{:.0f}, {:.0f}] on {})",
                        i == 0 ? "" : (i + 1 == d.size() ? " and " : ", "), d[i].component,
                        d[i].a_w, d[i].a_low_w, d[i].a_high_w, chart.gpu_a, d[i].b_w, d[i].b_low_w,
                        d[i].b_high_w, chart.gpu_b);
      }
      out.push_back(fmt::format(
          "The two models' bootstrap 95% intervals of full-use watts do not overlap for {} of "
          "the {} components both estimate: {}.",
          d.size(), compared, list));
    }
  }
  return out;
}

}  // namespace wattcal
