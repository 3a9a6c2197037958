#include "perf/perf_suite.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/json_file.h"
#include "perf/perf_csv.h"
#include "util/errors.h"
#include "util/option_rule.h"

namespace wattcal {

bool PerfKernelSpec::Check(std::string* error) const {
  auto fail = [&](const std::string& m) {
    *error = "kernel '" + name + "': " + m;
    return false;
  };
  if (name.empty()) return RejectOption(error, "a kernel has an empty name");
  if (warps < 1 || warps > 1024)
    return fail(fmt::format("warps = {} must lie in [1, 1024]", warps));
  if (iterations < 1) return fail(fmt::format("iterations = {} must be >= 1", iterations));
  if (loads < 0) return fail(fmt::format("loads = {} must be >= 0", loads));
  if (independent_alu < 0)
    return fail(fmt::format("independent_alu = {} must be >= 0", independent_alu));
  if (dependent_alu < 0) return fail(fmt::format("dependent_alu = {} must be >= 0", dependent_alu));
  if (alu_ilp < 1) return fail(fmt::format("alu_ilp = {} must be >= 1", alu_ilp));
  if (stores < 0) return fail(fmt::format("stores = {} must be >= 0", stores));
  if (loads + independent_alu + dependent_alu + stores == 0) {
    return fail("the loop body is empty (loads + independent_alu + dependent_alu + stores = 0)");
  }
  if (pointer_chase && loads == 0) return fail("pointer_chase needs loads >= 1");
  if (alu_component.empty()) return fail("alu_component is empty");
  return true;
}

bool PerfSuiteSpec::Check(std::string* error) const {
  auto fail = [error](const std::string& m) {
    *error = m;
    return false;
  };
  if (!(std::isfinite(base_mhz) && base_mhz > 0.0)) {
    return fail(fmt::format("base_mhz = {} must be > 0", base_mhz));
  }
  if (targets_mhz.empty()) return fail("targets_mhz is empty");
  for (size_t i = 0; i < targets_mhz.size(); ++i) {
    if (!(std::isfinite(targets_mhz[i]) && targets_mhz[i] > 0.0)) {
      return fail(fmt::format("targets_mhz[{}] = {} must be > 0", i, targets_mhz[i]));
    }
    if (i > 0 && !(targets_mhz[i] > targets_mhz[i - 1])) {
      return fail(
          fmt::format("targets_mhz must be strictly ascending: targets_mhz[{}] = {} "
                      "follows {}",
                      i, targets_mhz[i], targets_mhz[i - 1]));
    }
  }
  std::string sm_error;
  if (!sm.Check(&sm_error)) return fail("sm." + sm_error);
  if (kernels.empty()) return fail("kernels is empty");
  std::set<std::string> names;
  for (const PerfKernelSpec& k : kernels) {
    if (!k.Check(error)) return false;
    if (!names.insert(k.name).second) return fail("kernel '" + k.name + "' appears twice");
  }
  return true;
}

namespace {

void RejectUnknownKeys(const nlohmann::json& object, const std::set<std::string>& known,
                       const std::string& path, const std::string& where) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (known.count(it.key()) == 0) {
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      throw InputError(path, 0, where + it.key(),
                       "unknown key '" + it.key() + "'; expected one of " + list);
    }
  }
}

}  // namespace

PerfSuiteSpec ReadPerfSuiteSpec(const std::string& path) {
  const nlohmann::json j = ReadJsonFile(path, "spec file");
  if (!j.is_object()) throw InputError(path, 0, "", "expected a JSON object");
  PerfSuiteSpec spec;
  std::string field;  // the key being read, for error messages
  // An optional key of `object` (at `prefix` in the file) into *target, which keeps its
  // default when the key is absent.
  auto optional = [&field](const nlohmann::json& object, const std::string& prefix, const char* key,
                           auto* target) {
    field = prefix + key;
    *target = object.value(key, *target);
  };
  try {
    RejectUnknownKeys(j, {"name", "about", "seed", "base_mhz", "targets_mhz", "sm", "kernels"},
                      path, "");
    optional(j, "", "name", &spec.name);
    optional(j, "", "seed", &spec.seed);
    optional(j, "", "base_mhz", &spec.base_mhz);
    optional(j, "", "targets_mhz", &spec.targets_mhz);
    if (j.contains("sm")) {
      const nlohmann::json& sm = j.at("sm");
      RejectUnknownKeys(
          sm,
          {"issue_width", "alu_latency_cycles", "mem_latency_ns", "mem_latency_jitter_ns",
           "load_service_ns", "store_service_ns", "mshr_entries", "store_queue_entries"},
          path, "sm.");
      SmConfig& c = spec.sm;
      optional(sm, "sm.", "issue_width", &c.issue_width);
      optional(sm, "sm.", "alu_latency_cycles", &c.alu_latency_cycles);
      optional(sm, "sm.", "mem_latency_ns", &c.mem_latency_ns);
      optional(sm, "sm.", "mem_latency_jitter_ns", &c.mem_latency_jitter_ns);
      optional(sm, "sm.", "load_service_ns", &c.load_service_ns);
      optional(sm, "sm.", "store_service_ns", &c.store_service_ns);
      optional(sm, "sm.", "mshr_entries", &c.mshr_entries);
      optional(sm, "sm.", "store_queue_entries", &c.store_queue_entries);
    }
    field = "kernels";
    const nlohmann::json& kernels = j.at("kernels");
    if (!kernels.is_array()) throw InputError(path, 0, "kernels", "expected an array of kernels");
    for (size_t i = 0; i < kernels.size(); ++i) {
      const nlohmann::json& k = kernels[i];
      const std::string where = fmt::format("kernels[{}].", i);
      if (!k.is_object())
        throw InputError(path, 0, fmt::format("kernels[{}]", i), "expected an object");
      RejectUnknownKeys(k,
                        {"name", "warps", "iterations", "loads", "pointer_chase", "independent_alu",
                         "dependent_alu", "alu_ilp", "stores", "alu_component"},
                        path, where);
      PerfKernelSpec s;
      field = where + "name";
      s.name = k.at("name").get<std::string>();
      optional(k, where, "warps", &s.warps);
      optional(k, where, "iterations", &s.iterations);
      optional(k, where, "loads", &s.loads);
      optional(k, where, "pointer_chase", &s.pointer_chase);
      optional(k, where, "independent_alu", &s.independent_alu);
      optional(k, where, "dependent_alu", &s.dependent_alu);
      optional(k, where, "alu_ilp", &s.alu_ilp);
      optional(k, where, "stores", &s.stores);
      optional(k, where, "alu_component", &s.alu_component);
      spec.kernels.push_back(std::move(s));
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path, 0, field, std::string("bad value: ") + e.what());
  }
  std::string error;
  if (!spec.Check(&error)) throw InputError(path, 0, "", error);
  return spec;
}

SmKernel BuildSmKernel(const PerfKernelSpec& s, unsigned suite_seed) {
  SmKernel k;
  k.name = s.name;
  k.warps = s.warps;
  k.iterations = s.iterations;
  // Seed per kernel: the suite seed hashed with the name (FNV-1a), stable across platforms.
  uint64_t h = 1469598103934665603ull ^ suite_seed;
  for (unsigned char c : s.name) h = (h ^ c) * 1099511628211ull;
  k.seed = h;

  std::vector<int> load_ids;
  for (int i = 0; i < s.loads; ++i) {
    SmOp op;
    op.kind = SmOpKind::kLoad;
    if (s.pointer_chase) {
      if (i > 0) {
        op.deps.push_back(load_ids.back());
      } else {
        op.carried_deps.push_back(s.loads - 1);
      }
    }
    load_ids.push_back(static_cast<int>(k.body.size()));
    k.body.push_back(op);
  }
  std::vector<int> alu_ids;
  auto add_alu = [&](bool needs_loads) {
    SmOp op;
    op.kind = SmOpKind::kAlu;
    if (static_cast<int>(alu_ids.size()) >= s.alu_ilp) {
      op.deps.push_back(alu_ids[alu_ids.size() - static_cast<size_t>(s.alu_ilp)]);
    }
    if (needs_loads) op.deps.insert(op.deps.end(), load_ids.begin(), load_ids.end());
    alu_ids.push_back(static_cast<int>(k.body.size()));
    k.body.push_back(op);
  };
  for (int i = 0; i < s.independent_alu; ++i) add_alu(false);
  // The dependent chain starts afresh: its first instruction needs the loads, not an ALU.
  alu_ids.clear();
  for (int i = 0; i < s.dependent_alu; ++i) add_alu(i == 0);
  for (int i = 0; i < s.stores; ++i) {
    SmOp op;
    op.kind = SmOpKind::kStore;
    if (!alu_ids.empty())
      op.deps.push_back(alu_ids.back());
    else if (!load_ids.empty())
      op.deps.push_back(load_ids.back());
    k.body.push_back(op);
  }
  return k;
}

PerfCampaignReport RunPerfCampaign(const PerfSuiteSpec& spec, const ClassifierOptions& classifier,
                                   int threads) {
  std::string error;
  if (!spec.Check(&error)) throw OptionError("invalid run-time suite: " + error);
  if (!classifier.Check(&error)) throw OptionError("invalid classifier options: " + error);
  if (threads < 1) throw OptionError(fmt::format("threads = {} must be >= 1", threads));
  std::vector<double> freqs = spec.targets_mhz;
  if (std::find(freqs.begin(), freqs.end(), spec.base_mhz) == freqs.end()) {
    freqs.push_back(spec.base_mhz);
    std::sort(freqs.begin(), freqs.end());
  }
  const size_t n_kernels = spec.kernels.size();
  std::vector<SmKernel> programs;
  for (const PerfKernelSpec& k : spec.kernels) programs.push_back(BuildSmKernel(k, spec.seed));

  // Job j < n_kernels: the base run with its timeline; then kernel x frequency.
  const size_t n_jobs = n_kernels + n_kernels * freqs.size();
  std::vector<SmRun> runs(n_jobs);
  // An exception must not leave an OpenMP region: each job keeps its own, the first rethrown.
  std::vector<std::exception_ptr> failures(n_jobs);
#pragma omp parallel for schedule(dynamic) num_threads(threads)
  for (long j = 0; j < static_cast<long>(n_jobs); ++j) {
    const size_t job = static_cast<size_t>(j);
    try {
      if (job < n_kernels) {
        runs[job] = SimulateSm(spec.sm, programs[job], spec.base_mhz, true);
      } else {
        const size_t kernel = (job - n_kernels) / freqs.size();
        const size_t f = (job - n_kernels) % freqs.size();
        runs[job] = SimulateSm(spec.sm, programs[kernel], freqs[f], false);
      }
    } catch (...) {
      failures[job] = std::current_exception();
    }
  }
  for (const std::exception_ptr& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }

  PerfCampaignReport campaign;
  for (size_t i = 0; i < n_kernels; ++i) {
    SmRun base = std::move(runs[i]);
    campaign.timelines.push_back(std::move(base.timeline));
    base.timeline = Timeline();
    campaign.breakdowns.push_back(ClassifyTimeline(campaign.timelines.back(), classifier));
    campaign.counters.push_back(campaign.breakdowns.back().counters);
    campaign.base_runs.push_back(std::move(base));
    for (size_t f = 0; f < freqs.size(); ++f) {
      const SmRun& r = runs[n_kernels + i * freqs.size() + f];
      campaign.actual.push_back({spec.kernels[i].name, freqs[f], r.time_s, 0});
    }
  }
  return campaign;
}

std::string CampaignActivityToTidyCsv(const PerfSuiteSpec& spec, const PerfCampaignReport& campaign,
                                      const Layout& layout, const std::string& spec_path) {
  const std::vector<std::string> names = layout.ComponentNames();
  const std::vector<int> domains = layout.ComponentDomains();
  const double f_mem_mhz = layout.num_domains() > 1 ? layout.domains[1].default_freq_mhz : 0.0;
  std::string out =
      "# wattcal-tidy default_f_core_mhz=" + PerfCsvNumber(layout.domains[0].default_freq_mhz);
  if (layout.num_domains() > 1) out += " default_f_mem_mhz=" + PerfCsvNumber(f_mem_mhz);
  out += "\nbenchmark,f_core_mhz";
  if (layout.num_domains() > 1) out += ",f_mem_mhz";
  for (size_t c = 0; c < names.size(); ++c) {
    out +=
        "," + PerfCsvField(layout.domains[static_cast<size_t>(domains[c])].name + ":" + names[c]);
  }
  out += "\n";
  for (size_t i = 0; i < spec.kernels.size(); ++i) {
    const PerfKernelSpec& k = spec.kernels[i];
    const SmRun& run = campaign.base_runs[i];
    const double cycles = static_cast<double>(run.total_cycles);
    std::map<std::string, double> util;  // by canonical component name
    util[CanonicalComponentName(k.alu_component)] =
        static_cast<double>(run.alu_ops) / (spec.sm.issue_width * cycles);
    util[CanonicalComponentName("L2")] = static_cast<double>(run.loads + run.stores) / cycles;
    util[CanonicalComponentName("DRAM")] = run.mem_busy_s / run.time_s;
    bool found = false;
    for (const std::string& n : names) {
      if (CanonicalComponentName(n) == CanonicalComponentName(k.alu_component)) found = true;
    }
    if (!found) {
      std::string list;
      for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
      throw InputError(spec_path, 0, fmt::format("kernels[{}].alu_component", i),
                       fmt::format("kernel '{}': the power model's GPU has no component '{}' "
                                   "(it has {})",
                                   k.name, k.alu_component, list));
    }
    out += PerfCsvField(k.name) + "," + PerfCsvNumber(spec.base_mhz);
    if (layout.num_domains() > 1) out += "," + PerfCsvNumber(f_mem_mhz);
    for (const std::string& n : names) {
      const auto it = util.find(CanonicalComponentName(n));
      out += "," + PerfCsvNumber(it == util.end() ? 0.0 : it->second);
    }
    out += "\n";
  }
  return out;
}

}  // namespace wattcal
