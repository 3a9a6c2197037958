// The in-memory form of every measurement table wattcal reads: gpmTOOL training,
// real/validation and prediction files, and the tidy CSV.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <Eigen/Core>

namespace wattcal {

// One frequency domain of a GPU (TPDS Eq. 3: P_GPU = sum_k P(D_k)).
struct FrequencyDomain {
  // "core" or "mem".
  std::string name;
  // The default (reference) frequency of the domain, where its voltage is 1.
  double default_freq_mhz = 0.0;
  // Names of the components whose utilisation scales with this domain's V-F.
  std::vector<std::string> components;
};

// The GPU layout a corpus or a model describes: its domains and components.
struct Layout {
  // One (core) or two (core, mem) domains, in that order.
  std::vector<FrequencyDomain> domains;

  int num_domains() const { return static_cast<int>(domains.size()); }
  int num_components() const;
  // All component names, domain by domain (the column order of Corpus::util_frac).
  std::vector<std::string> ComponentNames() const;
  // Domain index of each component, same order as ComponentNames().
  std::vector<int> ComponentDomains() const;

  // Empty when `other` describes the same layout (same domains, default frequencies
  // and component names up to the SP/FP32, DP/FP64 aliases of gpmTOOL's files);
  // otherwise a sentence naming the first difference.
  std::string Mismatch(const Layout& other) const;
};

// Canonical spelling of a component name: gpmTOOL's files call the FP32 units "SP"
// in some files and "FP32" in others (likewise DP/FP64); both map to "SP"/"DP".
std::string CanonicalComponentName(const std::string& name);

// Window flags of a corpus row (the tidy CSV's `flags` column, semicolon-separated; written by
// wattcal-ingest --capture, SPEC.md "Real GPUs"): the board's power cap acted during the
// window, or the clock moved during it. Such rows are kept out of training by default.
inline constexpr const char* kCorpusFlagPowerCap = "power_cap";
inline constexpr const char* kCorpusFlagClockMoved = "clock_moved";
// The power log has a gap of several sampling periods inside the window or across its edges:
// its energy rests on interpolation (kept out of training like the throttled rows).
inline constexpr const char* kCorpusFlagSampleGap = "sample_gap";
// A window of wattcal-capture's toggle sweep whose data toggle another share of bits than the
// suite's other benchmarks: its power changes with data that no counter sees, so a counters model
// cannot fit it (kept out of training like the throttled rows).
inline constexpr const char* kCorpusFlagDataToggle = "data_toggle";
// The window's counter export lacked an optional component's metric that other exports have:
// its utilisation of that component was counted as 0, not measured (kept out of training like
// the throttled rows).
inline constexpr const char* kCorpusFlagMetricAbsent = "metric_absent";
// The window's utilisations come from a field log (wattcal-capture --fields gpm) that holds fewer
// samples inside it than CaptureOptions::min_field_samples: kept out of training like the
// throttled rows.
inline constexpr const char* kCorpusFlagFewFieldSamples = "few_field_samples";

// What a corpus file holds.
enum class CorpusKind {
  kTraining,  // power + frequencies + utilisations (gpmTOOL training, no names)
  kMeasured,  // name + power + frequencies + utilisations (gpmTOOL real/allF, tidy)
  kActivity,  // name + utilisations only (gpmTOOL prediction file, tidy without power)
};

struct Corpus {
  // File the rows came from (for error messages and manifests).
  std::string path;
  CorpusKind kind = CorpusKind::kTraining;
  Layout layout;
  // Per row: benchmark name. Training files carry no names: rows are grouped into
  // benchmarks by identical utilisation vectors ("micro_001", ... in order of appearance).
  std::vector<std::string> benchmark;
  // Per row: measured power in W (empty for kActivity).
  Eigen::VectorXd power_w;
  // Per row and domain: frequency in MHz (zero columns for kActivity without frequencies).
  Eigen::MatrixXd freq_mhz;
  // Per row and component: utilisation, a fraction (TPDS Eqs. 7-8).
  Eigen::MatrixXd util_frac;
  // Per row: the window's flags, semicolon-separated ("power_cap;clock_moved", "" for none);
  // empty (no entry at all) when the file has no `flags` column.
  std::vector<std::string> flags;
  // The board's power limit in W (the tidy preamble's power_limit_w=...); unset when the file
  // does not state one.
  std::optional<double> power_limit_w;
  // The components the GPU description marks optional (TENSOR INT, DMMA: a model trained on a
  // capture without their metric has no term for them); the tidy preamble's line
  // "# optional components: A; B". Empty when none or unknown.
  std::vector<std::string> optional_components;
  // The GPU the rows were measured on, its product name as the capture names it ("NVIDIA H100
  // 80GB HBM3"); the tidy preamble's line "# gpu: NAME". "" when unknown.
  std::string gpu;
  // Per row: the windows' length as they ran (no settle trim), s, and their measured energy over
  // that length, J (the tidy columns duration_s and energy_j of a per-workload table: what energy
  // validation scores against). Empty (no entry at all) when the file has no such column; NaN for
  // an empty cell.
  std::vector<double> duration_s;
  std::vector<double> energy_j;
  // Per row: 1-based line in `path` (for error messages).
  std::vector<int64_t> line;
  // Line of the component names (4 in gpmTOOL files, 1 in tidy CSVs).
  int64_t components_line = 4;
  // Line of the default frequencies (2 in gpmTOOL files; 0 in tidy CSVs, where they come
  // from --default-core-mhz/--default-mem-mhz or the data).
  int64_t defaults_line = 2;

  int rows() const { return static_cast<int>(line.size()); }
  bool has_power() const { return power_w.size() > 0; }
  bool has_freq() const { return freq_mhz.cols() > 0; }
  bool has_flags() const { return !flags.empty(); }
  bool has_energy() const { return !energy_j.empty(); }

  // Distinct frequencies of domain d, ascending.
  std::vector<double> FrequencyLevels(int d) const;
  // Rows whose frequencies equal the default pair of the layout.
  std::vector<int> RowsAtDefault() const;
  // Distinct benchmark names in order of first appearance.
  std::vector<std::string> Benchmarks() const;
  // A new corpus with the given rows (same layout, path and kind).
  Corpus Subset(const std::vector<int>& rows) const;
};

// Groups of identical rows (same benchmark name, frequencies, utilisations and power), one
// sentence per group naming the file and its lines: a duplicated row counts twice and narrows
// confidence intervals falsely. Empty when every row is distinct.
std::vector<std::string> FindDuplicateRows(const Corpus& corpus);

// The flags of row `row`, split at ';' (empty when the corpus has no flags column).
std::vector<std::string> RowFlags(const Corpus& corpus, int row);

// `corpus` in the components of `model_layout`: its optional components that the model has no
// term for are left out, and `*note` (when not null) says which, and which rows use them
// (utilisation above 0.001), their predictions lacking that power; "" when none. Any other
// difference is left for Layout::Mismatch to name.
Corpus WithoutOptionalComponentsNotIn(const Corpus& corpus, const Layout& model_layout,
                                      std::string* note);
// True when row `row` carries `flag` (e.g. kCorpusFlagPowerCap).
bool HasFlag(const Corpus& corpus, int row, const std::string& flag);
// True when row `row` was measured while the power cap acted or the clock moved.
bool IsThrottledRow(const Corpus& corpus, int row);

}  // namespace wattcal
