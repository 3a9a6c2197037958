#include "io/corpus.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "util/row_order.h"

namespace wattcal {

int Layout::num_components() const {
  int n = 0;
  for (const FrequencyDomain& d : domains) n += static_cast<int>(d.components.size());
  return n;
}

std::vector<std::string> Layout::ComponentNames() const {
  std::vector<std::string> names;
  for (const FrequencyDomain& d : domains)
    names.insert(names.end(), d.components.begin(), d.components.end());
  return names;
}

std::vector<int> Layout::ComponentDomains() const {
  std::vector<int> out;
  for (int d = 0; d < num_domains(); ++d) out.insert(out.end(), domains[d].components.size(), d);
  return out;
}

std::string CanonicalComponentName(const std::string& name) {
  std::string s = name;
  if (s.rfind("FP32", 0) == 0) s = "SP" + s.substr(4);
  if (s.rfind("FP64", 0) == 0) s = "DP" + s.substr(4);
  return s;
}

std::string Layout::Mismatch(const Layout& other) const {
  if (num_domains() != other.num_domains()) {
    return fmt::format("{} frequency domain(s) here, {} there", num_domains(), other.num_domains());
  }
  for (int d = 0; d < num_domains(); ++d) {
    const FrequencyDomain& a = domains[d];
    const FrequencyDomain& b = other.domains[d];
    if (a.default_freq_mhz != b.default_freq_mhz) {
      return fmt::format("default {} frequency {} MHz here, {} MHz there", a.name,
                         a.default_freq_mhz, b.default_freq_mhz);
    }
    if (a.components.size() != b.components.size()) {
      return fmt::format("{} component(s) in the {} domain here, {} there", a.components.size(),
                         a.name, b.components.size());
    }
    for (size_t i = 0; i < a.components.size(); ++i) {
      if (CanonicalComponentName(a.components[i]) != CanonicalComponentName(b.components[i])) {
        return fmt::format("component {} of the {} domain is '{}' here, '{}' there", i + 1, a.name,
                           a.components[i], b.components[i]);
      }
    }
  }
  return "";
}

std::vector<double> Corpus::FrequencyLevels(int d) const {
  std::set<double> levels;
  for (int r = 0; r < rows(); ++r) levels.insert(freq_mhz(r, d));
  return {levels.begin(), levels.end()};
}

std::vector<int> Corpus::RowsAtDefault() const {
  std::vector<int> out;
  for (int r = 0; r < rows(); ++r) {
    bool at_default = true;
    for (int d = 0; d < layout.num_domains(); ++d) {
      if (freq_mhz(r, d) != layout.domains[d].default_freq_mhz) at_default = false;
    }
    if (at_default) out.push_back(r);
  }
  return out;
}

std::vector<std::string> Corpus::Benchmarks() const {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const std::string& b : benchmark) {
    if (seen.insert(b).second) out.push_back(b);
  }
  return out;
}

Corpus Corpus::Subset(const std::vector<int>& rows_to_keep) const {
  Corpus out;
  out.path = path;
  out.kind = kind;
  out.layout = layout;
  out.components_line = components_line;
  out.defaults_line = defaults_line;
  out.power_limit_w = power_limit_w;
  out.optional_components = optional_components;
  const int n = static_cast<int>(rows_to_keep.size());
  if (has_power()) out.power_w.resize(n);
  out.freq_mhz.resize(n, freq_mhz.cols());
  out.util_frac.resize(n, util_frac.cols());
  for (int i = 0; i < n; ++i) {
    const int r = rows_to_keep[i];
    out.benchmark.push_back(benchmark[r]);
    out.line.push_back(line[r]);
    if (has_flags()) out.flags.push_back(flags[r]);
    if (has_energy()) out.duration_s.push_back(duration_s[r]), out.energy_j.push_back(energy_j[r]);
    if (has_power()) out.power_w(i) = power_w(r);
    if (freq_mhz.cols() > 0) out.freq_mhz.row(i) = freq_mhz.row(r);
    out.util_frac.row(i) = util_frac.row(r);
  }
  return out;
}

Corpus WithoutOptionalComponentsNotIn(const Corpus& corpus, const Layout& model_layout,
                                      std::string* note) {
  if (note != nullptr) note->clear();
  const std::vector<std::string> in_model = model_layout.ComponentNames();
  const std::vector<std::string> names = corpus.layout.ComponentNames();
  auto has = [](const std::vector<std::string>& v, const std::string& n) {
    return std::find(v.begin(), v.end(), n) != v.end();
  };
  std::vector<int> keep;
  std::vector<std::string> dropped;
  for (size_t j = 0; j < names.size(); ++j) {
    if (has(corpus.optional_components, names[j]) && !has(in_model, names[j])) {
      dropped.push_back(names[j]);
    } else {
      keep.push_back(static_cast<int>(j));
    }
  }
  if (dropped.empty()) return corpus;
  Corpus out = corpus;
  for (FrequencyDomain& d : out.layout.domains) {
    std::vector<std::string> kept;
    for (const std::string& c : d.components) {
      if (!has(dropped, c)) kept.push_back(c);
    }
    d.components = kept;
  }
  out.util_frac.resize(corpus.rows(), static_cast<Eigen::Index>(keep.size()));
  for (size_t k = 0; k < keep.size(); ++k)
    out.util_frac.col(static_cast<Eigen::Index>(k)) = corpus.util_frac.col(keep[k]);
  if (note != nullptr) {
    std::vector<std::string> users;
    for (int r = 0; r < corpus.rows(); ++r) {
      for (size_t j = 0; j < names.size(); ++j) {
        if (has(dropped, names[j]) && corpus.util_frac(r, static_cast<Eigen::Index>(j)) > 1e-3) {
          users.push_back(fmt::format("{} ({} {:.3f})", corpus.benchmark[r], names[j],
                                      corpus.util_frac(r, static_cast<Eigen::Index>(j))));
        }
      }
    }
    *note = fmt::format(
        "the model has no {} term (trained without the metric): left out of {}{}",
        fmt::join(dropped, ", "), corpus.path,
        users.empty() ? std::string("; no row uses it")
                      : fmt::format("; {} row(s) use it, their predictions lack its power: {}",
                                    users.size(), fmt::join(users, ", ")));
  }
  return out;
}

std::vector<std::string> RowFlags(const Corpus& corpus, int row) {
  std::vector<std::string> out;
  if (!corpus.has_flags()) return out;
  const std::string& s = corpus.flags[row];
  size_t begin = 0;
  while (begin <= s.size()) {
    const size_t end = std::min(s.find(';', begin), s.size());
    if (end > begin) out.push_back(s.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

bool HasFlag(const Corpus& corpus, int row, const std::string& flag) {
  const std::vector<std::string> f = RowFlags(corpus, row);
  return std::find(f.begin(), f.end(), flag) != f.end();
}

bool IsThrottledRow(const Corpus& corpus, int row) {
  return HasFlag(corpus, row, kCorpusFlagPowerCap) || HasFlag(corpus, row, kCorpusFlagClockMoved);
}

std::vector<std::string> FindDuplicateRows(const Corpus& corpus) {
  auto name_of = [&corpus](int r) {
    return r < static_cast<int>(corpus.benchmark.size()) ? corpus.benchmark[r] : std::string();
  };
  // Each row keyed by (its name's index, power, clocks, utilisations); equal keys are groups.
  std::map<std::string, int> name_index;
  const int nf = static_cast<int>(corpus.freq_mhz.cols());
  const int nu = static_cast<int>(corpus.util_frac.cols());
  const int width = 1 + (corpus.has_power() ? 1 : 0) + nf + nu;
  std::vector<double> keys(static_cast<size_t>(corpus.rows()) * width);
  for (int r = 0; r < corpus.rows(); ++r) {
    const int index =
        name_index.emplace(name_of(r), static_cast<int>(name_index.size())).first->second;
    double* key = keys.data() + static_cast<size_t>(r) * width;
    *key++ = static_cast<double>(index);
    if (corpus.has_power()) *key++ = corpus.power_w(r);
    for (int d = 0; d < nf; ++d) *key++ = corpus.freq_mhz(r, d);
    for (int i = 0; i < nu; ++i) *key++ = corpus.util_frac(r, i);
  }
  const std::vector<int> order = LexicographicRowOrder(keys, width);
  std::vector<std::vector<int>> groups;  // rows ascending within a group
  for (size_t k = 0; k < order.size(); ++k) {
    if (k == 0 || !RowEquivalent(keys, width, order[k - 1], order[k])) groups.emplace_back();
    groups.back().push_back(order[k]);
  }
  std::vector<std::pair<int, std::string>> messages;  // (first row, message), in file order
  for (const std::vector<int>& rows : groups) {
    if (rows.size() < 2) continue;
    std::string lines;
    for (size_t j = 0; j < rows.size(); ++j) {
      if (j > 0) lines += j + 1 == rows.size() ? " and " : ", ";
      lines += std::to_string(corpus.line[rows[j]]);
    }
    messages.emplace_back(
        rows[0], corpus.path + ": lines " + lines + " are identical rows (benchmark '" +
                     name_of(rows[0]) +
                     "', same clocks, utilisations and power): a duplicated row counts twice and "
                     "narrows the confidence interval falsely");
  }
  std::sort(messages.begin(), messages.end());
  std::vector<std::string> out;
  for (auto& m : messages) out.push_back(std::move(m.second));
  return out;
}

}  // namespace wattcal
